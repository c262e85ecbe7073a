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
    prompt: Prompt | str,
    answer: str,
    output: object,
    detail: dict,
    secrets: Secrets,
    instruction: str | None,
    started_ms: int,
    agent_key: str | None = None,
) -> str:
    """Store the step; `detail` holds what the protocol adds (extract method, corrections, usage...).
    Its nodes are one batch: durable together, with one commit, before anything names them.
    `agent_key` (the agent entry's fingerprint) indexes the answer for memoized replay (engine/reuse.py)."""
    with store.nodes.batch():
        return _write_answer(store, context=context, role=role, agent=agent, protocol=protocol, prompt=prompt, answer=answer,
                             output=output, detail=detail, secrets=secrets, instruction=instruction, started_ms=started_ms,
                             agent_key=agent_key)


def _write_answer(store: CasStore, *, context, role, agent, protocol, prompt, answer, output, detail, secrets, instruction, started_ms, agent_key) -> str:
    content = BUILTIN_HASHES["content"]
    prompt_node = store_prompt(store, prompt, secrets)
    record = {
        "agent": agent,
        "protocol": protocol,
        "prompt": prompt_node,
        "content": store.put(content, secrets.redact(answer)),
        **secrets.redact(detail),
    }
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
    )
    if agent_key:
        from .reuse import remember_answer

        remember_answer(store, role, agent_key, prompt_node, step_hash)
    return step_hash


def store_prompt(store: CasStore, prompt: Prompt | str, secrets: Secrets) -> str:
    """The prompt as sent, redacted: in parts (each history block and the text before the history
    are content nodes every later prompt shares), or as one content node when it came as text."""
    content = BUILTIN_HASHES["content"]
    if isinstance(prompt, str):
        return store.put(content, secrets.redact(prompt))
    if not store.has(PROMPT_HASH):
        store.put_schema(PROMPT)
    return store.put(PROMPT_HASH, {
        "before": store.put(content, secrets.redact(prompt.before)),
        "lead": secrets.redact(prompt.lead),
        "blocks": [store.put(content, secrets.redact(block)) for block in prompt.blocks],
        "after": secrets.redact(prompt.after),
    }, what="prompt")
