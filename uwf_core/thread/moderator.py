"""The moderator: pure, deterministic routing from a thread's context.

evaluate(workflow, context) picks the next role (with its rendered
instruction) or $END. No I/O; JSONata and chevron are imported only when a
condition or template is actually evaluated.
"""

from __future__ import annotations

import json

from ..encoding.records import record
from ..errors import UwfError
from ..workflow.model import END, START, STATUS_FIELD, Routes, Workflow
from .model import ThreadContext

REASON_DONE = "done"
REASON_MAX_STEPS = "max-steps"


class ModeratorError(UwfError):
    """No route matched, a condition failed at runtime, or a status is missing."""


@record(frozen=True)
class Decision:
    role: str  # a role name, or END
    instruction: str | None = None
    end_reason: str | None = None  # REASON_DONE or REASON_MAX_STEPS when role is END
    source: str = START  # the graph key routed from
    location: str | None = None  # the role's working directory, relative to the thread's workspace

    @property
    def is_end(self) -> bool:
        return self.role == END


def evaluate(workflow: Workflow, context: ThreadContext, time_limit: float | None = None) -> Decision:
    """The next role (with its instruction and location) or $END. `time_limit` bounds each
    condition's evaluation in seconds (a step passes its own timeout)."""
    last = context.last_step
    key = last.role if last is not None else START
    routes = workflow.graph.get(key)
    if routes is None:
        raise ModeratorError(f"workflow '{workflow.name}' has no routes from '{key}'")
    at_limit = context.since_start >= workflow.max_steps
    try:
        if routes.statuses is not None:
            decision = _by_status(workflow, context, key, routes)
        else:
            decision = _by_transitions(workflow, context, key, routes, time_limit)
    except ModeratorError:
        if at_limit:  # the thread is over anyway: say why it ends, not why it could not go on
            return Decision(END, None, REASON_MAX_STEPS, key)
        raise
    if not decision.is_end and at_limit:
        return Decision(END, None, REASON_MAX_STEPS, key)
    return decision


def _template_data(context: ThreadContext) -> object:
    last = context.last_step
    return last.output if last is not None else context.start.to_payload()


def _render(prompt: str | None, context: ThreadContext, key: str, role: str) -> str | None:
    if prompt is None:
        return None
    from ..workflow.templates import render

    try:
        text = render(prompt, _template_data(context))
    except UwfError as exc:
        raise ModeratorError(f"prompt template failed: {exc.message}") from None
    if not text.strip():
        raise ModeratorError(
            f"the prompt from '{key}' to '{role}' rendered empty ({_short(prompt)} with the last output): "
            f"the next role would get no instruction"
        )
    return text


def _decision(role: str, prompt: str | None, context: ThreadContext, key: str, location: str | None = None) -> Decision:
    if role == END:
        return Decision(END, None, REASON_DONE, key)
    return Decision(role, _render(prompt, context, key, role), None, key, location)


def _by_transitions(workflow: Workflow, context: ThreadContext, key: str, routes: Routes, time_limit: float | None) -> Decision:
    from ..workflow.jsonata_expr import evaluate as evaluate_expression
    from ..workflow.jsonata_expr import steps_window, truthy

    seen: list[str] = []
    data: dict[int | None, dict] = {}  # by window: a condition sees only as many steps as it can name
    functions = {"first": _step_json(context.first_step), "last": _step_json(context.last_step_of)}
    for transition in routes.transitions or ():
        if transition.condition is None:
            return _decision(transition.role, transition.prompt, context, key)
        condition = workflow.conditions.get(transition.condition)
        if condition is None:
            raise ModeratorError(f"'{key}' routes on unknown condition '{transition.condition}'")
        try:
            window = steps_window(condition.expression)
            if window not in data:
                data[window] = context.to_json(window)
            value = evaluate_expression(condition.expression, data[window], time_limit, functions)
        except UwfError as exc:
            raise ModeratorError(
                f"condition '{transition.condition}' ({condition.expression}) failed after '{key}': {exc.message}"
            ) from None
        if truthy(value):
            return _decision(transition.role, transition.prompt, context, key)
        seen.append(f"{transition.condition}={_short(value)}")
    raise ModeratorError(
        f"no route from '{key}': no transition matched ({', '.join(seen) or 'no transitions'}); "
        f"last output: {_short(_template_data(context), 200)}"
    )


def _step_json(find):
    """$first / $last for JSONata: a role's step as {role, output, detail, agent}, or undefined."""

    def step(role: object) -> object:
        found = find(role) if isinstance(role, str) else None
        return found.to_json() if found is not None else None

    return step


def _by_status(workflow: Workflow, context: ThreadContext, key: str, routes: Routes) -> Decision:
    statuses = routes.statuses or {}
    if key == START:
        status = "resume" if context.start.resumes else "new"
    else:
        output = context.last_step.output
        status = output.get(STATUS_FIELD) if isinstance(output, dict) else None
        if not isinstance(status, str):
            raise ModeratorError(
                f"role '{key}' is routed by {STATUS_FIELD}, but its output has no string {STATUS_FIELD}: {_short(output, 200)}"
            )
    target = statuses.get(status)
    if target is None:
        raise ModeratorError(
            f"no route from '{key}' for {STATUS_FIELD} '{status}' (routed statuses: {', '.join(statuses) or 'none'})"
        )
    return _decision(target.role, target.prompt, context, key, target.location)


def _short(value: object, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True) if value is not None else "null"
    return text if len(text) <= limit else text[: limit - 3] + "..."
