"""The reuse index: a step's inputs as a key, and the steps indexed under such keys, in derived
data (`reuse1:<key>` -> the step's hash) beside the nodes on every backend. What goes into a key,
and when a step is reused, is engine/reuse/replay.py's; this module is what the writers of answers
(engine/record, the agent kit) and the agent call need of it, without the call itself."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ...encoding.cbor import encode
from ...encoding.ids import is_cas_ref, xxh64_hash
from ...errors import UwfError

if TYPE_CHECKING:
    from ...store.cas import CasStore
    from ...workflow.model import Role
    from ..resolve import ResolvedAgent

KEY = "reuse1:"
AGENT_ENV = "UWF_REUSE_AGENT"  # the running agent's fingerprint, for the kit to index its answer


def agent_fingerprint(resolved: ResolvedAgent, code: str | None = None) -> str:
    """The resolved agent entry as a hash: what it is called, runs, speaks and is given; `code`:
    a python agent's function and its code's identity (engine/python/call.PythonFunction)."""
    data = {"label": resolved.label, "argv": list(resolved.argv), "protocol": resolved.protocol, "env": dict(sorted(resolved.env.items()))}
    if code is not None:
        data["python"] = code
    return xxh64_hash(encode(data))


def inputs_key(role: Role, agent: str, prompt_node: str) -> str:
    """The key of a step's inputs: the role, the agent's fingerprint, the prompt node's hash."""
    return xxh64_hash(encode({"role": {"name": role.name, **role.to_payload()}, "agent": agent, "prompt": prompt_node}))


def remember(store: CasStore, key: str, step_hash: str) -> None:
    """Index a step under its inputs (inside the caller's batch when there is one)."""
    store.nodes.put_derived(KEY + key, step_hash.encode("ascii"))


def remember_answer(store: CasStore, role: Role, agent: str | None, prompt_node: str, step_hash: str) -> None:
    """Index an answer just written (engine/record.write_answer), when the agent is known."""
    if agent:
        remember(store, inputs_key(role, agent, prompt_node), step_hash)


def kit_agent_fingerprint() -> str | None:
    """The fingerprint uwf gave the agent process it runs (None when run by hand)."""
    value = os.environ.get(AGENT_ENV)
    return value if value and os.environ.get("UWF_THREAD") else None


def with_files(key: str, tree: str) -> str:
    """The inputs key of a step of a thread with snapshots: its inputs and the files it found."""
    return xxh64_hash(encode({"inputs": key, "files": tree}))


def find_reusable(store: CasStore, key: str, role: str) -> str | None:
    """The step indexed under `key`, if it is still there whole (a StepNode of this role whose
    output and detail exist); None otherwise."""
    from ...thread.nodes import STEP_TYPES

    raw = store.nodes.derived(KEY + key)
    if raw is None:
        return None
    try:
        step_hash = raw.decode("ascii")
        if not is_cas_ref(step_hash) or not store.has(step_hash):
            return None
        node = store.get(step_hash)
    except (UwfError, UnicodeDecodeError):
        return None
    payload = node.payload
    if node.type not in STEP_TYPES or not isinstance(payload, dict) or payload.get("role") != role:
        return None
    if not all(isinstance(payload.get(name), str) and store.has(payload[name]) for name in ("output", "detail")):
        return None
    return step_hash
