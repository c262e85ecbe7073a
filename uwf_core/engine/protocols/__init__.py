"""How uwf talks to an agent, one module per protocol, each `run(call) -> new StepNode hash`:
step (the agent writes its nodes), text (uwf prompts, extracts and writes), human (a person answers),
python (a function uwf calls: its machinery is engine/python/).

May import: one agent call (call.py, files.py), record.py, reuse/ and the rooms below them."""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from ..call import AgentCall

PROTOCOLS = ("step", "text", "human", "python")


def run_protocol(call: AgentCall) -> str:
    """Run the resolved agent by its protocol; returns the verified new StepNode's hash."""
    protocol = call.resolved.protocol
    if protocol not in PROTOCOLS:
        from ...errors import UwfError

        raise UwfError(f"agent '{call.resolved.label}' has protocol {protocol!r}; uwf knows {', '.join(PROTOCOLS)}")
    call.ran = True  # the attempt's record says how it was contained
    return import_module(f".{protocol}", __name__).run(call)
