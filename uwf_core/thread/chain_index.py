"""What a step needs to know about the whole chain behind a head, without walking it: how many
steps (and since the current StartNode), and the first and last step of each role. uwf's checks
(`$supervisor`, `$summary` StepNodes) are not steps of the workflow: a check's record is its
parent's.

Kept as derived data beside the nodes (`NodeStore.derived`), keyed by the head's hash. A new
step's record is its parent's plus one step, written in the same batch as the StepNode, so a
step costs the same at 10,000 steps as at one. Heads are immutable, so a record never goes
stale; a missing one (an older root, a StepNode an agent wrote itself) is rebuilt by walking
back to the nearest known record and kept. Dropping them all loses nothing.
"""

from __future__ import annotations

import json

from ..encoding.records import field, record
from ..errors import CorruptError, UwfError
from ..store.cas import CasStore
from .model import is_check_role
from .nodes import START_TYPES, STEP_TYPES, thread_node

KEY = "chain1:"  # the version is in the key: a changed shape is simply rebuilt


@record(frozen=True)
class ChainRecord:
    count: int  # steps behind the head, those of resumed runs included
    since_start: int  # steps after the current StartNode
    start: str  # the current StartNode's hash
    first: dict[str, str] = field(default_factory=dict)  # role -> its first step's hash
    last: dict[str, str] = field(default_factory=dict)  # role -> its newest step's hash
    roles: dict[str, int] = field(default_factory=dict)  # role -> how many steps it took
    checks: int = 0  # uwf's checks behind the head (not counted in `count`)

    def after(self, step_hash: str, role: str) -> ChainRecord:
        if is_check_role(role):  # uwf's own check: not a step of the workflow
            return ChainRecord(self.count, self.since_start, self.start, self.first, self.last, self.roles, self.checks + 1)
        return ChainRecord(
            self.count + 1,
            self.since_start + 1,
            self.start,
            self.first if role in self.first else {**self.first, role: step_hash},
            {**self.last, role: step_hash},
            {**self.roles, role: self.roles.get(role, 0) + 1},
            self.checks,
        )

    def restarted(self, start_hash: str) -> ChainRecord:
        """The record of a StartNode that resumes this head: history kept, nothing since."""
        return ChainRecord(self.count, 0, start_hash, self.first, self.last, self.roles, self.checks)

    def to_bytes(self) -> bytes:
        data = {"count": self.count, "since": self.since_start, "start": self.start, "first": self.first, "last": self.last, "roles": self.roles}
        if self.checks:
            data["checks"] = self.checks
        return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> ChainRecord | None:
        try:
            data = json.loads(raw)
            return cls(
                int(data["count"]), int(data["since"]), str(data["start"]), dict(data["first"]), dict(data["last"]), dict(data["roles"]),
                int(data.get("checks", 0)),  # a record from before checks existed has none behind it
            )
        except (ValueError, KeyError, TypeError):
            return None  # unreadable: rebuilt like a missing one


def chain_record(store: CasStore, head: str, *, keep: bool = True) -> ChainRecord:
    """The record of `head` (a StepNode or a StartNode), rebuilt when missing and kept (unless
    `keep` is false: `uwf thread dry-run` writes nothing, not even derived data)."""
    known = _known(store, head)
    if known is not None:
        return known
    # Walk back to the nearest known record (or the very first StartNode), then forward.
    pending: list[tuple[str, dict]] = []
    cursor: str | None = head
    base: ChainRecord | None = None
    while cursor is not None:
        node = thread_node(store, cursor)
        pending.append((cursor, node))
        parent = _parent(node)
        if parent is None:
            break
        base = _known(store, parent)
        if base is not None:
            break
        cursor = parent
    records = []
    for hash_, node in reversed(pending):
        base = _record_of(hash_, node, base)
        records.append((hash_, base))
    if not keep:
        return records[-1][1]
    store.cache_derived([(KEY + hash_, record.to_bytes()) for hash_, record in records])
    return records[-1][1]


def remember_step(store: CasStore, step_hash: str, parent: str, role: str) -> ChainRecord:
    """Keep the record of a step just written (callers batch it with the StepNode)."""
    record = chain_record(store, parent).after(step_hash, role)
    store.nodes.put_derived(KEY + step_hash, record.to_bytes())
    return record


def _known(store: CasStore, hash_: str) -> ChainRecord | None:
    raw = store.nodes.derived(KEY + hash_)
    return ChainRecord.from_bytes(raw) if raw is not None else None


def _parent(node) -> str | None:
    """The node a head's record is computed from: prev (or the StartNode) of a step, the resumed
    head of a StartNode; None for a StartNode that begins a thread."""
    payload = node.payload
    if node.type in STEP_TYPES:
        return payload.get("prev") or payload["start"]
    return payload.get("resumes")


def _record_of(hash_: str, node, parent: ChainRecord | None) -> ChainRecord:
    payload = node.payload
    if node.type in START_TYPES:
        return parent.restarted(hash_) if parent is not None else ChainRecord(0, 0, hash_)
    if parent is None:
        raise CorruptError(f"step {hash_} has no StartNode behind it: the chain is broken")
    if payload["start"] != parent.start:
        raise CorruptError(f"step {hash_} belongs to start {payload['start']}, not {parent.start}: the chain is broken")
    role = payload.get("role")
    if not isinstance(role, str):
        raise UwfError(f"step {hash_} has no role")
    return parent.after(hash_, role)
