"""A role that fans out (`map:` in the workflow): one child thread per item of a list taken from
the thread, all started at once, stepped at most `maxParallel` at a time, joined in item order as
the role's output, `{results: [{index, thread, status, output | error}]}`.

Stateless like every step: a child's id derives from the parent thread, its head, the role and
the item's index (encoding/ids.derived_ulid), so a map step stopped half-way (a crash, a failed
child, a cancel) finds the same children when it is stepped again and goes on from where they
are; no child is started twice. Children are ordinary threads: anyone may step one meanwhile (by
hand, a worker); the map waits for it. The parent's lease says how many are done.
"""

from __future__ import annotations

import threading
import time

from ...encoding.records import record, replace
from ...errors import LockedError, UwfError
from ...telemetry.spans import current as current_span
from ..attempt import MAP_WAITING, StepError, StepOptions

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any, Callable

    from ...repo import Repo
    from ...store.base import StepLease
    from ...thread.model import ThreadContext
    from ...thread.moderator import Decision
    from ...thread.ops import ThreadInfo
    from ...workflow.model import MapSpec, Workflow
    from ..attempt import Committed

    RunThread = Callable[[Repo, str, StepOptions], object]  # engine/step.py's run_thread

MAP_AGENT = "uwf-map"
MAP_PROTOCOL = "map"
MAX_CHILDREN = 1000
MAX_DEPTH = 8  # maps within maps, in one process
BUSY_POLL_SECONDS = 0.5  # a child someone else is stepping: look again after this


@record(frozen=True)
class Child:
    index: int
    thread: str


@record(frozen=True)
class ChildResult:
    index: int
    thread: str
    status: str  # done, failed
    output: object = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"index": self.index, "thread": self.thread, "status": self.status}
        if self.status == "done":
            data["output"] = self.output
        else:
            data["error"] = self.error or "failed"
        return data


def run_map(
    repo: Repo, info: ThreadInfo, workflow: Workflow, context: ThreadContext, decision: Decision,
    lease: StepLease, options: StepOptions, deadline: float | None, started_ms: int, run_thread: RunThread,
) -> str:
    """The map step: children made, stepped (with `run_thread`, the step engine's, which calls
    this module: given, not imported) and joined; returns the StepNode written."""
    from ...workflow.ops import resolve_workflow_hash
    from ..record import write_answer

    role = workflow.roles[decision.role]
    spec = role.map
    assert spec is not None  # engine/step.py maps only a role that has one
    if options.map_depth >= MAX_DEPTH:  # put refuses cycles of maps; a rollback could make one
        raise StepError(f"maps nested {MAX_DEPTH} deep: role '{decision.role}' would start children deeper still")
    items = map_items(context, spec, decision.role)
    child_workflow = resolve_workflow_hash(repo, spec.workflow)
    children = _ensure_children(repo, info, context, decision.role, spec, items, child_workflow)
    traced = current_span()
    if traced is not None:  # each child is a trace of its own (its thread's): the map's span names them
        traced.put({"uwf.map.children": [child.thread for child in children], "uwf.map.workflow": child_workflow})
    if options.worker is not None:
        _queue_children(repo, children, spec)  # workers on any host step them; raises until all have ended
    else:
        _step_children(repo, children, spec, lease, options, deadline, run_thread)
    ends = _ends(repo, children)
    results = [_result(repo, child, ends) for child in children]
    failed = [result for result in results if result.status != "done"]
    if failed and spec.on_failure == "fail":
        first = failed[0]
        raise StepError(f"child {first.index + 1} of {len(children)} (thread {first.thread}) failed: {first.error}")
    usage = children_usage(repo, [head for head, _ in ends.values()])
    detail = {"workflow": child_workflow, "children": [child.thread for child in children], **usage}
    return write_answer(
        repo.nodes, context=context, role=role, agent=MAP_AGENT, protocol=MAP_PROTOCOL, prompt=None, answer=None,
        output={"results": [result.to_json() for result in results]}, detail=detail, secrets=repo.secrets,
        instruction=decision.instruction, started_ms=started_ms,
    )


def map_items(context: ThreadContext, spec: MapSpec, role: str) -> list[object]:
    """The list to fan out over: `over` evaluated against the last output (the StartNode at
    $START), as a route's prompt sees it, with $first/$last. A single value is a list of one
    (JSONata's sequences); nothing is an empty list."""
    from ...thread.moderator import role_functions
    from ...workflow.jsonata_expr import evaluate

    last = context.last_step
    data = last.output if last is not None else context.start.to_payload()
    try:
        value = evaluate(spec.over, data, None, role_functions(context))
    except UwfError as exc:
        raise StepError(f"map of role '{role}': over ({spec.over}) failed: {exc.message}") from None
    items = [] if value is None else value if isinstance(value, list) else [value]
    if len(items) > MAX_CHILDREN:
        raise StepError(f"map of role '{role}': over ({spec.over}) gave {len(items)} items; at most {MAX_CHILDREN} children")
    return items


def child_ids(repo: Repo, parent: str, head: str, role: str, count: int) -> list[str]:
    """The children's thread ids of a map step of `parent` at `head`: the same on every call."""
    from ...encoding.ids import derived_ulid, ulid_timestamp_ms
    from ...thread.nodes import STEP_TYPES

    node = repo.nodes.get(head)
    completed = node.payload.get("completedAt") if node.type in STEP_TYPES else None
    ms = completed if isinstance(completed, int) else ulid_timestamp_ms(parent)
    # One millisecond apart: siblings' ids differ in their first ten characters, as a list shows them.
    return [derived_ulid(ms + index, f"{parent}/{head}/{role}/{index}".encode()) for index in range(count)]


def active_children(repo: Repo, info: ThreadInfo) -> list[str]:
    """The children of the map step a thread is at, still active (none when its next role does
    not map, or cannot be routed)."""
    ids = _children_at(repo, info)
    heads = repo.threads.heads()
    return [child for child in ids if child in heads]


def _children_at(repo: Repo, info: ThreadInfo) -> list[str]:
    """The ids the children of the map step at the thread's head have (started or not); none
    when its next role does not map, or cannot be routed."""
    from ...thread.context import context_of
    from ...thread.moderator import evaluate
    from ...workflow.ops import workflow_of

    try:
        context = context_of(repo, info.head)
        workflow = workflow_of(repo, context.start.workflow)
        decision = evaluate(workflow, context)
        role = None if decision.is_end else workflow.roles.get(decision.role)
        if role is None or role.map is None:
            return []
        return child_ids(repo, info.thread, info.head, decision.role, len(map_items(context, role.map, decision.role)))
    except UwfError:
        return []


def map_progress(repo: Repo, info: ThreadInfo) -> tuple[int, int] | None:
    """(ended, total) of the children of the map step a thread is waiting at; None when its next
    step is not a map, or the map has not started its children."""
    ids = _children_at(repo, info)
    heads = repo.threads.heads()
    archived = {record.thread for record in repo.threads.history()} if ids else set()
    started = [child for child in ids if child in heads or child in archived]
    if not started:
        return None
    return sum(child not in heads for child in started), len(ids)


def _ensure_children(
    repo: Repo, info: ThreadInfo, context: ThreadContext, role: str, spec: MapSpec, items: list[object], workflow: str
) -> list[Child]:
    """Start the children not started yet (one per item, in item order)."""
    from ...thread.ops import start_thread

    ids = child_ids(repo, info.thread, info.head, role, len(items))
    heads = repo.threads.heads()
    archived = {record.thread for record in repo.threads.history()} if any(thread not in heads for thread in ids) else set()
    children = []
    for index, (thread, item) in enumerate(zip(ids, items)):
        if thread not in heads and thread not in archived:
            prompt = _child_prompt(spec, item, index, context.start.prompt, role)
            start_thread(repo, workflow, prompt, thread=thread)
        children.append(Child(index, thread))
    return children


def _child_prompt(spec: MapSpec, item: object, index: int, parent_prompt: str, role: str) -> str:
    """The item itself (a string as it is, anything else as JSON), or the map's template rendered
    with {item, index (from 0), number (from 1), prompt (the parent's task)}."""
    import json

    from ...workflow.templates import render

    if spec.prompt is None:
        text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
    else:
        try:
            text = render(spec.prompt, {"item": item, "index": index, "number": index + 1, "prompt": parent_prompt})
        except UwfError as exc:
            raise StepError(f"map of role '{role}': the prompt of item {index} failed: {exc.message}") from None
    if not text.strip():
        raise StepError(f"map of role '{role}': item {index} gives an empty prompt")
    return text


def _step_children(
    repo: Repo, children: list[Child], spec: MapSpec, lease: StepLease, options: StepOptions, deadline: float | None, run_thread: RunThread
) -> None:
    """Run every child still active to its end, `maxParallel` at a time, in threads of this
    process. With onFailure: fail, a failed child stops the others being started. A cancel of
    the step (or Ctrl-C) cancels the children's steps: they stay where they are."""
    from concurrent.futures import ThreadPoolExecutor, wait

    from ..contain.process import Cancel

    pending = [child for child in children if child.thread in repo.threads.heads()]
    if not pending:
        return
    done = len(children) - len(pending)
    progress = threading.Lock()
    stop = threading.Event()
    cancel = Cancel()  # the children's: set from the step's own, or by Ctrl-C
    lease.update(waiting=f"{done} of {len(children)} children ended")

    def lane(child: Child) -> None:
        nonlocal done
        if stop.is_set() or cancel.is_set():
            return
        ok = _run_child(repo, child, replace(options, cancel=cancel), deadline, run_thread)
        with progress:
            done += 1
            lease.update(waiting=f"{done} of {len(children)} children ended")
        if not ok and spec.on_failure == "fail":
            stop.set()

    with ThreadPoolExecutor(min(spec.max_parallel or len(pending), len(pending)), thread_name_prefix="uwf-map") as pool:
        futures = [pool.submit(lane, child) for child in pending]
        try:
            while wait(futures, timeout=0.1).not_done:
                if _cancelled(options):
                    assert options.cancel is not None  # _cancelled: it is set
                    cancel.set(options.cancel.reason or "the map step was cancelled")
        except BaseException:
            cancel.set("interrupted")
            raise
        for future in futures:
            future.result()
    if cancel.is_set():
        raise StepError(f"the map step was cancelled{cancel.why()}; its children stay where they are (step it again to go on)", "killed")


def _queue_children(repo: Repo, children: list[Child], spec: MapSpec) -> None:
    """Under a worker: queue the children still to run, so that `maxParallel` are queued or
    stepping at a time, for the workers to claim; raise MAP_WAITING while any is unfinished. A
    child whose last step failed is not queued again: it is failed (the map fails, or collects it)."""
    heads = repo.threads.heads()
    queued = {entry.thread for entry in repo.backend.queue.entries()}
    unfinished, failed = [], 0
    for child in children:
        if child.thread not in heads:
            continue  # ended
        if child.thread not in queued and _failed_at(repo, child.thread, heads[child.thread]):
            failed += 1
            continue
        unfinished.append(child)
    if failed and spec.on_failure == "fail":
        return  # the caller reports the first failure
    if not unfinished:
        return
    room = (spec.max_parallel or len(unfinished)) - sum(child.thread in queued for child in unfinished)
    for child in [child for child in unfinished if child.thread not in queued][: max(room, 0)]:
        repo.backend.queue.enqueue(child.thread)
    at_a_time = f", {spec.max_parallel} at a time" if spec.max_parallel else ""
    raise StepError(f"waiting for its {len(children)} children, which workers step{at_a_time}", MAP_WAITING)  # one record per map step


def _failed_at(repo: Repo, thread: str, head: str) -> bool:
    """Whether the thread's last attempt, from its head now, failed (a worker dequeued it then)."""
    attempts = repo.runs.read(thread)
    return bool(attempts) and not attempts[-1].ok and attempts[-1].head == head


def _run_child(repo: Repo, child: Child, options: StepOptions, deadline: float | None, run_thread: RunThread) -> bool:
    """Step one child to its end; False when a step of it failed. A child someone else steps
    meanwhile is waited for."""
    outer = options.on_output
    prefix = f"[child {child.index + 1}] "

    def landed(node: Committed) -> None:
        assert outer is not None  # passed as on_commit only then
        outer(f"{prefix}{node.role} ({node.agent}) -> {node.head}" + (f"  {node.note}" if node.note else ""))

    mine = replace(
        options, on_output=(lambda line: outer(prefix + line)) if outer else None, on_commit=landed if outer else None, candidate_of=None,
        map_depth=options.map_depth + 1,
    )
    while child.thread in repo.threads.heads():
        if _cancelled(options):
            return False
        if deadline is not None:
            mine = replace(mine, timeout=max(0.001, deadline - time.monotonic()))
        try:
            run_thread(repo, child.thread, mine)
        except LockedError:
            time.sleep(BUSY_POLL_SECONDS)  # stepped by hand or by a worker: wait for it
        except UwfError:
            return False  # on record in the child's runs log; its head stays
    return True


def _cancelled(options: StepOptions) -> bool:
    return options.cancel is not None and options.cancel.is_set()


def _ends(repo: Repo, children: list[Child]) -> dict[str, tuple[str, str | None]]:
    """Each child's head and, when it was archived, why (None: still active): one read of the heads
    and, when a child ended, one of the archive, for all of them."""
    heads = repo.threads.heads()
    ends: dict[str, tuple[str, str | None]] = {c.thread: (heads[c.thread], None) for c in children if c.thread in heads}
    if len(ends) < len(children):
        wanted = {child.thread for child in children} - set(ends)
        for record in repo.threads.history():  # oldest first: a thread's last record wins
            if record.thread in wanted:
                ends[record.thread] = (record.head, record.reason)
    return ends


def _result(repo: Repo, child: Child, ends: dict[str, tuple[str, str | None]]) -> ChildResult:
    """How a child ended: done (its last output), archived for another reason, or still active
    after a failed step (the last attempt's error)."""
    from ...thread.context import context_of

    head, reason = ends[child.thread]
    if reason == "done":
        last = context_of(repo, head).last_step
        return ChildResult(child.index, child.thread, "done", last.output if last is not None else None)
    if reason is not None:
        return ChildResult(child.index, child.thread, "failed", error=f"ended: {reason}")
    attempts = repo.runs.read(child.thread)
    error = attempts[-1].error if attempts and not attempts[-1].ok else None
    return ChildResult(child.index, child.thread, "failed", error=error or "it did not finish")


def children_usage(repo: Repo, heads: list[str]) -> dict[str, Any]:
    """The children's tokens (their chains behind `heads`), for the ledger to roll up under the map step: per model
    (`childUsage`), and in all (`usage`, only when every child step recorded what it spent, so
    the ledger's count of steps that recorded nothing stays true)."""
    from ...llm.usage import Usage
    from ...thread.context import context_of
    from ...thread.spend import detail_parts, usage_recorded

    by_model: dict[tuple[str, ...], Usage] = {}
    recorded = True
    for head in heads:
        for step in context_of(repo, head, with_checks=True).steps:
            detail = repo.nodes.get(step.detail).payload
            recorded = recorded and usage_recorded(detail)
            for names, usage in detail_parts(detail):
                by_model[names] = by_model.get(names, Usage()) + usage
    total = Usage()
    for usage in by_model.values():
        total = total + usage
    rolled: dict[str, Any] = {"childUsage": [{"models": list(names), "usage": usage.to_json()} for names, usage in by_model.items()]}
    if recorded:
        rolled["usage"] = total.to_json()
    return rolled
