"""Small display helpers shared by the views."""

from __future__ import annotations

import json
import time

STATUS_ICONS = {
    "running": "▶", "queued": "⋯", "waiting": "·", "failed": "✗", "cancelled": "■", "done": "✓", "killed": "☠", "max-steps": "⧗", "damaged": "!",
}
STATUS_STYLES = {
    "running": "bold green", "queued": "bold blue", "waiting": "white", "failed": "bold red", "cancelled": "yellow", "done": "cyan", "killed": "magenta",
    "max-steps": "yellow", "damaged": "bold white on red",
}


def attempt_mark(status: str) -> tuple[str, str]:
    """How a timeline shows an attempt that did not move the head: a stopped one (runs.jsonl's
    `killed`: cancelled, a form declined) is not a failure."""
    return ("■", "yellow") if status == "killed" else ("✗", "bold red")


def age(ms: int | None, now: float | None = None) -> str:
    if not ms:
        return ""
    seconds = max(0, (now if now is not None else time.time()) - ms / 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds)}s ago"


def clock(ms: int | None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000)) if ms else ""


def took(start: int | None, end: int | None) -> str:
    if not start or not end:
        return ""
    return duration(end - start)


def duration(ms: int) -> str:
    seconds = max(0, ms) / 1000
    return f"{seconds:.1f}s" if seconds < 60 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def summary(output: object, limit: int = 80) -> str:
    """One line for a step's structured output: its first textual fields."""
    if isinstance(output, dict):
        parts = []
        for key, value in output.items():
            if isinstance(value, (str, int, float, bool)):
                text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
                parts.append(f"{key}: {' '.join(text.split())}")
            elif isinstance(value, list):
                parts.append(f"{key}: [{len(value)}]")
        text = " · ".join(parts)
    else:
        text = json.dumps(output, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short(hash_or_id: str, length: int = 8) -> str:
    return hash_or_id[:length]


def when(ms: int | None) -> str:
    """A full local date and time (the timeline's clock column drops the date)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) if ms else "—"


def elapsed(seconds: float) -> str:
    seconds = max(0.0, seconds)
    return f"{int(seconds)}s" if seconds < 60 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def spinner(tick: int) -> str:
    return SPINNER[tick % len(SPINNER)]


TOAST_CHARS = 56  # one line of a toast at 80 columns
CUT = "… (see log)"


def brief(message: str, limit: int = TOAST_CHARS) -> str:
    """A message cut to one short line for a toast, at a word where it can (the log keeps it whole)."""
    line = " ".join(message.split())
    if len(line) <= limit:
        return line
    room = limit - len(CUT)
    cut = line.rfind(" ", 0, room + 1)
    return line[: cut if cut > room // 2 else room].rstrip(" ,;:") + CUT
