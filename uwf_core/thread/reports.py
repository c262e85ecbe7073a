"""The JSON views of threads that `uwf thread show | list | steps` print and `uwf mcp` returns:
one place, so a script and an MCP client read the same shapes."""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from ..repo import Repo


def thread_report(repo: Repo, thread: str) -> dict:
    """`uwf thread show`: {workflow, thread, head, done, steps, ...} with what runs or waits now."""
    from .ops import thread_info
    from .usage import thread_stats

    info = thread_info(repo, thread)
    data = info.to_json()
    data["steps"], checks, usage = thread_stats(repo, info.head)
    if checks:
        data["checks"] = checks
    data.update(_files_of(repo, info))
    if usage.requests:
        data["usage"] = usage.to_json()
    contained = _containment(repo.runs.read(info.thread))
    if contained:
        data["containment"] = contained
    paused = repo.threads.paused().get(info.thread)
    if paused is not None:
        data["paused"] = paused  # since (ms): no step starts until `uwf thread unpause`
    running = repo.locks.running(info.thread) if info.active else None
    if running is not None:  # a step in progress, here or on another host
        data["running"] = {"pid": running.pid, "host": running.host, "role": running.role, "agent": running.agent, "startedAt": running.started_at}
        if running.worker:
            data["running"]["worker"] = running.worker
        if running.waiting:
            data["running"]["waiting"] = running.waiting  # a map step: "1 of 3 children done"
    elif info.active and any(entry.thread == info.thread for entry in repo.backend.queue.entries()):
        last = repo.runs.read(info.thread)[-1:]  # only a queued thread can be a map waiting for workers
        if last and last[0].status == "waiting" and last[0].head == info.head:
            data["waiting"] = last[0].error  # a map step whose children workers step
        elif last and last[0].status == "asking" and last[0].head == info.head:
            data["asking"] = last[0].error  # a person's role: `uwf inbox`, `uwf thread answer`
    return data


def threads_report(repo: Repo, include_archived: bool = False) -> list[dict]:
    """`uwf thread list`: active threads (and archived ones, with their reason), newest first."""
    from ..errors import UwfError
    from ..workflow.ops import workflow_of
    from .ops import list_threads

    items = []
    queued = {entry.thread: entry for entry in repo.backend.queue.entries()}
    paused = repo.threads.paused()
    for info in list_threads(repo, include_archived=include_archived):
        item = {"thread": info.thread, "workflow": info.workflow, "head": info.head}
        entry = queued.get(info.thread)
        if entry is not None:
            item["queued"] = True
            if entry.worker:
                item["worker"] = entry.worker  # the worker stepping it now
            if entry.asking and entry.asking == info.head:
                item["asking"] = True  # waiting for a person (`uwf inbox`)
        if info.thread in paused:
            item["paused"] = True
        try:
            item["name"] = workflow_of(repo, info.workflow).name  # the hash stays for scripts; the name is for people
        except UwfError:
            pass
        if not info.active:
            item["reason"] = info.reason
        if info.problem:
            item["problem"] = info.problem
        items.append(item)
    return items


def steps_report(repo: Repo, thread: str) -> list[dict]:
    """`uwf thread steps`: the steps oldest first, outputs expanded, with how each agent ran."""
    from .ops import thread_steps
    from .timeline import runs_by_step

    steps = thread_steps(repo, thread)
    runs = runs_by_step(repo.runs.read())  # a fork's earlier steps were another thread's attempts
    listed = []
    for step in steps:
        item = {"hash": step.hash, "role": step.role, "agent": step.agent, "output": step.output, "detail": step.detail}
        run = runs.get(step.hash)
        if run is not None and run.containment:
            item["containment"] = run.containment  # how its agent ran (design §16)
        if run is not None and run.outside is not None and not run.outside.empty:
            item["outside"] = run.outside.to_dict()
        listed.append(item)
    return listed


def fork_report(repo: Repo, info) -> dict:
    """`uwf thread fork`: {workflow, thread, head} and the fork's own workspace, when it has one."""
    data = {"workflow": info.workflow, "thread": info.thread, "head": info.head}
    workspace = repo.threads.workspaces().get(info.thread)
    if workspace:
        data["workspace"] = workspace
    return data


def _containment(records) -> dict[str, int]:
    """How this thread's agents ran, attempt by attempt: {"bubblewrap": 4}, or a process group and why."""
    counts: dict[str, int] = {}
    for record in records:
        if record.containment:
            counts[record.containment] = counts.get(record.containment, 0) + 1
    return counts


def _files_of(repo: Repo, info) -> dict:
    """`workspace` (the thread's directory) and `files` (the tree its head names), where it has them."""
    from .nodes import start_of

    start = start_of(repo.nodes, info.head)[1]
    if not start.workspace:
        return {}
    from .files import files_of, thread_workspace

    data = {"workspace": thread_workspace(repo, info.thread, start)}
    files = files_of(repo.nodes, info.head)
    if files:
        data["files"] = files
    return data


def files_report(repo: Repo, step: str) -> dict:
    """`uwf thread files STEP --json`: what changed before the step (by hand) and by it, and what
    its agent wrote outside the workspace."""
    step, hand, changes, written = step_file_changes(repo, step)
    data = {"step": step, "byHand": [c.to_json() for c in hand], "changes": [c.to_json() for c in changes or []]}
    if written is not None:
        data["outside"] = written.to_dict()
    return data


def step_file_changes(repo: Repo, step: str) -> tuple:
    """(the step's full hash, changes by hand before it, changes by it or None when it has no
    snapshot, what its agent wrote outside the workspace or None)."""
    from ..errors import UwfError
    from .files import step_changes
    from .ops import resolve_node

    step = resolve_node(repo, step)
    written = [run.outside for run in repo.runs.of_step(step) if run.outside is not None and not run.outside.empty][-1:]
    try:
        hand, changes = step_changes(repo, step)
    except UwfError:
        if not written:
            raise
        hand, changes = [], None  # no snapshot, but its agent wrote outside the workspace: that much is known
    return step, hand, changes, written[0] if written else None


def running_report(repo: Repo) -> list[dict]:
    """Every step in flight on the root, from any host: thread, role, agent, host, pid, worker, since."""
    from .ops import list_threads

    listed = []
    for info in list_threads(repo):
        running = repo.locks.running(info.thread)
        if running is None:
            continue
        item = {"thread": info.thread, "role": running.role, "agent": running.agent, "host": running.host, "pid": running.pid,
                "startedAt": running.started_at}
        if running.worker:
            item["worker"] = running.worker
        if running.waiting:
            item["waiting"] = running.waiting
        listed.append(item)
    return listed
