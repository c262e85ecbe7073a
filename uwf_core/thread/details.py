"""Read models for one step and for lists of threads: what the CLI's step-details and the TUI show."""

from __future__ import annotations

from ..encoding.records import record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import UwfError
from ..store.builtin_schemas import BUILTIN_HASHES, PROMPT_HASH
from ..store.cas import CasStore
from ..workflow.ops import workflow_of
from .nodes import read_start, read_step
from .ops import ThreadInfo

if TYPE_CHECKING:
    from typing import Any

    from ..repo import Repo
    from ..store.records import RunRecord


@record(frozen=True)
class StepDetails:
    """One step read whole from its nodes, once, for `uwf thread step-details` and the TUI's step view."""

    step: str
    role: str
    agent: str
    output: object
    detail_hash: str
    detail: object
    detail_type: str | None
    content: str | None  # the raw answer or body, when the detail names one
    prompt: str | None
    schema: dict[str, Any] | None = None  # the role's output schema (None when the workflow no longer has the role)
    run: RunRecord | None = None  # the attempt that wrote it (runs.jsonl): how its agent was contained, what it wrote outside

    def to_json(self) -> dict[str, Any]:
        data = {
            "step": self.step,
            "role": self.role,
            "agent": self.agent,
            "output": self.output,
            "detail": {"hash": self.detail_hash, "type": self.detail_type, "payload": self.detail},
            "content": self.content,
            "prompt": self.prompt,
        }
        if self.run is not None and self.run.containment:
            data["containment"] = self.run.containment
        if self.run is not None and self.run.outside is not None and not self.run.outside.empty:
            data["outside"] = self.run.outside.to_dict()
        return data


def step_details(repo: Repo, step_hash: str, runs: list[RunRecord] | None = None) -> StepDetails:
    """A step by hash or prefix, its output in its schema's field order (the order a person wrote, not
    CBOR's), with the attempt that wrote it: from `runs` when the caller has them (a timeline), else
    looked up."""
    store = repo.nodes
    hash_ = store.resolve(step_hash)
    step = read_step(store, hash_)
    detail = store.get(step.detail)
    content = prompt = None
    if detail.type == BUILTIN_HASHES["detail"] and isinstance(detail.payload, dict):
        content = _text_node(store, detail.payload.get("content"))
        prompt = _text_node(store, detail.payload.get("prompt"))
    elif detail.type == BUILTIN_HASHES["content"]:
        content = detail.payload if isinstance(detail.payload, str) else None
    schema = role_schema(repo, step.start, step.role)
    output = ordered_output(store.payload(step.output), schema)
    written = [run for run in (repo.runs.of_step(hash_) if runs is None else runs) if run.step == hash_]
    return StepDetails(
        hash_, step.role, step.agent, output, step.detail, detail.payload, _title(store, detail.type), content, prompt, schema,
        written[-1] if written else None,
    )


def role_schema(repo: Repo, start_hash: str, role: str) -> dict[str, Any] | None:
    """The output schema of `role` in the workflow a thread's StartNode names, if it still has it."""
    try:
        workflow = workflow_of(repo, read_start(repo.nodes, start_hash).workflow)
        return repo.nodes.schema(workflow.roles[role].meta)
    except (UwfError, KeyError):
        return None


def ordered_output(output: object, schema: dict[str, Any] | None) -> object:
    """Stored outputs come back in CBOR key order; show them in the schema's order."""
    if not isinstance(output, dict) or not schema:
        return output
    from ..store.schemas import field_order

    order = field_order(schema)
    return {key: output[key] for key in sorted(output, key=lambda k: order.index(k) if k in order else len(order))}


def _text_node(store: CasStore, hash_: object) -> str | None:
    """A content node's text, or a prompt node's text as it was sent (its parts joined)."""
    if not isinstance(hash_, str) or not store.has(hash_):
        return None
    node = store.get(hash_)
    if node.type == PROMPT_HASH and isinstance(node.payload, dict):
        from .history import entry_blocks

        parts = node.payload
        history, count = parts.get("history"), parts.get("entries")
        blocks = entry_blocks(store, history, count) if isinstance(history, str) and isinstance(count, int) else []
        return (_text_node(store, parts.get("before")) or "") + str(parts.get("lead", "")) + "\n\n".join(blocks) + (_text_node(store, parts.get("after")) or "")
    return node.payload if isinstance(node.payload, str) else None


def _title(store: CasStore, type_hash: str) -> str | None:
    try:
        return store.title_of(type_hash)
    except UwfError:
        return None


STATUS_RUNNING = "running"
STATUS_WAITING = "waiting"
STATUS_FAILED = "failed"
STATUS_CANCELLED = "cancelled"  # the last attempt was stopped (cancelled, a form declined, Ctrl-C): nothing failed
STATUS_DAMAGED = "damaged"  # the head cannot be read
STATUS_QUEUED = "queued"  # waiting for a `uwf worker` (`uwf thread run --detach`)
STATUS_MAPPING = "mapping"  # a map step waiting for its children, which workers step
STATUS_ASKING = "asking"  # its next role is a person's, who has not answered (`uwf inbox`)
STATUS_PAUSED = "paused"  # no step starts until `uwf thread unpause` (its step in flight, if any, is "running")


def thread_statuses(repo: Repo, infos: list[ThreadInfo]) -> dict[str, str]:
    """running / paused / queued / waiting / failed / cancelled for active threads (failed: the last attempt from
    the current head failed or timed out; cancelled: it was stopped, runs.jsonl's `killed`), the
    archive reason (done / killed / max-steps) for the others."""
    last_run: dict[str, RunRecord] = {}
    queued: set[str] = set()
    paused: dict[str, int] = {}
    active = {info.thread for info in infos if info.active}
    if active:
        paused = repo.threads.paused()
        for record in reversed(repo.runs.read()):  # newest first: a 100,000-step thread's last is found at once
            last_run.setdefault(record.thread, record)
            if active <= last_run.keys():
                break
        queued = {entry.thread for entry in repo.backend.queue.entries()}
    statuses = {}
    for info in infos:
        if info.problem:
            statuses[info.thread] = STATUS_DAMAGED
        elif not info.active:
            statuses[info.thread] = info.reason or "done"
        elif repo.locks.running(info.thread) is not None:
            statuses[info.thread] = STATUS_RUNNING
        elif info.thread in paused:
            statuses[info.thread] = STATUS_PAUSED
        elif _last_is(last_run.get(info.thread), info.head, "waiting"):
            statuses[info.thread] = STATUS_MAPPING
        elif _last_is(last_run.get(info.thread), info.head, "asking"):
            statuses[info.thread] = STATUS_ASKING
        elif info.thread in queued:
            statuses[info.thread] = STATUS_QUEUED
        else:
            statuses[info.thread] = _waiting_status(last_run.get(info.thread), info.head)
    return statuses


def _last_is(record: RunRecord | None, head: str, status: str) -> bool:
    return record is not None and record.status == status and record.head == head


def _waiting_status(record: RunRecord | None, head: str) -> str:
    """What an active thread nobody steps now is waiting after: its last attempt from this head."""
    if record is None or record.ok or record.head != head:
        return STATUS_WAITING
    return STATUS_CANCELLED if record.status == "killed" else STATUS_FAILED


def step_counts(repo: Repo, heads: list[str]) -> dict[str, int]:
    """Steps behind each head (resumed history included), for lists of threads: from the chain
    index, so a 10,000-step thread costs what a short one does."""
    from .chain_index import chain_record

    counts = {}
    for head in heads:
        try:
            counts[head] = chain_record(repo.nodes, head).count
        except UwfError:
            continue
    return counts
