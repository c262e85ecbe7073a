"""The per-thread step lock, and what it tells others about the step in progress.

While a step runs, locks/thread-<ID>.lock is flock'ed and holds a JSON line
naming uwf's pid and, once spawned, the agent's process group. A second step
fails at once naming the holder; `uwf thread kill` reads the group to
terminate; a line left behind by a holder that died (SIGKILL) is how the
next step learns that an attempt was interrupted.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from .files import FileLock, Root


@dataclass(frozen=True)
class RunningStep:
    pid: int
    pgid: int | None
    role: str | None
    agent: str | None
    started_at: int | None

    def describe(self) -> str:
        what = f"pid {self.pid}"
        if self.role:
            what += f" (role {self.role}, agent {self.agent})"
        return what


def _parse(text: str) -> RunningStep | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("pid"), int):
        return None
    return RunningStep(data["pid"], data.get("pgid"), data.get("role"), data.get("agent"), data.get("startedAt"))


class StepLock:
    """Held for the whole of one step of one thread."""

    def __init__(self, root: Root, thread: str) -> None:
        self.thread = thread
        self.lock = root.lock(f"thread-{thread}", wait=False, purpose=f"thread {thread}")
        self.info: dict = {}
        self.interrupted: RunningStep | None = None

    def __enter__(self) -> StepLock:
        from ...errors import LockedError

        try:
            self.lock.acquire()
        except LockedError:
            holder = running_step_from_file(self.lock.path)
            who = holder.describe() if holder else "another process"
            raise LockedError(f"thread {self.thread} is already being stepped by {who}") from None
        self.interrupted = _parse(self.lock.stale_info)
        self.update(pid=os.getpid(), startedAt=int(time.time() * 1000))
        return self

    def update(self, **fields) -> None:
        self.info.update(fields)
        self.lock.write_info(json.dumps(self.info))

    def __exit__(self, *exc_info) -> None:
        self.lock.release()


def running_step_from_file(path: str) -> RunningStep | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return _parse(handle.read())
    except OSError:
        return None


def running_step(root: Root, thread: str) -> RunningStep | None:
    """The step in progress on a thread, if its holder is alive."""
    info = running_step_from_file(os.path.join(root.locks_dir, f"thread-{thread}.lock"))
    if info is None:
        return None
    try:
        os.kill(info.pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return info


KILL_GRACE_SECONDS = 5.0  # longer than an agent's own grace, so a sub-workflow can stop its child first


def terminate_running_step(info: RunningStep) -> None:
    from ...engine.process import kill_group

    if info.pgid:
        kill_group(info.pgid, grace=KILL_GRACE_SECONDS)
