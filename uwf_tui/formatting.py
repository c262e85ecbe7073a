"""Small display helpers shared by the views."""

from __future__ import annotations

import json
import os
import time

STATUS_ICONS = {
    "running": "▶", "paused": "‖", "queued": "⋯", "asking": "?", "mapping": "⑂", "waiting": "·", "failed": "✗", "cancelled": "■", "done": "✓", "killed": "☠", "max-steps": "⧗", "budget": "⧗", "damaged": "!",
    "picked": "✓", "not-picked": "–",  # a candidate's fork (thread step --agents): its step taken, or not
}
STATUS_STYLES = {
    "running": "bold green", "paused": "bold yellow", "queued": "bold blue", "asking": "bold yellow", "mapping": "bold blue", "waiting": "white", "failed": "bold red", "cancelled": "yellow", "done": "cyan", "killed": "magenta",
    "max-steps": "yellow", "budget": "yellow", "damaged": "bold white on red", "picked": "cyan", "not-picked": "dim",
}


def attempt_mark(status: str) -> tuple[str, str]:
    """How a timeline shows an attempt that did not move the head: a stopped one (runs.jsonl's
    `killed`: cancelled, a form declined) or one its budget refused is not a failure."""
    if status == "killed":
        return ("■", "yellow")
    if status == "budget":
        return STATUS_ICONS["budget"], STATUS_STYLES["budget"]
    if status == "waiting":  # a map step whose children workers step: not a failure
        return STATUS_ICONS["mapping"], STATUS_STYLES["mapping"]
    if status == "asking":  # a worker found the role a person's and left it for them (the Inbox): not a failure
        return STATUS_ICONS["asking"], STATUS_STYLES["asking"]
    return ("✗", "bold red")


def attempt_word(status: str) -> str:
    """An attempt's status as a person reads it: runs.jsonl's `killed` is any stopped attempt (x,
    a declined form, K), so it reads `stopped` and its error says which."""
    return "stopped" if status == "killed" else status


def age(ms: int | None, now: float | None = None) -> str:
    """How long ago: 45s ago, 3m ago, 2h ago."""
    return f"{waited(ms, now)} ago" if ms else ""


def waited(ms: int | None, now: float | None = None) -> str:
    """How long something has waited, in its largest unit: 45s, 3m, 2h, 4d."""
    if not ms:
        return ""
    seconds = max(0, (now if now is not None else time.time()) - ms / 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def clock(ms: int | None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000)) if ms else ""


def took(start: int | None, end: int | None) -> str:
    if not start or not end:
        return ""
    return duration(end - start)


def duration(ms: int) -> str:
    seconds = max(0, ms) / 1000
    return f"{seconds:.1f}s" if seconds < 60 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def literal(value: object) -> object:
    """Text a person, an agent, a file or a model wrote, for the screen as it is: a str becomes a
    Rich Text, which Textual never reads as markup (`[bold red]X[/]`, `[redacted:KEY]` stay as
    typed); anything already renderable is kept. Every untrusted string reaches the screen here."""
    from rich.text import Text

    return Text(value) if isinstance(value, str) else value


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


def root_title(shown: str) -> str:
    """A root as the title bar shows it: under the home directory as `~/...` (shorter, and the
    same on every machine); a URL as given (its password already hidden)."""
    home = os.path.expanduser("~")
    if home not in ("", "/") and shown.startswith(home + os.sep):
        return "~" + shown[len(home):]
    return shown


def short(hash_or_id: str, length: int = 8) -> str:
    return hash_or_id[:length]


TAG = 6


def tag(thread: str) -> str:
    """A thread told apart from the others in a row: the end of its id (a ULID begins with the
    time it was made, the same for threads made at once, as a side-by-side step's candidates;
    its end is random). The `/` filter finds a thread by it."""
    return thread[-TAG:]


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


# -- tokens and cost (the ledger's records: uwf_core.api StepCost, Spend, BudgetStatus) -----------


def tokens_short(tokens: int) -> str:
    """A token count in at most five characters: 950, 1.8k, 12k, 1.2M."""
    if tokens < 1000:
        return str(tokens)
    if tokens < 10_000:
        return f"{tokens / 1000:.1f}k"
    if tokens < 1_000_000:
        return f"{tokens // 1000}k"
    return f"{tokens / 1_000_000:.1f}M"


def money(value: float | None) -> str:
    """A cost as a plain number (prices are in whatever currency config.yaml writes them); "?"
    when it is unknown (a model with no price, a step that recorded no usage), never a guess."""
    if value is None:
        return "?"
    return f"{value:.4f}" if value < 100 else f"{value:,.2f}"


def cost_cell(cost) -> tuple[str, str]:
    """A step's tokens and cost in one short cell, with its style: `1.8k 0.0123`, `?` when its
    agent recorded no usage, `reused` when it reused an earlier output (and spent nothing)."""
    if cost.reused_from:
        return "0 reused", "dim green"
    if not cost.recorded:
        return "?", "dim"
    return f"{tokens_short(cost.spend.tokens)} {money(cost.spend.cost)}", ""


def spend_text(spend) -> str:
    """What some steps spent, in words: `9,876 tokens · cost 0.0456`; unknown parts say so."""
    if spend.unrecorded and not spend.tokens:
        return f"tokens ? ({spend.unrecorded} step{'s' if spend.unrecorded != 1 else ''} recorded none)"
    text = f"{spend.tokens:,}{'+?' if spend.unrecorded else ''} tokens · cost {money(spend.cost)}"
    if spend.unpriced_tokens:
        text += f" (no price for {', '.join(spend.unpriced_models)})"
    return text


def budget_text(budget) -> str:
    """A thread's budget against what it used since its current start: `budget 9,876/60,000 tokens`."""
    parts = []
    if budget.max_tokens is not None:
        parts.append(f"{budget.used.tokens:,}/{budget.max_tokens:,} tokens")
    if budget.max_cost is not None:
        parts.append(f"{money(budget.used.priced_cost)}/{budget.max_cost:g} cost")
    return "budget " + ", ".join(parts)
