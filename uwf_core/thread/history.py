"""How an earlier step reads in a later prompt's history, and the chain of history entries that
lets a stored prompt name its whole history with one reference.

Each step has one history entry, `{block, prev}`: its block (a content node: "### Step N: role
(agent: X)" and its output as JSON) and the entry of the step before it. The entry of step N is
the same node in every later prompt of the chain (and of its forks), so a prompt showing the
newest k steps stores one reference and the number k, not k copies: a 2,000-step thread's
prompts weigh a few hundred bytes each instead of tens of kilobytes.

Entries are written with each StepNode (thread/write.py); one missing (an older root, an agent
that wrote its own StepNode, a newest entry gc swept before any prompt named it) is rebuilt from
the steps, walking back only until an entry that is there. Which entry a step has is derived
data (`entry1:<step>`), kept beside the chain index.
"""

from __future__ import annotations

import json

from ..store.builtin_schemas import (
    BUILTIN_HASHES,
    CAS_REF,
    KNOWN_HASHES,
    OPTIONAL_CAS_REF,
)
from ..store.cas import CasStore, node_hash
from .nodes import put_node, read_step, thread_node

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from .model import StepNode

KEY = "entry1:"
HISTORY_ENTRY = {
    "title": "history-entry",
    "description": "One step as later prompts show it (block), after the entry of the step before it (prev)",
    "type": "object",
    "additionalProperties": False,
    "required": ["block", "prev"],
    "properties": {"block": CAS_REF, "prev": OPTIONAL_CAS_REF},
}
HISTORY_ENTRY_HASH = KNOWN_HASHES["history-entry"]
CONTENT = BUILTIN_HASHES["content"]


def block_text(number: int, role: str, agent: str, output: object) -> str:
    """Step `number` (from 1, across resumes) as a prompt's history shows it."""
    return f"### Step {number}: {role} (agent: {agent})\n\n```json\n{json.dumps(output, indent=2, ensure_ascii=False)}\n```"


def entry_of(store: CasStore, step_hash: str, *, keep: bool = True) -> str:
    """The history entry of a step, rebuilt (and, with `keep`, written) when it is not there."""
    from .chain_index import chain_record

    pending: list[str] = []  # steps whose entries are missing, newest first
    cursor: str | None = step_hash
    prev_entry: str | None = None
    while cursor is not None:
        known = _known(store, cursor)
        if known is not None:
            prev_entry = known
            break
        pending.append(cursor)
        cursor = _step_before(store, cursor)
    for hash_ in reversed(pending):
        step = read_step(store, hash_)
        number = chain_record(store, hash_, keep=keep).count
        block = block_text(number, step.role, step.agent, store.payload(step.output))
        prev_entry = _put_entry(store, hash_, block, prev_entry, keep)
    return prev_entry  # type: ignore[return-value]  # pending or known: one of them set it


def remember_entry(store: CasStore, step_hash: str, step: StepNode, number: int) -> str:
    """The entry of a step just written (callers batch it with the StepNode). The output is read
    back as stored (key order, integral numbers) so the block is what later prompts show."""
    from .context import newest_step

    prev_step = newest_step(store, step.prev or step.start)
    prev_entry = entry_of(store, prev_step) if prev_step is not None else None
    return _put_entry(store, step_hash, block_text(number, step.role, step.agent, store.payload(step.output)), prev_entry, True)


def entry_blocks(store: CasStore, entry: str, count: int) -> list[str]:
    """The texts of the `count` blocks ending at `entry`, oldest first (a stored prompt read back)."""
    blocks: list[str] = []
    cursor: str | None = entry
    while cursor is not None and len(blocks) < count:
        payload = store.get(cursor).payload
        text = store.payload(payload["block"])
        blocks.append(text if isinstance(text, str) else "")
        cursor = payload.get("prev")
    blocks.reverse()
    return blocks


def _put_entry(store: CasStore, step_hash: str, block: str, prev_entry: str | None, keep: bool) -> str:
    payload = {"block": node_hash(CONTENT, block), "prev": prev_entry}
    if not keep:
        return node_hash(HISTORY_ENTRY_HASH, payload)
    if not store.has(HISTORY_ENTRY_HASH):
        store.put_schema(HISTORY_ENTRY)
    put_node(store, CONTENT, block, "history block")
    entry = put_node(store, HISTORY_ENTRY_HASH, payload, "history entry")
    store.nodes.put_derived(KEY + step_hash, entry.encode("ascii"))
    return entry


def _known(store: CasStore, step_hash: str) -> str | None:
    raw = store.nodes.derived(KEY + step_hash)
    if raw is None:
        return None
    entry = raw.decode("ascii", "replace")
    return entry if store.has(entry) and store.has(store.get(entry).payload.get("block", "")) else None


def _step_before(store: CasStore, step_hash: str) -> str | None:
    """The step before a step: its prev (past uwf's checks), or the newest step behind the head its
    StartNode resumes."""
    from .context import newest_step

    payload = thread_node(store, step_hash).payload
    return newest_step(store, payload.get("prev") or payload["start"])


def entry_behind(store: CasStore, head: str, *, keep: bool = True) -> str | None:
    """The entry of the newest step at or behind a head (None when no step is)."""
    from .context import newest_step

    step = newest_step(store, head)
    return entry_of(store, step, keep=keep) if step is not None else None
