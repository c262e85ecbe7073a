"""Memoized replay: a step whose inputs are those of an earlier step reuses that step's output
instead of running its agent.

The inputs are the role (its name and definition, output schema hash included), the resolved
agent entry (label, command line, protocol, env) and the prompt exactly as it is stored (the
hash of its prompt node). Nothing in the key differs between a thread and its fork: not the
thread id, not the head, not a time. So a fork re-run with `--reuse` pays only for the steps
whose prompt changed. What the key cannot see is the agent's world outside the prompt (the
workspace, the network, a model chosen by config.yaml's defaultModel): opt in only for agents
whose answer depends on the prompt alone.

The index lives in derived data (`reuse1:<key>` -> the step's hash), beside the nodes on every
backend. Every answer uwf or the agent kit writes is indexed in the same batch as its nodes
(step-protocol agents built on the kit get the agent's fingerprint in UWF_REUSE_AGENT), so a
thread run without `--reuse` can still be reused by a fork run with it; an agent that writes its
StepNode itself, and a Python function that reads no prompt (its prompt is never built), are
indexed only after a step run with reuse on. Dropping the index loses only
reuse hits; an entry whose step is gone is ignored.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ...store.builtin_schemas import BUILTIN_HASHES, PROMPT_HASH
from ...store.cas import node_hash
from .index import inputs_key, remember

if TYPE_CHECKING:
    from ...config.env import Secrets
    from ...store.cas import CasStore
    from ...thread.model import ThreadContext
    from ..call import AgentCall
    from ..prompt import Prompt

def prompt_node_hash(store: CasStore, prompt: Prompt, secrets: Secrets, context: ThreadContext) -> str:
    """The hash `engine/record.store_prompt` stores this prompt under, computed without writing."""
    from ..record import prompt_payload

    payload = prompt_payload(store, prompt, secrets, context, keep=False)
    if payload is None:
        return node_hash(BUILTIN_HASHES["content"], secrets.redact(prompt.text))
    return node_hash(PROMPT_HASH, payload)


def call_key(call: AgentCall) -> str:
    """The inputs key of the step a call is about to take."""
    return inputs_key(call.role, call.agent_key, prompt_node_hash(call.repo.nodes, call.prompt_parts, call.secrets, call.context))


def taken_key(call: AgentCall, step_hash: str) -> str | None:
    """The inputs key of a step already taken, from the prompt node its detail names (no prompt
    is built again); None when the detail names none that is stored."""
    from ...thread.model import StepNode

    store = call.repo.nodes
    detail = store.payload(StepNode.from_payload(store.get(step_hash).payload).detail)
    prompt = detail.get("prompt") if isinstance(detail, dict) else None
    if not isinstance(prompt, str) or not store.has(prompt):
        return None
    return inputs_key(call.role, call.agent_key, prompt)


def write_reused(call: AgentCall, found: str, key: str) -> str:
    """A new StepNode after the head with `found`'s output and agent (so the prompts of the steps
    after it are those after `found`), whose detail says where it came from and that it spent
    nothing; indexed under the same key."""
    from ...llm.usage import Usage
    from ...thread.spend import REUSE_PROTOCOL
    from ...thread.nodes import read_step
    from ...thread.write import next_step_links, write_step
    from ..record import store_prompt

    store = call.repo.nodes
    original = read_step(store, found)
    before = store.payload(original.detail)
    detail = {
        "agent": original.agent,
        "protocol": REUSE_PROTOCOL,
        "reusedFrom": found,
        "usage": Usage().to_json(),
    }
    start, prev = next_step_links(call.context)
    with store.nodes.batch():
        detail["prompt"] = store_prompt(store, call.prompt_parts, call.secrets, call.context)
        content = before.get("content") if isinstance(before, dict) else None
        if isinstance(content, str) and store.has(content):
            detail["content"] = content
        step_hash = write_step(
            store,
            start=start,
            prev=prev,
            role=call.role.name,
            meta=call.role.meta,
            output=store.payload(original.output),
            agent=original.agent,
            detail=detail,
            instruction=call.decision.instruction,
            started_ms=call.started_ms,
            what=f"reused output of role '{call.role.name}'",
        )
        remember(store, key, step_hash)
    return step_hash
