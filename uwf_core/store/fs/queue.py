"""The work queue of a directory root: queue.yaml (thread -> when it was queued, and the head at
which it waits for a person, if it does), and one claim lock per thread being worked on
(locks/claim-<ID>.lock, flock'ed by the worker: a worker that dies loses its claim with its
process; on one host there is no partition to lease against)."""

from __future__ import annotations

import json
import os
import time

from ...encoding.ids import is_ulid
from ...encoding.simple_yaml import dumps
from ...errors import LockedError
from ..files import atomic_write
from ..records import DamagedEntry, QueuedThread, process_alive, this_host
from .root import Root, flat_state_bytes, load_flat_state, set_aside
from .threads import FsThreadIndex

HEADER = "uwf work queue: thread id -> when it was queued (ms)[ and the head it waits for a person at]; `uwf worker` steps them"


class FsClaim:
    """Held from `claim()` on; `with` releases it at the end."""

    def __init__(self, root: Root, thread: str, worker: str) -> None:
        self.thread = thread
        self.worker = worker
        self.lock = root.lock(f"claim-{thread}", wait=False, purpose=f"thread {thread}")
        self.lost = False  # a flock is lost only with its process

    def beat(self) -> bool:
        return True

    def acquire(self) -> FsClaim:
        self.lock.acquire()
        self.lock.write_info(json.dumps({"worker": self.worker, "pid": os.getpid(), "host": this_host()}))
        return self

    def release(self) -> None:
        self.lock.release()

    def __enter__(self) -> FsClaim:
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()


class FsWorkQueue:
    __slots__ = ("root",)

    def __init__(self, root: Root) -> None:
        self.root = root

    @property
    def path(self) -> str:
        return self.root.join("queue.yaml")

    def _load(self) -> tuple[dict[str, str], list[DamagedEntry]]:
        return load_flat_state(self.path, _queued_problem)

    def _save(self, queued: dict[str, str], damaged: list[DamagedEntry]) -> None:
        atomic_write(self.path, flat_state_bytes(dumps(queued, HEADER), damaged))

    def damaged(self) -> list[DamagedEntry]:
        return self._load()[1]

    def mend(self, stamp: str) -> list[str]:
        """Set aside the lines that cannot be read (`cas fsck --repair`)."""
        with self.root.lock("queue"):
            queued, damaged = self._load()
            if not damaged:
                return []
            done = set_aside(self.path, damaged, stamp)
            self._save(queued, [])
            return done

    def enqueue(self, thread: str) -> bool:
        with self.root.lock("queue"):
            queued, damaged = self._load()
            if thread in queued:
                return False
            queued[thread] = str(int(time.time() * 1000))
            self._save(queued, damaged)
            return True

    def dequeue(self, thread: str) -> None:
        with self.root.lock("queue"):
            queued, damaged = self._load()
            if queued.pop(thread, None) is not None:
                self._save(queued, damaged)

    def ask(self, thread: str, head: str | None) -> None:
        """Mark a queued thread as waiting for a person at `head` (None: no longer)."""
        with self.root.lock("queue"):
            queued, damaged = self._load()
            if thread in queued:
                stamp = queued[thread].split()[0]
                queued[thread] = f"{stamp} {head}" if head else stamp
                self._save(queued, damaged)

    def entries(self) -> list[QueuedThread]:
        queued = sorted(((thread, value.split()) for thread, value in self._load()[0].items()), key=lambda item: (int(item[1][0]), item[0]))
        return [QueuedThread(thread, int(parts[0]), self._holder(thread), parts[1] if len(parts) > 1 else None) for thread, parts in queued]

    def _holder(self, thread: str) -> str | None:
        """The live worker holding a claim on `thread` (its lock file names it; a dead one's stays)."""
        path = os.path.join(self.root.locks_dir, f"claim-{thread}.lock")
        try:
            with open(path, encoding="utf-8") as handle:
                info = json.loads(handle.read() or "null")
        except (OSError, ValueError):
            return None
        if not isinstance(info, dict) or not isinstance(info.get("pid"), int):
            return None
        if info.get("host") == this_host() and not process_alive(info["pid"]):
            return None
        return str(info.get("worker") or f"pid {info['pid']}")

    def claim(self, worker: str, skip: set[str] | None = None) -> FsClaim | None:
        entries = self.entries()
        index = FsThreadIndex(self.root)
        heads = index.heads() if any(entry.asking for entry in entries) else {}
        paused = index.paused() if entries else {}
        for entry in entries:
            if skip and entry.thread in skip or entry.thread in paused:
                continue
            if entry.asking and heads.get(entry.thread) == entry.asking:
                continue  # waiting for a person at this head
            try:
                return FsClaim(self.root, entry.thread, worker).acquire()
            except LockedError:
                continue  # another worker holds it
        return None


def _queued_problem(thread: object, stamp: object) -> str | None:
    if not isinstance(thread, str) or not is_ulid(thread):
        return f"{thread!r} is not a thread id"
    parts = stamp.split() if isinstance(stamp, str) else []
    if not parts or not parts[0].isdigit() or len(parts) > 2:
        return f"thread {thread}: {stamp!r} is not a time in milliseconds"
    return None
