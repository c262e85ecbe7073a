"""The step protocol: `<command> [args] <thread> <role>`; the agent writes output, detail and
StepNode itself and prints the StepNode's hash last. uwf only verifies it."""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ...encoding.ids import is_cas_ref
from ...thread.write import check_step_node
from ..attempt import StepError

if TYPE_CHECKING:
    from ..call import AgentCall


def run(call: AgentCall) -> str:
    outcome = call.spawn([*call.resolved.argv, call.info.thread, call.role.name], None)
    lines = [line.strip() for line in outcome.stdout.splitlines() if line.strip()]
    if not lines:
        raise StepError(
            f"agent '{call.resolved.label}' printed nothing; the step protocol expects the new StepNode's hash as the last line of stdout"
        )
    answer = lines[-1]
    hash_ = answer.upper() if is_cas_ref(answer.upper()) else answer
    check_step_node(call.repo.nodes, hash_, call.context, call.role.name, call.role.meta, call.resolved.label)
    return hash_
