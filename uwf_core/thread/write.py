"""The one place a StepNode is written (output, detail, then the step), and the check that an
agent's answer is a StepNode continuing the head. Pure CAS: no processes, no heads moved."""

from __future__ import annotations

import time

from ..encoding.ids import is_cas_ref
from ..errors import UwfError
from ..store.builtin_schemas import BUILTIN_HASHES
from ..store.cas import CasStore
from .chain_index import remember_step
from .history import remember_entry
from .model import StepNode, ThreadContext, is_check_role
from .nodes import STEP_TYPES, put_node, put_step


class InvalidStepError(UwfError):
    """An agent answered with something that is not the StepNode it was asked for."""


def write_step(
    store: CasStore,
    *,
    start: str,
    prev: str | None,
    role: str,
    meta: str,
    output: object,
    agent: str,
    detail: dict,
    instruction: str | None = None,
    started_ms: int | None = None,
    what: str | None = None,
    files: str | None = None,
    files_before: str | None = None,
    history: bool = True,
) -> str:
    """Store output, detail and the StepNode after `prev` (None: first after `start`); returns its hash.
    `history=False` leaves its history entry to the first prompt that shows it (thread/history.py
    rebuilds a missing one): a python agent's step, which no prompt needed, writes two nodes fewer."""
    now = int(time.time() * 1000)
    output_hash = put_node(store, meta, output, what or f"output of role '{role}'")
    detail = {**detail, "startedAt": started_ms or now, "completedAt": now}
    detail_hash = put_node(store, BUILTIN_HASHES["detail"], detail, "detail")
    step = StepNode(start, prev, role, output_hash, detail_hash, agent, instruction, started_ms or now, now, files, files_before)
    return store_step(store, step, history=history)


def store_step(store: CasStore, step: StepNode, *, history: bool = True) -> str:
    """Store a StepNode with its derived records (callers batch them with it)."""
    step_hash = put_step(store, step)
    chain = remember_step(store, step_hash, step.prev or step.start, step.role)  # its chain record: the next step reads no history
    if history and not is_check_role(step.role):  # agents' prompts never show uwf's checks
        remember_entry(store, step_hash, step, chain.count)  # how later prompts show it
    return step_hash


def next_step_links(context: ThreadContext) -> tuple[str, str | None]:
    """(start, prev) of the step that continues `context`'s head."""
    return context.start_hash, None if context.head_is_start else context.head


def check_step_node(store: CasStore, answer: str, context: ThreadContext, role: str, meta: str, agent: str) -> None:
    """Refuse anything but a valid StepNode that continues this thread's head for this role."""
    from ..store.schemas import validation_errors

    who = f"agent '{agent}'"
    if not is_cas_ref(answer):
        raise InvalidStepError(f"{who} printed {answer[:80]!r} as its last line, which is not a node hash")
    if not store.has(answer):
        raise InvalidStepError(f"{who} answered {answer}, which is not in the store")
    node = store.get(answer)
    if node.type not in STEP_TYPES:
        raise InvalidStepError(f"{who} answered {answer}, which is not a StepNode (its type is {node.type})")
    step = StepNode.from_payload(node.payload)
    if step.start != context.start_hash:
        raise InvalidStepError(
            f"{who} answered {answer}, a StepNode of another thread (its start is {step.start}, this thread's is {context.start_hash})"
        )
    expected_prev = next_step_links(context)[1]
    if step.prev != expected_prev:
        raise InvalidStepError(f"{who} answered {answer}, whose prev is {step.prev} but the head is {expected_prev}")
    if step.role != role:
        raise InvalidStepError(f"{who} answered {answer} for role '{step.role}', but role '{role}' was asked for")
    for name in ("output", "detail"):
        if not store.has(getattr(step, name)):
            raise InvalidStepError(f"{who} answered {answer}, whose {name} {getattr(step, name)} is not in the store")
    output = store.get(step.output)
    errors = validation_errors(store.schema(meta), output.payload, cache_key=meta)
    if errors:
        raise InvalidStepError(
            f"Validation failed for schema {meta}: {who} answered {answer}, whose output does not match role '{role}''s schema: {errors[0]}"
        )
