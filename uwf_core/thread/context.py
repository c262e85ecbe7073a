"""Build a thread's context by walking its chain back from the head.

Head → prev → ... → the StartNode; if that StartNode resumes an earlier
head, the walk goes on there, so a resumed thread keeps its history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from ..errors import CorruptError, UwfError
from ..store.builtin_schemas import BUILTIN_HASHES
from ..store.cas import CasStore, Node
from .model import StartNode, StepContext, StepNode, ThreadContext

if TYPE_CHECKING:
    from ..repo import Repo

START_TYPE = BUILTIN_HASHES["start-node"]
STEP_TYPE = BUILTIN_HASHES["step-node"]


def read_start(store: CasStore, hash_: str) -> StartNode:
    node = store.get(hash_)
    if node.type != START_TYPE:
        raise UwfError(f"{hash_} is not a StartNode")
    return StartNode.from_payload(node.payload)


def read_step(store: CasStore, hash_: str) -> StepNode:
    node = store.get(hash_)
    if node.type != STEP_TYPE:
        raise UwfError(f"{hash_} is not a StepNode")
    return StepNode.from_payload(node.payload)


def thread_node(store: CasStore, hash_: str) -> Node:
    """A node that can be a thread's head: a StartNode or a StepNode."""
    node = store.get(hash_)
    if node.type not in (START_TYPE, STEP_TYPE):
        raise UwfError(f"{hash_} is neither a StartNode nor a StepNode")
    return node


def start_of(store: CasStore, head: str) -> tuple[str, StartNode]:
    """The StartNode a head belongs to, without walking the chain."""
    node = thread_node(store, head)
    start_hash = head if node.type == START_TYPE else node.payload["start"]
    return start_hash, read_start(store, start_hash)


def context_of(repo: Repo, head: str) -> ThreadContext:
    """The context behind a head, built once per Repo; a successor of a known head extends it."""
    context = repo.contexts.get(head)
    if context is None:
        context = build_context(repo.nodes, head, known=repo.contexts)
        repo.remember_context(context)
    return context


def build_context(store: CasStore, head: str, known: Mapping[str, ThreadContext] | None = None) -> ThreadContext:
    """The context behind `head`. With `known` contexts (by head), the walk stops at the first
    one it meets and extends it: a thread's next step costs one node, not the whole chain."""
    current_start_hash, current_start = start_of(store, head)
    if known:
        extended = _extend_known(store, head, current_start_hash, current_start, known)
        if extended is not None:
            return extended
    segments: list[list[StepContext]] = []
    since_start = None
    cursor: str | None = head
    while cursor is not None:
        node = thread_node(store, cursor)
        segment: list[StepContext] = []
        start_hash = cursor if node.type == START_TYPE else node.payload["start"]
        while node.type == STEP_TYPE:
            step = StepNode.from_payload(node.payload)
            if step.start != start_hash:
                raise CorruptError(f"step {node.hash} belongs to start {step.start}, not {start_hash}: the chain is broken")
            segment.append(_step_context(store, node.hash, step))
            node = thread_node(store, step.prev) if step.prev else store.get(start_hash)
        if node.hash != start_hash or node.type != START_TYPE:
            raise CorruptError(f"chain from {cursor} does not end at its StartNode {start_hash}")
        segment.reverse()
        segments.append(segment)
        if since_start is None:
            since_start = len(segment)
        cursor = node.payload.get("resumes")
    steps = [step for segment in reversed(segments) for step in segment]
    return ThreadContext(head, current_start_hash, current_start, steps, since_start or 0)


def _extend_known(
    store: CasStore, head: str, start_hash: str, start: StartNode, known: Mapping[str, ThreadContext]
) -> ThreadContext | None:
    newer: list[StepContext] = []
    cursor = head
    while cursor not in known:
        node = thread_node(store, cursor)
        if node.type != STEP_TYPE:
            return None  # reached the StartNode: nothing known on the way
        step = StepNode.from_payload(node.payload)
        if step.start != start_hash:
            raise CorruptError(f"step {node.hash} belongs to start {step.start}, not {start_hash}: the chain is broken")
        newer.append(_step_context(store, node.hash, step))
        cursor = step.prev or step.start
    base = known[cursor]
    newer.reverse()
    return ThreadContext(head, start_hash, start, [*base.steps, *newer], base.since_start + len(newer))


def _step_context(store: CasStore, hash_: str, step: StepNode) -> StepContext:
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
