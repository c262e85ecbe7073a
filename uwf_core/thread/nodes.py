"""Reading a thread's nodes by kind: StartNode, StepNode, or either (a head)."""

from __future__ import annotations

from ..errors import UwfError
from ..store.builtin_schemas import (
    BUILTIN_HASHES,
    START_NODE_WITH_BUDGET,
    START_WITH_BUDGET_HASH,
)
from ..store.cas import CasStore, Node
from .model import StartNode, StepNode

START_TYPE = BUILTIN_HASHES["start-node"]
START_TYPES = frozenset({START_TYPE, START_WITH_BUDGET_HASH})  # a StartNode with a budget has its own schema
STEP_TYPE = BUILTIN_HASHES["step-node"]


def put_start(store: CasStore, start: StartNode) -> str:
    """Store a StartNode: under the start-node schema, or the one that allows a budget."""
    store.ensure_builtins()
    type_hash = START_TYPE
    if start.has_budget:
        type_hash = store.put_schema(START_NODE_WITH_BUDGET)
    return store.put(type_hash, start.to_payload(), what="StartNode")


def read_start(store: CasStore, hash_: str) -> StartNode:
    node = store.get(hash_)
    if node.type not in START_TYPES:
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
    if node.type != STEP_TYPE and node.type not in START_TYPES:
        raise UwfError(f"{hash_} is neither a StartNode nor a StepNode")
    return node


def start_of(store: CasStore, head: str) -> tuple[str, StartNode]:
    """The StartNode a head belongs to, without walking the chain."""
    node = thread_node(store, head)
    start_hash = head if node.type in START_TYPES else node.payload["start"]
    return start_hash, read_start(store, start_hash)
