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
from .model import LazySteps, StepContext, StepNode, ThreadContext
from .nodes import START_TYPES, STEP_TYPES, read_start, thread_node

if TYPE_CHECKING:
    from ..repo import Repo


def context_of(repo: Repo, head: str, *, keep: bool = True) -> ThreadContext:
    """The context behind a head, built once per Repo. `keep=False` writes nothing to the root
    (a missing chain record is computed, not kept)."""
    context = repo.contexts.get(head)
    if context is None:
        context = build_context(repo.nodes, head, keep=keep)
        repo.remember_context(context)
    return context


def build_context(store: CasStore, head: str, *, keep: bool = True) -> ThreadContext:
    record = chain_record(store, head, keep=keep)
    start = read_start(store, record.start)
    return ThreadContext(
        head,
        record.start,
        start,
        LazySteps(record.count, newest_step(store, head), _reader(store)),
        record.since_start,
        first_of_role=dict(record.first),
        last_of_role=dict(record.last),
        role_counts=dict(record.roles),
        load_step=lambda hash_: step_context(store, hash_, StepNode.from_payload(store.get(hash_).payload)),
    )


def newest_step(store: CasStore, head: str | None) -> str | None:
    """The newest StepNode at or behind `head`, through the heads that StartNodes resume."""
    while head is not None:
        node = thread_node(store, head)
        if node.type in STEP_TYPES:
            return head
        head = node.payload.get("resumes")
    return None


def _reader(store: CasStore):
    """`older(hash)` for LazySteps: a step's context and the step before it, checking that each
    prev belongs to the same StartNode as the step that names it."""
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
            expected[step.prev] = step.start
            return step_context(store, hash_, step), step.prev
        start_node = store.get(step.start)
        if start_node.type not in START_TYPES:
            raise CorruptError(f"chain from {hash_} does not end at its StartNode {step.start}")
        return step_context(store, hash_, step), newest_step(store, start_node.payload.get("resumes"))

    return older


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
