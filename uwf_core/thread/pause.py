"""Pausing a thread (the seeds' pause gate): the step in flight finishes, none starts after it.

Kept in the root's thread index (both backends), so it holds for `thread run` here, for the TUI,
and for `uwf worker` on every host; the check is made under the step lock (engine/step.py), so a
step that starts after `pause` returns never runs. `unpause` is the way back; `resume` is
another verb (an archived thread goes on).
"""

from __future__ import annotations

import time

from ..errors import PausedError, UwfError
from .ops import thread_info

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..repo import Repo


def paused_message(thread: str, since: int) -> str:
    try:
        when = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(since / 1000))
    except (OverflowError, ValueError, OSError):  # a time no clock can show
        when = f"{since} ms since the epoch"
    return f"thread {thread} is paused (since {when}); `uwf thread unpause {thread}` lets it go on"


def refuse_paused(repo: Repo, thread: str) -> None:
    """PausedError when `thread` is paused: where every step starts."""
    since = repo.threads.paused().get(thread)
    if since is not None:
        raise PausedError(paused_message(thread, since))


def pause_thread(repo: Repo, thread: str) -> tuple[str, bool]:
    """(thread id, whether it was paused now: False when it already was)."""
    info = thread_info(repo, thread)
    if not info.active:
        raise UwfError(f"thread {info.thread} has ended ({info.reason or 'done'}): there is nothing to pause")
    return info.thread, repo.threads.set_paused(info.thread, int(time.time() * 1000))


def unpause_thread(repo: Repo, thread: str) -> str:
    """The thread id; refused when it was not paused."""
    info = thread_info(repo, thread)
    if not repo.threads.set_paused(info.thread, None):
        ended = "" if info.active else f": it has ended ({info.reason or 'done'})"
        raise UwfError(f"thread {info.thread} is not paused{ended}")
    return info.thread


def paused_since(repo: Repo, thread: str) -> int | None:
    """When `thread` was paused (ms since the epoch), or None when it is not."""
    return repo.threads.paused().get(thread)
