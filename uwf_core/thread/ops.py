"""Thread operations: start, show, list, steps, fork, resume, kill, step details.

One public function per operation; the CLI and the TUI call these. Stepping
lives in step.py, rendering in thread_read.py.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..encoding.ids import is_ulid, new_ulid
from ..errors import NotFoundError, UwfError
from ..store.builtin_schemas import BUILTIN_HASHES
from ..store.cas import CasStore
from ..store.fs import threads as thread_index
from ..store.fs.files import Root
from ..workflow.ops import resolve_workflow_hash, workflow_from_node
from .context import START_TYPE, STEP_TYPE, build_context, read_step, start_of, thread_node
from .model import StartNode, StepContext


@dataclass(frozen=True)
class ThreadInfo:
    thread: str
    workflow: str  # the workflow node's hash
    head: str
    active: bool
    reason: str | None = None  # why it was archived: done, killed, max-steps
    completed_at: int | None = None

    @property
    def done(self) -> bool:
        return not self.active

    def to_json(self) -> dict:
        data = {"workflow": self.workflow, "thread": self.thread, "head": self.head, "done": self.done}
        if self.reason:
            data["reason"] = self.reason
        return data


def _workflow_of(store: CasStore, head: str) -> str:
    return start_of(store, head)[1].workflow


def resolve_thread_id(root: Root, text: str) -> str:
    """A thread id from an id or unique prefix (case-insensitive), active or archived."""
    wanted = text.strip().upper()
    if is_ulid(wanted):
        return wanted
    known = set(thread_index.load_threads(root)) | {r.get("thread") for r in thread_index.read_history(root)}
    matches = sorted(t for t in known if isinstance(t, str) and t.startswith(wanted))
    if not wanted or not matches:
        raise NotFoundError(f"no thread '{text}'")
    if len(matches) > 1:
        raise UwfError(f"thread prefix '{text}' is ambiguous: {', '.join(matches[:4])}{', ...' if len(matches) > 4 else ''}")
    return matches[0]


def thread_info(root: Root, thread: str, store: CasStore | None = None) -> ThreadInfo:
    store = store or CasStore(root)
    thread = resolve_thread_id(root, thread)
    head = thread_index.load_threads(root).get(thread)
    if head is not None:
        return ThreadInfo(thread, _workflow_of(store, head), head, True)
    record = thread_index.last_history_record(root, thread)
    if record is None:
        raise NotFoundError(f"no thread {thread}")
    workflow = record.get("workflow") or _workflow_of(store, record["head"])
    return ThreadInfo(thread, workflow, record["head"], False, record.get("reason"), record.get("completedAt"))


def active_thread(root: Root, thread: str, store: CasStore | None = None) -> ThreadInfo:
    info = thread_info(root, thread, store)
    if not info.active:
        raise UwfError(
            f"thread {info.thread} is archived ({info.reason or 'done'}); fork a step (`uwf thread fork`) "
            f"or resume it (`uwf thread resume`) to go on"
        )
    return info


def start_thread(
    root: Root,
    workflow: str,
    prompt: str,
    workspace: str | None = None,
    agents: dict[str, str] | None = None,
) -> ThreadInfo:
    store = CasStore(root)
    workflow_hash = resolve_workflow_hash(root, workflow)
    definition = workflow_from_node(store, workflow_hash)
    for role in agents or {}:
        if role not in definition.roles:
            raise UwfError(f"--agent {role}=...: workflow '{definition.name}' has no role '{role}' (roles: {', '.join(definition.roles)})")
    if workspace is not None:
        workspace = os.path.abspath(workspace)
        if not os.path.isdir(workspace):
            raise UwfError(f"workspace {workspace} is not a directory")
    if not prompt.strip():
        raise UwfError("the prompt is empty")
    store.ensure_builtins()
    start = StartNode(workflow_hash, prompt, workspace, None, dict(agents) if agents else None)
    head = store.put(BUILTIN_HASHES["start-node"], start.to_payload(), what="StartNode")
    thread = new_ulid()
    thread_index.add_thread(root, thread, head)
    return ThreadInfo(thread, workflow_hash, head, True)


def list_threads(root: Root, include_archived: bool = False) -> list[ThreadInfo]:
    """Active threads (and archived ones with `include_archived`), newest first."""
    store = CasStore(root)
    active = thread_index.load_threads(root)
    infos = {thread: ThreadInfo(thread, _workflow_of(store, head), head, True) for thread, head in active.items()}
    if include_archived:
        for record in thread_index.read_history(root):
            thread = record.get("thread")
            if thread in active or not isinstance(thread, str):
                continue
            infos[thread] = ThreadInfo(
                thread, record.get("workflow") or "", record.get("head") or "", False, record.get("reason"), record.get("completedAt")
            )
    return sorted(infos.values(), key=lambda info: info.thread, reverse=True)


def thread_steps(root: Root, thread: str) -> list[StepContext]:
    store = CasStore(root)
    info = thread_info(root, thread, store)
    return build_context(store, info.head).steps


def fork_thread(root: Root, node_hash: str) -> ThreadInfo:
    """A new thread whose head is an existing step (or start): O(1), nothing copied."""
    store = CasStore(root)
    hash_ = store.resolve(node_hash)
    thread_node(store, hash_)
    thread = new_ulid()
    thread_index.add_thread(root, thread, hash_)
    return ThreadInfo(thread, _workflow_of(store, hash_), hash_, True)


def resume_thread(root: Root, thread: str, prompt: str) -> ThreadInfo:
    """Reactivate an archived thread with a new StartNode that resumes its old head."""
    store = CasStore(root)
    info = thread_info(root, thread, store)
    if info.active:
        raise UwfError(f"thread {info.thread} is still active; step it instead of resuming it")
    if not prompt.strip():
        raise UwfError("the prompt is empty")
    _, old_start = start_of(store, info.head)
    start = StartNode(old_start.workflow, prompt, old_start.workspace, info.head, old_start.agents)
    head = store.put(BUILTIN_HASHES["start-node"], start.to_payload(), what="StartNode")
    thread_index.add_thread(root, info.thread, head)
    return ThreadInfo(info.thread, old_start.workflow, head, True)


def kill_thread(root: Root, thread: str) -> ThreadInfo:
    """Archive with reason 'killed', and terminate the agent of a step in progress."""
    from ..store.fs.locks import running_step, terminate_running_step

    store = CasStore(root)
    info = active_thread(root, thread, store)
    head = thread_index.archive_thread(root, info.thread, info.workflow, "killed")
    running = running_step(root, info.thread)
    if running is not None:
        terminate_running_step(running)
    return ThreadInfo(info.thread, info.workflow, head, False, "killed")


@dataclass(frozen=True)
class StepDetails:
    step: str
    role: str
    agent: str
    output: object
    detail_hash: str
    detail: object
    detail_type: str | None
    content: str | None  # the raw answer or body, when the detail names one
    prompt: str | None

    def to_json(self) -> dict:
        return {
            "step": self.step,
            "role": self.role,
            "agent": self.agent,
            "output": self.output,
            "detail": {"hash": self.detail_hash, "type": self.detail_type, "payload": self.detail},
            "content": self.content,
            "prompt": self.prompt,
        }


def step_details(root: Root, step_hash: str) -> StepDetails:
    store = CasStore(root)
    hash_ = store.resolve(step_hash)
    step = read_step(store, hash_)
    detail = store.get(step.detail)
    content = prompt = None
    if detail.type == BUILTIN_HASHES["detail"] and isinstance(detail.payload, dict):
        content = _text_node(store, detail.payload.get("content"))
        prompt = _text_node(store, detail.payload.get("prompt"))
    elif detail.type == BUILTIN_HASHES["content"]:
        content = detail.payload if isinstance(detail.payload, str) else None
    return StepDetails(hash_, step.role, step.agent, store.payload(step.output), step.detail, detail.payload, _title(store, detail.type), content, prompt)


def _text_node(store: CasStore, hash_: object) -> str | None:
    if not isinstance(hash_, str) or not store.has(hash_):
        return None
    payload = store.payload(hash_)
    return payload if isinstance(payload, str) else None


def _title(store: CasStore, type_hash: str) -> str | None:
    try:
        return store.title_of(type_hash)
    except UwfError:
        return None



def fork_with_output(root: Root, step_hash: str, output: object) -> ThreadInfo:
    """Fork from a copy of a step whose output a person replaced (agent 'human').

    The edited output is validated against the role's schema; the new thread's
    head is the copy, so the thread goes on from the overruled decision.
    """
    import time

    from .model import StepNode

    store = CasStore(root)
    hash_ = store.resolve(step_hash)
    step = read_step(store, hash_)
    _, start = start_of(store, hash_)
    workflow = workflow_from_node(store, start.workflow)
    role = workflow.roles.get(step.role)
    if role is None:
        raise UwfError(f"step {hash_} is for role '{step.role}', which workflow '{workflow.name}' does not have")
    store.ensure_builtins()
    new_output = store.put(role.meta, output, what=f"edited output of role '{step.role}'")
    now = int(time.time() * 1000)
    detail = store.put(
        BUILTIN_HASHES["detail"],
        {"agent": "human", "protocol": "edit", "editedFrom": hash_, "originalOutput": step.output, "startedAt": now, "completedAt": now},
    )
    copy = StepNode(step.start, step.prev, step.role, new_output, detail, "human", step.instruction, now, now)
    head = store.put(STEP_TYPE, copy.to_payload(), what="StepNode")
    thread = new_ulid()
    thread_index.add_thread(root, thread, head)
    return ThreadInfo(thread, start.workflow, head, True)


STATUS_RUNNING = "running"
STATUS_WAITING = "waiting"
STATUS_FAILED = "failed"


def thread_statuses(root: Root, infos: list[ThreadInfo]) -> dict[str, str]:
    """running / waiting / failed for active threads (failed: the last attempt from the
    current head failed), the archive reason (done / killed / max-steps) for the others."""
    from ..store.fs.locks import running_step
    from ..store.fs.runs import read_runs

    last_run: dict[str, dict] = {}
    for record in read_runs(root):
        last_run[record.get("thread")] = record
    statuses = {}
    for info in infos:
        if not info.active:
            statuses[info.thread] = info.reason or "done"
        elif running_step(root, info.thread) is not None:
            statuses[info.thread] = STATUS_RUNNING
        else:
            record = last_run.get(info.thread)
            failed = record is not None and record.get("status") != "ok" and record.get("head") == info.head
            statuses[info.thread] = STATUS_FAILED if failed else STATUS_WAITING
    return statuses
