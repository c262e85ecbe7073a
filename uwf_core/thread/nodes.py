"""The thread layer's door to the CAS: a thread's nodes read by kind (StartNode, StepNode, or
either: a head), and every node of a thread put through one function. thread/ reads and writes
nodes here, so what one step reads and writes has one place to be seen."""

from __future__ import annotations

from ..errors import UwfError
from ..store.builtin_schemas import (
    BUILTIN_HASHES,
    START_NODE_WITH_BUDGET,
    START_NODE_WITH_FILES,
    START_WITH_BUDGET_HASH,
    START_WITH_FILES_HASH,
    STEP_NODE_WITH_FILES,
    STEP_WITH_FILES_HASH,
)
from ..store.cas import CasStore, Node
from .model import StartNode, StepNode

START_TYPE = BUILTIN_HASHES["start-node"]
START_TYPES = frozenset({START_TYPE, START_WITH_BUDGET_HASH, START_WITH_FILES_HASH})  # with a budget, with files
STEP_TYPE = BUILTIN_HASHES["step-node"]
STEP_TYPES = frozenset({STEP_TYPE, STEP_WITH_FILES_HASH})  # a StepNode that names the workspace's files has its own
THREAD_TYPES = START_TYPES | STEP_TYPES


def step_type(store: CasStore, step: StepNode) -> str:
    """The schema a StepNode is stored under: the plain one, or the one with files."""
    if step.files is None and step.files_before is None:
        return STEP_TYPE
    return store.put_schema(STEP_NODE_WITH_FILES)


def put_node(store: CasStore, type_hash: str, payload: object, what: str) -> str:
    """A node of a thread (an output, a detail, a StepNode, a history entry), checked against its
    schema; `what` names it in the error when it does not match."""
    return store.put(type_hash, payload, what=what)


def put_step(store: CasStore, step: StepNode, what: str = "StepNode") -> str:
    return put_node(store, step_type(store, step), step.to_payload(), what)


def put_start(store: CasStore, start: StartNode) -> str:
    """Store a StartNode: under the start-node schema, or the one that allows a budget."""
    store.ensure_builtins()
    type_hash = START_TYPE
    if start.has_files:
        type_hash = store.put_schema(START_NODE_WITH_FILES)
    elif start.has_budget:
        type_hash = store.put_schema(START_NODE_WITH_BUDGET)
    return put_node(store, type_hash, start.to_payload(), "StartNode")


def read_start(store: CasStore, hash_: str) -> StartNode:
    return StartNode.from_payload(_typed(store, hash_, START_TYPES, "is not a StartNode").payload)


def read_step(store: CasStore, hash_: str) -> StepNode:
    return StepNode.from_payload(_typed(store, hash_, STEP_TYPES, "is not a StepNode").payload)


def thread_node(store: CasStore, hash_: str) -> Node:
    """A node that can be a thread's head: a StartNode or a StepNode."""
    return _typed(store, hash_, THREAD_TYPES, "is neither a StartNode nor a StepNode")


def _typed(store: CasStore, hash_: str, types: frozenset, wrong: str) -> Node:
    """The thread layer's one read of its nodes from the CAS, with their kind checked."""
    node = store.get(hash_)
    if node.type not in types:
        raise UwfError(f"{hash_} {wrong}")
    return node


def start_of(store: CasStore, head: str) -> tuple[str, StartNode]:
    """The StartNode a head belongs to, without walking the chain."""
    node = thread_node(store, head)
    start_hash = head if node.type in START_TYPES else node.payload["start"]
    return start_hash, read_start(store, start_hash)


def starts_of(store: CasStore, head: str) -> set[str]:
    """The StartNodes of a chain (the current one and those it resumes), reading only them."""
    starts: set[str] = set()
    cursor: str | None = head
    while cursor is not None:
        start_hash, start = start_of(store, cursor)
        if start_hash in starts:
            break
        starts.add(start_hash)
        cursor = start.resumes
    return starts
