"""threads.yaml (active thread → head) and history.jsonl (archived threads)."""

from __future__ import annotations

import json
import os
import time

from ...encoding.ids import is_hash, is_ulid
from ...encoding.records import replace
from ...encoding.simple_yaml import dumps
from ...errors import ConflictError, StateFileError
from ..files import append_line, atomic_write
from ..records import ArchivedThread, DamagedEntry
from .root import Root, flat_state_bytes, load_flat_state, load_jsonl, load_yaml_state, set_aside, without_lines

HEADER = "uwf active threads: thread id -> head node (a StartNode or the newest StepNode)"
WORKSPACES_HEADER = "uwf threads' own workspaces: thread id -> directory (a fork's; others use their StartNode's)"
MAX_SINCE = 10**15  # ms: past the year 33,000, not a time
PAUSED_HEADER = "uwf paused threads: thread id -> since (ms since the epoch); `uwf thread unpause` takes one out"


class FsThreadIndex:
    """Heads in threads.yaml, rewritten whole under the index lock; the archive appended to history.jsonl."""

    __slots__ = ("root", "location")

    def __init__(self, root: Root) -> None:
        self.root = root
        self.location = root.threads_file

    def heads(self) -> dict[str, str]:
        return self._load()[0]

    def _load(self) -> tuple[dict[str, str], list[DamagedEntry]]:
        return load_flat_state(self.root.threads_file, _head_problem)

    def _save(self, threads: dict[str, str], damaged: list[DamagedEntry]) -> None:
        atomic_write(self.root.threads_file, flat_state_bytes(dumps(threads, HEADER), damaged))

    def damaged(self) -> list[DamagedEntry]:
        """threads.yaml's and history.jsonl's entries that cannot be read (each hides only itself;
        an archive record torn before its thread left threads.yaml hides nothing)."""
        heads, damaged = self._load()
        for entry in self._read_history()[1]:
            active = any(thread in entry.text for thread in heads)
            damaged.append(replace(entry, hides=False) if active else entry)
        return damaged

    def mend(self, stamp: str) -> list[str]:
        """Set aside the lines of threads.yaml and history.jsonl that cannot be read (`cas fsck --repair`)."""
        with self.root.lock("index"):
            threads, damaged = self._load()
            done = set_aside(self.root.threads_file, damaged, stamp) if damaged else []
            if damaged:
                self._save(threads, [])
            return done + without_lines(self.root.history_file, self._read_history()[1], stamp)

    def add(self, thread: str, head: str) -> None:
        with self.root.lock("index"):
            threads, damaged = self._load()
            threads[thread] = head
            self._save(threads, damaged)

    def exclusive(self):
        return self.root.lock("index")

    def workspaces(self) -> dict[str, str]:
        raw = load_yaml_state(self.root.join("workspaces.yaml"))
        if not isinstance(raw, dict):
            return {}  # a damaged mapping: threads fall back to their StartNode's workspace
        return {thread: path for thread, path in raw.items() if is_ulid(thread) and isinstance(path, str) and path}

    def set_workspace(self, thread: str, path: str) -> None:
        with self.root.lock("index"):
            mapping = self.workspaces()
            mapping[thread] = path
            atomic_write(self.root.join("workspaces.yaml"), dumps(mapping, WORKSPACES_HEADER).encode("utf-8"))

    def paused(self) -> dict[str, int]:
        """paused.yaml, read strictly: a line it cannot read is one error naming the file, never a
        thread silently taken for unpaused (the gate would then let a step through)."""
        path = self.root.join("paused.yaml")
        raw = load_yaml_state(path)
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            raise StateFileError(f"{path} cannot be read: expected `THREAD: SINCE` lines (fix or remove it; nothing was changed)")
        mapping = {}
        for thread, since in raw.items():
            key = str(thread).strip().upper()
            if not is_ulid(key) or not str(since).isdigit() or int(since) > MAX_SINCE:
                raise StateFileError(f"{path} cannot be read: {thread!r}: {since!r} is not a thread id and a time in ms (fix or remove the line; nothing was changed)")
            mapping[key] = int(since)
        return mapping

    def set_paused(self, thread: str, since: int | None) -> bool:
        with self.root.lock("index"):
            mapping = self.paused()
            if (thread in mapping) == (since is not None):
                return False
            if since is None:
                del mapping[thread]
            elif thread not in self._load()[0]:
                return False  # it ended meanwhile: nothing to pause
            else:
                mapping[thread] = since
            self._save_paused(mapping)
            return True

    def _save_paused(self, mapping: dict[str, int]) -> None:
        atomic_write(self.root.join("paused.yaml"), dumps(mapping, PAUSED_HEADER).encode("utf-8"))

    def _unpause_ended(self, thread: str) -> None:
        """An ended thread is not paused any more (a resume of it steps at once); under the index lock."""
        if not os.path.exists(self.root.join("paused.yaml")):
            return
        mapping = self.paused()
        if mapping.pop(thread, None) is not None:
            self._save_paused(mapping)

    def compare_and_set(
        self,
        thread: str,
        expected: str,
        new: str,
        *,
        archive_reason: str | None = None,
        workflow: str | None = None,
        check=None,
        summary: str | None = None,
    ) -> None:
        with self.root.lock("index"):
            if check is not None:
                check()
            threads, damaged = self._load()
            current = threads.get(thread)
            if current is None:
                record = self.last_archived(thread)
                reason = f" ({record.reason})" if record else ""
                raise ConflictError(f"thread {thread} was archived{reason} while the step ran; its head stays at {expected}")
            if current != expected:
                raise ConflictError(
                    f"thread {thread} moved from {expected} to {current} while the step ran; the new step {new} stays in CAS (fork it to keep it)"
                )
            if archive_reason is not None:
                self._append_history(thread, workflow, new, archive_reason, summary)
                del threads[thread]
            else:
                threads[thread] = new
            self._save(threads, damaged)
            if archive_reason is not None:
                self._unpause_ended(thread)

    def archive(self, thread: str, workflow: str | None, reason: str, expected: str | None = None, summary: str | None = None) -> str:
        with self.root.lock("index"):
            threads, damaged = self._load()
            head = threads.get(thread)
            if head is None:
                raise ConflictError(f"thread {thread} is not active")
            if expected is not None and head != expected:
                raise ConflictError(f"thread {thread} moved from {expected} to {head}; not archived")
            self._append_history(thread, workflow, head, reason, summary)
            del threads[thread]
            self._save(threads, damaged)
            self._unpause_ended(thread)
            return head

    def _append_history(self, thread: str, workflow: str | None, head: str, reason: str, summary: str | None = None) -> None:
        record = ArchivedThread(thread, workflow, head, reason, int(time.time() * 1000), summary)
        # History first, durable and whole (or not there at all): a crash or a full disk before
        # threads.yaml is rewritten leaves the thread listed twice (active wins), never lost.
        append_line(self.root.history_file, json.dumps(record.to_json(), ensure_ascii=False))

    def restore_archived(self, record: ArchivedThread) -> None:
        with self.root.lock("index"):
            append_line(self.root.history_file, json.dumps(record.to_json(), ensure_ascii=False))

    def remove(self, thread: str) -> list[str]:
        with self.root.lock("index"):
            threads, damaged = self._load()
            active = thread in threads
            heads = [threads.pop(thread)] if active else []
            kept, gone = [], []
            try:
                with open(self.root.history_file, encoding="utf-8", errors="surrogateescape") as handle:
                    lines = handle.read().splitlines()
            except FileNotFoundError:
                lines = []
            for line in lines:
                (gone if _archived_thread(line) == thread else kept).append(line)
            heads += [record["head"] for record in map(json.loads, gone) if isinstance(record.get("head"), str)]
            if gone:  # the archive first: a crash between the two leaves the thread active, never half gone
                text = "".join(line + "\n" for line in kept)
                atomic_write(self.root.history_file, text.encode("utf-8", "surrogateescape"))
            mapping = self.workspaces() if heads else {}
            if mapping.pop(thread, None) is not None:
                atomic_write(self.root.join("workspaces.yaml"), dumps(mapping, WORKSPACES_HEADER).encode("utf-8"))
            if heads:
                self._unpause_ended(thread)
                _remove_live(self.root, thread)
            if active:
                self._save(threads, damaged)
            return heads

    def history(self) -> list[ArchivedThread]:
        """Archived threads, oldest first; a line that cannot be read is skipped (see `damaged`)."""
        return self._read_history()[0]

    def _read_history(self) -> tuple[list[ArchivedThread], list[DamagedEntry]]:
        return load_jsonl(self.root.history_file, _archived)

    def last_archived(self, thread: str) -> ArchivedThread | None:
        for record in reversed(self.history()):
            if record.thread == thread:
                return record
        return None


def _remove_live(root: Root, thread: str) -> None:
    """The thread's last step's live lines (store/fs/locks.py), with the thread."""
    try:
        os.unlink(os.path.join(root.locks_dir, f"live-{thread}.log"))
    except OSError:
        pass


def _head_problem(thread: object, head: object) -> str | None:
    if not isinstance(thread, str) or not is_ulid(thread):
        return f"{thread!r} is not a thread id"
    if not isinstance(head, str) or not is_hash(head):
        return f"thread {thread}: {head!r} is not a node hash"
    return None


def _archived(data: object) -> ArchivedThread | None:
    if not isinstance(data, dict) or not isinstance(data.get("thread"), str) or not is_hash(data.get("head")):
        return None
    workflow = data.get("workflow")
    stamp = data.get("completedAt")
    return ArchivedThread(
        data["thread"],
        workflow if isinstance(workflow, str) and workflow else None,
        data["head"],
        data.get("reason") if isinstance(data.get("reason"), str) else "done",
        stamp if isinstance(stamp, int) else None,
        data.get("summary") if isinstance(data.get("summary"), str) else None,
    )


def _archived_thread(line: str) -> str | None:
    """The thread an archive line records, or None for a line that cannot be read (kept as it is)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record.get("thread") if isinstance(record, dict) and isinstance(record.get("thread"), str) else None
