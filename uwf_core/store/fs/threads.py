"""threads.yaml (active thread → head) and history.jsonl (archived threads)."""

from __future__ import annotations

import json

from ...encoding.ids import is_hash, is_ulid
from ...encoding.simple_yaml import YamlSyntaxError, dumps, loads
from ...errors import StateFileError
from .files import Root, atomic_write, read_text

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


class ConflictError(StateFileError):
    """The head moved (or the thread was archived) while a step was running."""


def add_thread(root: Root, thread: str, head: str) -> None:
    with root.lock("index"):
        threads = load_threads(root)
        threads[thread] = head
        save_threads(root, threads)


def compare_and_set_head(root: Root, thread: str, expected: str, new: str, archive_reason: str | None = None, workflow: str | None = None) -> None:
    """Move a thread's head from `expected` to `new` (and archive it when `archive_reason`),
    atomically under the index lock. Fails if the head is no longer `expected`."""
    with root.lock("index"):
        threads = load_threads(root)
        current = threads.get(thread)
        if current is None:
            record = last_history_record(root, thread)
            reason = f" ({record.get('reason')})" if record else ""
            raise ConflictError(f"thread {thread} was archived{reason} while the step ran; its head stays at {expected}")
        if current != expected:
            raise ConflictError(
                f"thread {thread} moved from {expected} to {current} while the step ran; the new step {new} stays in CAS (fork it to keep it)"
            )
        if archive_reason is not None:
            _append_history(root, thread, workflow, new, archive_reason)
            del threads[thread]
        else:
            threads[thread] = new
        save_threads(root, threads)


def archive_thread(root: Root, thread: str, workflow: str | None, reason: str, expected: str | None = None) -> str:
    """Remove an active thread from threads.yaml and append its history record; returns its head."""
    with root.lock("index"):
        threads = load_threads(root)
        head = threads.get(thread)
        if head is None:
            raise ConflictError(f"thread {thread} is not active")
        if expected is not None and head != expected:
            raise ConflictError(f"thread {thread} moved from {expected} to {head}; not archived")
        _append_history(root, thread, workflow, head, reason)
        del threads[thread]
        save_threads(root, threads)
        return head


def _append_history(root: Root, thread: str, workflow: str | None, head: str, reason: str) -> None:
    import time

    from .files import append_line

    record = {"thread": thread, "workflow": workflow, "head": head, "reason": reason, "completedAt": int(time.time() * 1000)}
    # History first: a crash before threads.yaml is rewritten leaves the thread listed
    # twice (active wins), never lost.
    append_line(root.history_file, json.dumps(record, ensure_ascii=False))


def last_history_record(root: Root, thread: str) -> dict | None:
    for record in reversed(read_history(root)):
        if record.get("thread") == thread:
            return record
    return None
