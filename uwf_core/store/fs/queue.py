"""The work queue of a directory root: queue.yaml (thread -> when it was queued), and one claim
lock per thread being worked on (locks/claim-<ID>.lock, flock'ed by the worker: a worker that
dies loses its claim with its process)."""

from __future__ import annotations

import json
import os
import time

from ...encoding.ids import is_ulid
from ...encoding.simple_yaml import dumps
from ...errors import LockedError, StateFileError
from ..files import atomic_write
from ..records import QueuedThread, this_host
from .root import Root, load_yaml_state

HEADER = "uwf work queue: thread id -> when it was queued (ms); `uwf worker` steps them"


class FsClaim:
    """Held from `claim()` on; `with` releases it at the end."""

    def __init__(self, root: Root, thread: str, worker: str) -> None:
        self.thread = thread
        self.worker = worker
        self.lock = root.lock(f"claim-{thread}", wait=False, purpose=f"thread {thread}")

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

    def _load(self) -> dict[str, str]:
        raw = load_yaml_state(self.path)
        if raw is None:
            return {}
        if not isinstance(raw, dict) or not all(is_ulid(k) and isinstance(v, str) and v.isdigit() for k, v in raw.items()):
            raise StateFileError(f"{self.path} cannot be read: expected thread id -> queued time (fix or delete it; nothing was changed)")
        return dict(raw)

    def enqueue(self, thread: str) -> bool:
        with self.root.lock("queue"):
            queued = self._load()
            if thread in queued:
                return False
            queued[thread] = str(int(time.time() * 1000))
            atomic_write(self.path, dumps(queued, HEADER).encode("utf-8"))
            return True

    def dequeue(self, thread: str) -> None:
        with self.root.lock("queue"):
            queued = self._load()
            if queued.pop(thread, None) is not None:
                atomic_write(self.path, dumps(queued, HEADER).encode("utf-8"))

    def entries(self) -> list[QueuedThread]:
        queued = sorted(self._load().items(), key=lambda item: (int(item[1]), item[0]))
        return [QueuedThread(thread, int(stamp), self._holder(thread)) for thread, stamp in queued]

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
        if info.get("host") == this_host():
            try:
                os.kill(info["pid"], 0)
            except ProcessLookupError:
                return None
            except PermissionError:
                pass
        return str(info.get("worker") or f"pid {info['pid']}")

    def claim(self, worker: str, skip: set[str] | None = None) -> FsClaim | None:
        for entry in self.entries():
            if skip and entry.thread in skip:
                continue
            try:
                return FsClaim(self.root, entry.thread, worker).acquire()
            except LockedError:
                continue  # another worker holds it
        return None
