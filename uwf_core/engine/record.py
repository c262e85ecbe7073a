"""The one writer of an answer that uwf extracted (text and human protocols, and the agent kit):
prompt and answer as content nodes, the detail, then the StepNode. Secrets are redacted on
the way in, so a key an agent echoed never reaches an immutable node."""

from __future__ import annotations

from ..config.env import Secrets
from ..store.builtin_schemas import BUILTIN_HASHES
from ..store.cas import CasStore
from ..thread.model import ThreadContext
from ..thread.write import next_step_links, write_step
from ..workflow.model import Role


def write_answer(
    store: CasStore,
    *,
    context: ThreadContext,
    role: Role,
    agent: str,
    protocol: str,
    prompt: str,
    answer: str,
    output: object,
    detail: dict,
    secrets: Secrets,
    instruction: str | None,
    started_ms: int,
) -> str:
    """Store the step; `detail` holds what the protocol adds (extract method, corrections, usage...).
    Its nodes are one batch: durable together, with one commit, before anything names them."""
    with store.nodes.batch():
        return _write_answer(store, context=context, role=role, agent=agent, protocol=protocol, prompt=prompt, answer=answer,
                             output=output, detail=detail, secrets=secrets, instruction=instruction, started_ms=started_ms)


def _write_answer(store: CasStore, *, context, role, agent, protocol, prompt, answer, output, detail, secrets, instruction, started_ms) -> str:
    content = BUILTIN_HASHES["content"]
    record = {
        "agent": agent,
        "protocol": protocol,
        "prompt": store.put(content, secrets.redact(prompt)),
        "content": store.put(content, secrets.redact(answer)),
        **secrets.redact(detail),
    }
    start, prev = next_step_links(context)
    return write_step(
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
