"""Thread lifecycle as data: start, show, list, steps, fork (also with an edited output), resume.

One public function per operation; the CLI and the TUI call these. Stepping
and killing live in engine/, read models in details.py, read.py, timeline.py.
"""

from __future__ import annotations

import os

from ..encoding.ids import is_ulid, new_ulid
from ..encoding.records import record
from ..errors import NotFoundError, UwfError
from ..store.cas import CasStore
from ..workflow.ops import resolve_workflow_hash, workflow_of
from .context import context_of
from .model import StartNode, StepContext
from .nodes import put_start, read_step, start_of, thread_node

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Callable

    from ..repo import Repo
    from ..store.records import DamagedEntry


@record(frozen=True)
class ThreadInfo:
    """A thread as one read found it: heads move, so this is a snapshot to show, never a cache."""

    thread: str
    workflow: str  # the workflow node's hash
    head: str
    active: bool
    reason: str | None = None  # why it was archived: done, killed, max-steps
    completed_at: int | None = None
    problem: str | None = None  # set when the head cannot be read (a damaged root: see `uwf cas fsck`)
    summary: str | None = None  # the archive record's: the summarizer's, or why the supervisor killed it

    @property
    def done(self) -> bool:
        return not self.active

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"workflow": self.workflow, "thread": self.thread, "head": self.head, "done": self.done}
        if self.reason:
            data["reason"] = self.reason
        if self.problem:
            data["problem"] = self.problem
        if self.summary:
            data["summary"] = self.summary
        return data


def _workflow_of(store: CasStore, head: str) -> str:
    return start_of(store, head)[1].workflow


def _head_workflow(repo: Repo, thread: str, head: str) -> str:
    """The workflow of a thread's head; a head that cannot be read names its thread."""
    try:
        return _workflow_of(repo.nodes, head)
    except NotFoundError as exc:
        raise NotFoundError(f"thread {thread}: {exc.message} (its head; `uwf cas fsck` says what else is damaged)") from None


def resolve_thread_id(repo: Repo, text: str) -> str:
    """A thread id from an id or unique prefix (case-insensitive), active or archived."""
    wanted = text.strip().upper()
    if is_ulid(wanted):
        return wanted
    known = set(repo.threads.heads()) | {record.thread for record in repo.threads.history()}
    matches = sorted(t for t in known if t.startswith(wanted))
    if not wanted or not matches:
        _refuse_damaged(repo, wanted)
        raise NotFoundError(f"no thread '{text}'")
    if len(matches) > 1:
        raise UwfError(f"thread prefix '{text}' is ambiguous: {', '.join(matches[:4])}{', ...' if len(matches) > 4 else ''}")
    return matches[0]


def _refuse_damaged(repo: Repo, wanted: str) -> None:
    """A thread not found may be one whose line is damaged: say that, not "no thread"."""
    damaged = next((entry for entry in repo.threads.damaged() if wanted and wanted in entry.text.upper()), None)
    if damaged is not None:
        raise UwfError(f"thread {wanted} cannot be read: {damaged.message}")


def thread_info(repo: Repo, thread: str) -> ThreadInfo:
    """A thread by id or unique prefix, active or archived: where every command naming a thread starts."""
    thread = resolve_thread_id(repo, thread)
    head = repo.threads.heads().get(thread)
    if head is not None:
        return ThreadInfo(thread, _head_workflow(repo, thread, head), head, True)
    record = repo.threads.last_archived(thread)
    if record is None:
        _refuse_damaged(repo, thread)
        raise NotFoundError(f"no thread {thread}")
    workflow = record.workflow or _head_workflow(repo, thread, record.head)
    return ThreadInfo(thread, workflow, record.head, False, record.reason, record.completed_at, summary=record.summary)


def active_thread(repo: Repo, thread: str) -> ThreadInfo:
    info = thread_info(repo, thread)
    if not info.active:
        raise UwfError(
            f"thread {info.thread} is archived ({info.reason or 'done'}); fork a step (`uwf thread fork`) "
            f"or resume it (`uwf thread resume`) to go on"
        )
    return info


def start_thread(
    repo: Repo,
    workflow: str,
    prompt: str,
    workspace: str | None = None,
    agents: dict[str, str] | None = None,
    *,
    max_tokens: int | None = None,
    max_cost: float | None = None,
    snapshot: bool = True,
    say: Callable[[str], None] | None = None,
    thread: str | None = None,
) -> ThreadInfo:
    """A new thread (no step is run). `max_tokens` / `max_cost` give it a budget of its own,
    kept in its StartNode, over the workflow's; a workspace is snapshot as the thread's start
    unless `snapshot` is False or config.yaml turns snapshots off (`say` gets its notes).
    `thread`: its id, when the caller derives one (a map's children); else a new ULID."""
    store = repo.nodes
    workflow_hash = resolve_workflow_hash(repo, workflow)
    definition = workflow_of(repo, workflow_hash)
    for role, agent in (agents or {}).items():
        if role not in definition.roles:
            raise UwfError(f"--agent {role}=...: workflow '{definition.name}' has no role '{role}' (roles: {', '.join(definition.roles)})")
        if repo.agents.functions and agent.strip() and len(agent.split()) == 1:  # a typo said now, not at its role's step
            from ..agent_functions import refuse_unknown_agent

            refuse_unknown_agent(agent.strip(), f"the thread's --agent {role}=... binding", repo.agents.functions, repo.config.agents)
    if workspace is not None:
        if not os.path.isdir(workspace):
            raise UwfError(f"workspace {os.path.abspath(workspace)} is not a directory")
        from .files import check_thread_workspace

        workspace = os.path.realpath(workspace)  # the place a link leads to: what an agent's sandbox mounts
        check_thread_workspace(repo, workspace)
    if not prompt.strip():
        raise UwfError("the prompt is empty")
    _check_budget(max_tokens, max_cost)
    prompt = redacted_prompt(repo, prompt, say)
    start = StartNode(
        workflow_hash, prompt, workspace, None, dict(agents) if agents else None, max_tokens, _cost_number(max_cost), snapshot=snapshot
    )
    with repo.backend.publishing():  # gc sweeps nothing of it before the head names it
        head = put_start(store, _with_files(repo, start, say=say))
        thread = thread or new_ulid()
        repo.threads.add(thread, head)
    return ThreadInfo(thread, workflow_hash, head, True)


def redacted_prompt(repo: Repo, prompt: str, say: Callable[[str], None] | None = None) -> str:
    """The prompt as a StartNode may keep it: a key's value typed into it (a .env value, a key in
    the environment) becomes [redacted:NAME] before it is stored, and the caller is told."""
    from ..config.env import NO_SECRETS

    try:
        secrets = repo.secrets
    except UwfError:
        secrets = NO_SECRETS  # a .env that cannot be read says so on the step's own path
    held = secrets.found(prompt)
    if not held:
        return prompt
    if say is not None:
        names = ", ".join(held)
        say(f"uwf: the prompt held the value of {names}: stored as [redacted:{held[0]}]{' and the like' if len(held) > 1 else ''}; "
            f"an agent that needs a key gets it through its entry's `secrets:`")
    return secrets.text(prompt)


def _check_budget(max_tokens: int | None, max_cost: float | None) -> None:
    from ..errors import UsageError

    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise UsageError(f"--max-tokens must be a positive whole number, got {max_tokens!r}")
    if max_cost is not None and not 0 < max_cost < float("inf"):
        raise UsageError(f"--max-cost must be a positive number, got {max_cost!r}")


def _cost_number(value: float | None) -> float | int | None:
    """As CBOR keeps it: an integral cost is stored as an integer."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def list_threads(repo: Repo, include_archived: bool = False) -> list[ThreadInfo]:
    """Active threads, newest first; with `include_archived`, the ended ones too (a thread that
    `run_thread` took to its end is archived: `list_threads(repo, include_archived=True)` lists it,
    as `uwf thread list --all` does)."""
    store = repo.nodes
    active = repo.threads.heads()
    infos = {thread: _listed(store, thread, head) for thread, head in active.items()}
    if include_archived:
        for record in repo.threads.history():
            if record.thread in active:
                continue
            infos[record.thread] = ThreadInfo(record.thread, record.workflow or "", record.head, False, record.reason, record.completed_at)
    return sorted(infos.values(), key=lambda info: info.thread, reverse=True)


def damaged_entries(repo: Repo) -> list[DamagedEntry]:
    """Lines of the heads, the archive and the work queue that cannot be read: a listing shows
    them as damaged, each hiding only its own thread (or its place in the queue)."""
    return repo.threads.damaged() + repo.backend.queue.damaged()


def _listed(store: CasStore, thread: str, head: str) -> ThreadInfo:
    """An active thread for a listing; one whose head cannot be read is listed with the problem,
    so one damaged thread does not hide the others."""
    try:
        return ThreadInfo(thread, _workflow_of(store, head), head, True)
    except UwfError as exc:
        return ThreadInfo(thread, "", head, True, problem=exc.message)


def thread_steps(repo: Repo, thread: str) -> list[StepContext]:
    """The thread's steps, oldest first, uwf's checks included: for showing a thread, not routing it."""
    return list(context_of(repo, thread_info(repo, thread).head, with_checks=True).steps)


def role_step(repo: Repo, thread: str, role: str, nth: int | None = None) -> str:
    """The hash of a thread's last step of `role` (with `nth`, its nth, 1 the first): where
    `thread fork --from-role` forks from."""
    steps = [step for step in thread_steps(repo, thread) if step.role == role]
    info = thread_info(repo, thread)
    if not steps:
        roles = sorted({step.role for step in thread_steps(repo, thread)})
        raise UwfError(f"thread {info.thread} has no step of role '{role}'" + (f" (its roles so far: {', '.join(roles)})" if roles else ""))
    if nth is None:
        return steps[-1].hash
    if not 1 <= nth <= len(steps):
        raise UwfError(f"thread {info.thread} has {len(steps)} step{'s' if len(steps) != 1 else ''} of role '{role}': --nth {nth} is not one of them")
    return steps[nth - 1].hash


def _with_files(repo: Repo, start: StartNode, directory: str | None = None, *, say: Callable[[str], None] | None = None, trusted: str | None = None) -> StartNode:
    """The StartNode with a snapshot of its workspace (or the thread's own `directory`), when it keeps them."""
    from .files import snapshot, snapshots_on

    directory = directory or start.workspace
    if directory is None or not snapshots_on(repo, start) or not os.path.isdir(directory):
        return start
    from ..encoding.records import replace
    from ..workspace.snapshot import SnapshotError

    try:
        taken = snapshot(repo, directory, trusted)
    except SnapshotError as exc:
        raise UwfError(
            f"{exc.message} (add them to .uwfignore, raise workspace.maxSnapshotBytes in config.yaml, or start the thread "
            f"with --no-snapshot)"
        ) from None
    if say is not None:
        for note in taken.notes:
            say(f"uwf: snapshot: {note}")
    return replace(start, files=taken.tree)


def fork_thread(repo: Repo, node_hash: str, workspace: str | None = None, say: Callable[[str], None] | None = None) -> ThreadInfo:
    """A new thread whose head is an existing step (or start): O(1) in nodes, nothing copied; a
    thread with files gets a directory of its own holding that step's (thread/files.py). The fork
    is active, and goes on from after that step: a fork of a finished thread's last step ends at
    its next step (the moderator says $END again); to redo a step, fork the one before it."""
    from .files import give_workspace

    store = repo.nodes
    _refuse_thread_id(repo, node_hash)
    with repo.backend.publishing():  # the step forked from may be reachable from nothing else
        hash_ = store.resolve(node_hash)
        thread_node(store, hash_)
        thread = new_ulid()
        give_workspace(repo, thread, hash_, workspace, say)
        repo.threads.add(thread, hash_)
    return ThreadInfo(thread, _workflow_of(store, hash_), hash_, True)


def resolve_node(repo: Repo, text: str) -> str:
    """A node hash from a hash or prefix; a thread id says which hash to give instead."""
    if is_ulid(text.strip().upper()):
        head = thread_info(repo, text).head
        raise UwfError(f"'{text}' is a thread; give one of its steps, e.g. its head {head} (`uwf thread steps` lists them)")
    return repo.nodes.resolve(text)


def _refuse_thread_id(repo: Repo, text: str) -> None:
    """A thread id where a step hash belongs: say which hash to give instead."""
    if not is_ulid(text.strip().upper()):
        return
    try:
        info = thread_info(repo, text)
    except UwfError:
        raise UwfError(f"'{text}' looks like a thread id, not a step hash: fork takes a step's hash (see `uwf thread steps THREAD`)") from None
    raise UwfError(
        f"'{text}' is a thread, not a step: fork takes a step's hash, e.g. its head {info.head} "
        f"(`uwf thread steps {info.thread}` lists the others)"
    )


def resume_thread(repo: Repo, thread: str, prompt: str, say: Callable[[str], None] | None = None) -> ThreadInfo:
    """Reactivate an archived thread with a new StartNode that resumes its old head."""
    store = repo.nodes
    info = thread_info(repo, thread)
    if info.active:
        raise UwfError(f"thread {info.thread} is still active; step it instead of resuming it")
    if not prompt.strip():
        raise UwfError("the prompt is empty")
    prompt = redacted_prompt(repo, prompt, say)
    _, old_start = start_of(store, info.head)
    # The budget goes on with the thread; like maxSteps, it counts the steps since this StartNode.
    start = StartNode(
        old_start.workflow, prompt, old_start.workspace, info.head, old_start.agents, old_start.max_tokens, old_start.max_cost,
        snapshot=old_start.snapshot,
    )
    with repo.backend.publishing():
        head = put_start(store, _resumed_files(repo, info, start, say))
        repo.threads.add(info.thread, head)
    return ThreadInfo(info.thread, old_start.workflow, head, True)


def _resumed_files(repo: Repo, info: ThreadInfo, start: StartNode, say: Callable[[str], None] | None = None) -> StartNode:
    """A resumed thread goes on with its files: its directory, restored from its head's snapshot
    when it is gone, snapshot as the new start; changes made by hand since are said (and kept:
    `uwf thread files` of the new start lists them)."""
    from .files import files_of, thread_workspace

    workspace = thread_workspace(repo, info.thread, start) if start.workspace else None
    tree = files_of(repo.nodes, info.head)
    if workspace and tree and not os.path.isdir(workspace):
        from ..workspace.materialize import checkout

        checkout(repo.nodes, tree, workspace)
    resumed = _with_files(repo, start, workspace, say=say, trusted=tree)
    if say is not None and tree and resumed.files and resumed.files != tree:
        from ..workspace.changes import tree_changes

        count = len(tree_changes(repo.nodes, tree, resumed.files))
        say(f"uwf: the workspace changed since the last snapshot ({count} path{'s' if count != 1 else ''}); "
            f"recorded with the resumed start (`uwf thread files` of it lists them)")
    return resumed


def fork_with_output(
    repo: Repo, step_hash: str, output: object, workspace: str | None = None, say: Callable[[str], None] | None = None
) -> ThreadInfo:
    """Fork from a copy of a step whose output a person replaced (agent 'human').

    The edited output is validated against the role's schema; the new thread's
    head is the copy, so the thread goes on from the overruled decision.
    """
    store = repo.nodes
    hash_ = store.resolve(step_hash)
    step = read_step(store, hash_)
    _, start = start_of(store, hash_)
    workflow = workflow_of(repo, start.workflow)
    role = workflow.roles.get(step.role)
    if role is None:
        raise UwfError(f"step {hash_} is for role '{step.role}', which workflow '{workflow.name}' does not have")
    with repo.backend.publishing():
        store.ensure_builtins()
        from .write import (
            write_step,  # only a fork with an edited output writes a step here
        )

        head = write_step(
            store,
            start=step.start,
            prev=step.prev,
            role=step.role,
            meta=role.meta,
            output=output,
            agent="human",
            instruction=step.instruction,
            detail={"agent": "human", "protocol": "edit", "editedFrom": hash_, "originalOutput": step.output},
            what=f"edited output of role '{step.role}'",
            files=step.files,
            files_before=step.files_before,
        )
        thread = new_ulid()
        from .files import give_workspace

        give_workspace(repo, thread, head, workspace, say)
        repo.threads.add(thread, head)
    return ThreadInfo(thread, start.workflow, head, True)
