"""A person answers the role: the TUI's form, or $EDITOR from the CLI (the caller's `human` hook)."""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..attempt import ASKING, HumanRequest, StepError
from ..record import write_answer

if TYPE_CHECKING:
    from ..call import AgentCall


def run(call: AgentCall) -> str:
    from ..extraction.extract import ExtractError, extract_fast
    from ..prompt import frontmatter_template

    role = call.role
    if call.options.human is None:
        raise StepError(
            f"role '{role.name}' waits for a person: answer it with `uwf thread answer {call.info.thread}` on any host, in uwf-tui's inbox, "
            "or with `uwf thread step` on a terminal (it opens $EDITOR)",
            ASKING,
            head=call.info.head,
        )
    request = HumanRequest(
        call.info.thread, call.workflow.name, role.name, call.prompt, call.schema, frontmatter_template(call.schema), call.decision.instruction
    )
    with call.agent_span(()):
        answer = call.options.human(request)
    if answer is None:
        raise StepError(f"the human answer for role '{role.name}' was cancelled", "killed")
    try:
        extracted = extract_fast(answer, call.schema, cache_key=role.meta)
    except ExtractError as exc:
        raise StepError(f"the human answer for role '{role.name}' cannot be used: {exc.message}") from None
    return write_answer(
        call.repo.nodes,
        context=call.context,
        role=role,
        agent="human",
        protocol="human",
        prompt=call.prompt_parts,
        answer=answer,
        output=extracted.output,
        detail={"extract": extracted.method},
        secrets=call.secrets,
        instruction=call.decision.instruction,
        started_ms=call.started_ms,
    )
