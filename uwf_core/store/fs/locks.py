"""The per-thread step lock, and what it tells others about the step in progress.

While a step runs, locks/thread-<ID>.lock is flock'ed and holds a JSON line
naming uwf's pid and, once spawned, the agent's process group. A second step
fails at once naming the holder; `uwf thread kill` reads the group to
terminate; a line left behind by a holder that died (SIGKILL) is how the
next step learns that an attempt was interrupted.

Beside it, locks/live-<ID>.log carries the step's agent output (redacted) for
`uwf thread live` in other processes: a new file per step, made at its first
line and kept until the next step's first line replaces it (so a follower reads
a fast step's lines too), at most LIVE_MAX_BYTES; gc and `thread rm` remove it
once the thread is gone.
"""

from __future__ import annotations

import json
import os
import threading
import time

from ...errors import LockedError
from ..records import LIVE_CUT, LIVE_MAX_BYTES, RunningStep, live_line, process_alive, this_host
from .root import Root


def _parse(text: str) -> RunningStep | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("pid"), int):
        return None
    return RunningStep(data["pid"], data.get("pgid"), data.get("role"), data.get("agent"), data.get("startedAt"), data.get("host"), data.get("worker"), data.get("waiting"))


class FsStepLease:
    """Held for the whole of one step of one thread."""

    def __init__(self, root: Root, thread: str, worker: str | None = None) -> None:
        self.thread = thread
        self.lock = root.lock(f"thread-{thread}", wait=False, purpose=f"thread {thread}")
        self.info: dict = {"worker": worker} if worker else {}
        self.interrupted: RunningStep | None = None
        self.live_path = os.path.join(root.locks_dir, f"live-{thread}.log")
        self.live_fd: int | None = None
        self.live_left = LIVE_MAX_BYTES
        self.live_lock = threading.Lock()  # a line said from another thread, late, never meets a closed descriptor
        self.ended = False

    def __enter__(self) -> FsStepLease:
        try:
            self.lock.acquire()
        except LockedError:
            holder = _running_from_file(self.lock.path)
            who = holder.describe() if holder else "another process"
            raise LockedError(f"thread {self.thread} is already being stepped by {who}") from None
        self.interrupted = _parse(self.lock.stale_info)
        self.update(pid=os.getpid(), startedAt=int(time.time() * 1000), host=this_host())
        return self

    def update(self, **fields) -> None:
        self.info.update(fields)
        self.lock.write_info(json.dumps(self.info))

    def say(self, line: str) -> None:
        """One line of the step's output for live readers; a write that fails costs only the view.
        Once the lease has ended nothing is written: its descriptor is closed, and its number may
        be another file's by then (a function the step gave up on still prints)."""
        with self.live_lock:
            self._say(line)

    def _say(self, line: str) -> None:
        if self.ended or self.live_left <= 0:
            return
        try:
            if self.live_fd is None:
                try:
                    os.unlink(self.live_path)  # the last step's: a new file is a new step
                except FileNotFoundError:
                    pass
                self.live_fd = os.open(self.live_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o600)
            data = live_line(line).encode("utf-8", "replace") + b"\n"
            self.live_left -= len(data)
            os.write(self.live_fd, data if self.live_left > 0 else LIVE_CUT.encode() + b"\n")
        except OSError:
            pass

    def __exit__(self, *exc_info) -> None:
        with self.live_lock:
            self.ended = True
            if self.live_fd is not None:
                os.close(self.live_fd)
                self.live_fd = None
        self.lock.release()


def _running_from_file(path: str) -> RunningStep | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return _parse(handle.read())
    except OSError:
        return None


class FsStepLocks:
    __slots__ = ("root",)

    def __init__(self, root: Root) -> None:
        self.root = root

    def acquire(self, thread: str, worker: str | None = None) -> FsStepLease:
        return FsStepLease(self.root, thread, worker)

    def running(self, thread: str) -> RunningStep | None:
        """The step in progress on a thread, if its holder is alive."""
        info = _running_from_file(os.path.join(self.root.locks_dir, f"thread-{thread}.lock"))
        if info is None:
            return None
        return info if process_alive(info.pid) else None
