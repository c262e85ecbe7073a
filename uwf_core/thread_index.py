"""threads.yaml (active thread → head) and history.jsonl (archived threads)."""

from __future__ import annotations

import json

from .errors import StateFileError
from .ids import is_hash, is_ulid
from .simple_yaml import YamlSyntaxError, dumps, loads
from .storage import Root, atomic_write, read_text

HEADER = "uwf active threads: thread id -> head node (a StartNode or the newest StepNode)"


def load_threads(root: Root) -> dict[str, str]:
    text = read_text(root.threads_file)
    if text is None:
        return {}
    try:
        raw = loads(text)
    except YamlSyntaxError as exc:
        raise _corrupt(root, str(exc)) from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _corrupt(root, "expected a mapping of thread id to head hash")
    for thread, head in raw.items():
        if not is_ulid(thread) or not is_hash(head):
            raise _corrupt(root, f"entry {thread!r}: {head!r} is not a thread id and a hash")
    return dict(raw)


def save_threads(root: Root, threads: dict[str, str]) -> None:
    atomic_write(root.threads_file, dumps(threads, HEADER).encode("utf-8"))


def _corrupt(root: Root, problem: str) -> StateFileError:
    return StateFileError(f"{root.threads_file} cannot be read: {problem} (fix or restore it; nothing was changed)")


def read_history(root: Root) -> list[dict]:
    """Archived thread records, oldest first. A torn last line (a crash mid-append) is skipped."""
    text = read_text(root.history_file)
    if not text:
        return []
    records = []
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if number >= len(lines) - 1:
                continue
            raise StateFileError(f"{root.history_file}:{number}: not a JSON object") from None
        if isinstance(record, dict):
            records.append(record)
    return records
