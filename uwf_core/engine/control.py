"""Stopping a thread from outside its step: archive it as killed, then end its running agent."""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..thread.ops import ThreadInfo, active_thread

if TYPE_CHECKING:
    from ..repo import Repo

KILL_GRACE_SECONDS = 5.0  # longer than an agent's own grace, so a sub-workflow can stop its child first


def kill_thread(repo: Repo, thread: str) -> ThreadInfo:
    """Archive with reason 'killed', and terminate the agent of a step in progress; a map step's
    children still active are killed with it."""
    from .fanout.map import active_children
    from .contain.process import kill_group

    info = active_thread(repo, thread)
    children = active_children(repo, info)
    head = repo.threads.archive(info.thread, info.workflow, "killed")
    for child in children:
        kill_thread(repo, child)
    running = repo.locks.running(info.thread)
    if running is not None and running.pgid and running.here:
        kill_group(running.pgid, grace=KILL_GRACE_SECONDS)
    # On another host, the step's own watch sees the thread archived and stops its agent there.
    return ThreadInfo(info.thread, info.workflow, head, False, "killed")
