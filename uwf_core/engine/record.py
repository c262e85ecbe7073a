"""The one writer of an answer that uwf extracted (text and human protocols, and the agent kit):
prompt and answer as content nodes, the detail, then the StepNode. Secrets are redacted on
the way in, so a key an agent echoed never reaches an immutable node."""

from __future__ import annotations

from ..config.env import Secrets
from ..store.builtin_schemas import BUILTIN_HASHES, PROMPT, PROMPT_HASH
from ..store.cas import CasStore
from ..thread.model import ThreadContext
from ..thread.write import next_step_links, write_step
from ..workflow.model import Role
from .prompt import Prompt


def write_answer(
    store: CasStore,
    *,
    context: ThreadContext,
    role: Role,
    agent: str,
    protocol: str,
    prompt: Prompt | str | None,
    answer: str | None,
    output: object,
    detail: dict,
    secrets: Secrets,
    instruction: str | None,
    started_ms: int,
    agent_key: str | None = None,
) -> str:
    """Store the step; `detail` holds what the protocol adds (extract method, corrections, usage...).
    Its nodes are one batch: durable together, with one commit, before anything names them.
    `agent_key` (the agent entry's fingerprint) indexes the answer for memoized replay (engine/reuse/index.py).
    A python agent may have neither prompt (it did not read one) nor answer text (it returned a dict)."""
    with store.nodes.batch():
        return _write_answer(store, context=context, role=role, agent=agent, protocol=protocol, prompt=prompt, answer=answer,
                             output=output, detail=detail, secrets=secrets, instruction=instruction, started_ms=started_ms,
                             agent_key=agent_key)


def _write_answer(store: CasStore, *, context, role, agent, protocol, prompt, answer, output, detail, secrets, instruction, started_ms, agent_key) -> str:
    content = BUILTIN_HASHES["content"]
    prompt_node = store_prompt(store, prompt, secrets, context) if prompt is not None else None
    record = {"agent": agent, "protocol": protocol}
    if prompt_node is not None:
        record["prompt"] = prompt_node
    if answer is not None:
        record["content"] = store.put(content, secrets.redact(answer))
    record.update(secrets.redact(detail))
    start, prev = next_step_links(context)
    step_hash = write_step(
        store,
        start=start,
        prev=prev,
        role=role.name,
        meta=role.meta,
        output=secrets.redact(output),
        agent=agent,
        detail=record,
        instruction=instruction,
        started_ms=started_ms,
        history=prompt is not None,  # a python agent that read no prompt: its entry waits for a prompt that shows it
    )
    if agent_key and prompt_node is not None:
        from .reuse.index import remember_answer

        remember_answer(store, role, agent_key, prompt_node, step_hash)
    return step_hash


def store_prompt(store: CasStore, prompt: Prompt | str, secrets: Secrets, context: ThreadContext | None = None) -> str:
    """The prompt as sent, redacted: in parts (the text before the history, then the history as
    one reference to the chain of entries every later prompt shares: thread/history.py), or as one
    content node when it came as text or its history cannot be named exactly."""
    content = BUILTIN_HASHES["content"]
    payload = prompt_payload(store, prompt, secrets, context) if isinstance(prompt, Prompt) else None
    if payload is None:
        return store.put(content, secrets.redact(prompt if isinstance(prompt, str) else prompt.text))
    if not store.has(PROMPT_HASH):
        store.put_schema(PROMPT)
    store.put(content, secrets.redact(prompt.before))
    store.put(content, secrets.redact(prompt.after))
    return store.put(PROMPT_HASH, payload, what="prompt")


def prompt_payload(store: CasStore, prompt: Prompt, secrets: Secrets, context: ThreadContext | None, *, keep: bool = True) -> dict | None:
    """The prompt node's payload, or None when the history entries do not end in the prompt's
    newest block (a guard: the stored prompt must read back as exactly what was sent)."""
    from ..store.cas import node_hash
    from ..thread.history import entry_behind

    content = BUILTIN_HASHES["content"]
    blocks = [secrets.redact(block) for block in prompt.blocks]
    history = None
    if blocks:
        if context is None:
            return None
        history = entry_behind(store, context.head, keep=keep)
        newest = store.get(history).payload.get("block") if history is not None and store.has(history) else None
        if keep and newest != node_hash(content, blocks[-1]):
            return None
    return {
        "before": node_hash(content, secrets.redact(prompt.before)),
        "lead": secrets.redact(prompt.lead),
        "history": history,
        "entries": len(blocks),
        "after": node_hash(content, secrets.redact(prompt.after)),
    }
