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


def note(message: str) -> None:
    sys.stderr.write(f"uwf: {message}\n")


def _one_line(message: str) -> str:
    return " ".join(message.split("\n")).strip()
