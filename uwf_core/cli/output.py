"""The only place the CLI writes: data to stdout, one-line messages to stderr."""

from __future__ import annotations

import json
import sys

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


def emit_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def emit_text(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def error(message: str) -> int:
    sys.stderr.write(f"uwf: error: {_one_line(message)}\n")
    return EXIT_ERROR


def warn(message: str) -> None:
    sys.stderr.write(f"uwf: warning: {_one_line(message)}\n")


def stream(line: str, prefix: str = "") -> None:
    """A line an agent wrote to its stderr, passed on as it comes."""
    sys.stderr.write(f"{prefix}{shown(line)}\n")
    sys.stderr.flush()


def shown(line: str) -> str:
    """An agent's line with its control characters escaped: an untrusted program does not get to
    move the cursor or recolour the terminal."""
    if line.isprintable():
        return line
    return "".join(char if char.isprintable() or char == "\t" else char.encode("unicode_escape").decode("ascii") for char in line)


def note(message: str) -> None:
    sys.stderr.write(f"uwf: {message}\n")


MAX_MESSAGE_CHARS = 8000  # an agent's stderr tail can be megabytes of anything


def _one_line(message: str) -> str:
    """One line that shows what it says: newlines become spaces, and every other control
    character (an agent's `\r` or ESC could erase or recolour the line on a terminal) is
    written as its escape."""
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS // 2] + " … " + message[-MAX_MESSAGE_CHARS // 2 :]
    text = " ".join(message.split("\n")).strip()
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else char.encode("unicode_escape").decode("ascii") for char in text)


def age_text(ms: int) -> str:
    """A duration in milliseconds as people read it in a table: 42s, 5m, 3h, 2d."""
    seconds = max(0, ms // 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
