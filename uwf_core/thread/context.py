"""A thread's context: its StartNode and its steps, from a head.

The chain index (chain_index.py) says how many steps lie behind a head and where each role's
first and last step are, so building a context reads a handful of nodes whatever the chain's
length; steps are read back from the head only as far as they are used (the moderator's last
step, the prompt's history, a condition's window). A StartNode that resumes an earlier head
continues the walk there, so a resumed thread keeps its history.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import CorruptError
from ..store.cas import CasStore
from .chain_index import chain_record
from .model import LazySteps, StepContext, StepNode, ThreadContext, is_check_role
from .nodes import START_TYPES, STEP_TYPES, read_start, read_step, thread_node

if TYPE_CHECKING:
    from typing import Callable

    from ..repo import Repo

CACHE_CONTEXTS = 64  # thread contexts kept by head on a Repo (a TUI browses many threads)


def context_of(repo: Repo, head: str, *, keep: bool = True, with_checks: bool = False) -> ThreadContext:
    """The context behind a head, built once per Repo. `keep=False` writes nothing to the root
    (a missing chain record is computed, not kept). `with_checks`: its steps include uwf's checks
    (`$supervisor`, `$summary`), for showing a thread; never for routing."""
    if with_checks:
        return build_context(repo.nodes, head, keep=keep, with_checks=True)
    context = repo.contexts.get(head)
    if context is None:
        context = build_context(repo.nodes, head, keep=keep)
        keep_context(repo, context)
    return context


def keep_context(repo: Repo, context: ThreadContext) -> None:
    """Kept on the Repo for the next step from this head (`thread run`'s); a head's chain never
    changes, so a kept context never goes stale: only the oldest is let go."""
    if len(repo.contexts) >= CACHE_CONTEXTS:
        repo.contexts.pop(next(iter(repo.contexts)))
    repo.contexts[context.head] = context


def build_context(store: CasStore, head: str, *, keep: bool = True, with_checks: bool = False) -> ThreadContext:
    record = chain_record(store, head, keep=keep)
    start = read_start(store, record.start)
    count = record.count + (record.checks if with_checks else 0)
    return ThreadContext(
        head,
        record.start,
        start,
        LazySteps(count, newest_step(store, head, with_checks=with_checks), _reader(store, with_checks)),
        record.since_start,
        first_of_role=dict(record.first),
        last_of_role=dict(record.last),
        role_counts=dict(record.roles),
        load_step=lambda hash_: step_context(store, hash_, read_step(store, hash_)),
    )


def newest_step(store: CasStore, head: str | None, *, with_checks: bool = False) -> str | None:
    """The newest StepNode of a workflow role at or behind `head` (uwf's checks passed over unless
    `with_checks`), through the heads that StartNodes resume."""
    while head is not None:
        node = thread_node(store, head)
        if node.type in STEP_TYPES:
            if with_checks or not is_check_role(node.payload.get("role")):
                return head
            head = node.payload.get("prev") or node.payload["start"]
        else:
            head = node.payload.get("resumes")
    return None


def _reader(store: CasStore, with_checks: bool = False) -> Callable[[str], tuple[StepContext, str | None]]:
    """`older(hash)` for LazySteps: a step's context and the step before it (uwf's checks passed
    over unless `with_checks`), checking that each prev belongs to the same StartNode as the step
    that names it."""
    expected: dict[str, str] = {}

    def older(hash_: str) -> tuple[StepContext, str | None]:
        node = thread_node(store, hash_)
        if node.type not in STEP_TYPES:
            raise CorruptError(f"{hash_} is not a StepNode: the chain is broken")
        step = StepNode.from_payload(node.payload)
        start = expected.pop(hash_, step.start)
        if step.start != start:
            raise CorruptError(f"step {hash_} belongs to start {step.start}, not {start}: the chain is broken")
        if step.prev:
            prev = step.prev
            while not with_checks and (check := _check_before(store, prev, step.start)) is not None:
                prev = check  # uwf's checks are not steps of the workflow
            if prev != step.start:
                expected[prev] = step.start
                return step_context(store, hash_, step), prev
        start_node = thread_node(store, step.start)
        if start_node.type not in START_TYPES:
            raise CorruptError(f"chain from {hash_} does not end at its StartNode {step.start}")
        return step_context(store, hash_, step), newest_step(store, start_node.payload.get("resumes"), with_checks=with_checks)

    return older


def _check_before(store: CasStore, hash_: str, start: str) -> str | None:
    """What comes before `hash_` when it is a check of this start (its prev, or the StartNode when
    it has none); None when it is a step of a role."""
    node = thread_node(store, hash_)
    if node.type not in STEP_TYPES or not is_check_role(node.payload.get("role")):
        return None
    if node.payload.get("start") != start:
        raise CorruptError(f"step {hash_} belongs to start {node.payload.get('start')}, not {start}: the chain is broken")
    return node.payload.get("prev") or start


def step_context(store: CasStore, hash_: str, step: StepNode) -> StepContext:
    return StepContext(
        hash=hash_,
        role=step.role,
        output_hash=step.output,
        detail=step.detail,
        agent=step.agent,
        start=step.start,
        instruction=step.instruction,
        started_at=step.started_at,
        completed_at=step.completed_at,
        load_output=store.payload,
    )
