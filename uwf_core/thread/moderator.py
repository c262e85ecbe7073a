"""The moderator: pure, deterministic routing from a thread's context.

evaluate(workflow, context) picks the next role (with its rendered
instruction) or $END. No I/O; JSONata and chevron are imported only when a
condition or template is actually evaluated.
"""

from __future__ import annotations

import json

from ..encoding.records import record
from ..errors import UwfError
from ..workflow.model import (
    END,
    START,
    STATUS_FIELD,
    Routes,
    Workflow,
    leaves_directory,
)
from .model import ThreadContext

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any, Callable

    from .model import StepContext

REASON_DONE = "done"
REASON_MAX_STEPS = "max-steps"
REASON_KILLED = "killed"  # by `thread kill`, or by the supervisor (engine/oversight/supervisor.py)


class ModeratorError(UwfError):
    """No route matched, a condition failed at runtime, or a status is missing."""


class ConditionFailed(ModeratorError):
    """A condition's expression failed at runtime (an error, its time or memory limit)."""


@record(frozen=True)
class Decision:
    """The next role (or END) and why: the reason travels with the route, so a dry run or a diff
    shows it without routing again."""

    role: str  # a role name, or END
    instruction: str | None = None
    end_reason: str | None = None  # REASON_DONE or REASON_MAX_STEPS when role is END
    source: str = START  # the graph key routed from
    location: str | None = None  # the role's working directory, relative to the thread's workspace
    # Why this route (for `uwf thread dry-run`, diffs and previews; routing never reads it):
    matched: str | None = None  # the condition name, or the status, that chose the route (None: a fallback)
    reason: str | None = None  # one line, e.g. "condition 'rejected' (steps[-1].output.ok = false) is true"

    @property
    def is_end(self) -> bool:
        return self.role == END


def evaluate(workflow: Workflow, context: ThreadContext, time_limit: float | None = None) -> Decision:
    """The next role (with its instruction and location) or $END. `time_limit` bounds each
    condition's evaluation in seconds (a step passes its own timeout)."""
    last = context.last_step
    key = last.role if last is not None else START
    routes = workflow.graph.get(key)
    if routes is None or (routes.statuses is None and not routes.transitions):
        # the reference's words first: users search for them
        raise ModeratorError(f'no transitions defined for role "{key}": workflow \'{workflow.name}\' has no routes from it')
    at_limit = context.since_start >= workflow.max_steps
    try:
        if routes.statuses is not None:
            decision = _by_status(workflow, context, key, routes)
        else:
            decision = _by_transitions(workflow, context, key, routes, time_limit)
    except ModeratorError:
        if at_limit:  # the thread is over anyway: say why it ends, not why it could not go on
            return _max_steps(workflow, key)
        raise
    if not decision.is_end and at_limit:
        return _max_steps(workflow, key)
    return decision


def route_to(workflow: Workflow, context: ThreadContext, role: str) -> Decision:
    """A decision for `role` chosen by the caller, not by the graph (`thread dry-run --role`): its
    instruction is the prompt of the first route from the current key to that role, rendered,
    and the reason says whether the graph has such a route. No condition is evaluated."""
    if role not in workflow.roles:
        raise ModeratorError(f"workflow '{workflow.name}' has no role '{role}' (roles: {', '.join(workflow.roles)})")
    last = context.last_step
    key = last.role if last is not None else START
    routes = workflow.graph.get(key)
    if routes is not None and routes.statuses is not None:
        found = [(f"{STATUS_FIELD} '{status}'", target.prompt, target.location) for status, target in routes.statuses.items() if target.role == role]
    else:
        found = [
            ("condition null" if item.condition is None else f"condition '{item.condition}'", item.prompt, None)
            for item in (routes.transitions if routes is not None else None) or ()
            if item.role == role
        ]
    if not found:
        return Decision(role, None, None, key, reason=f"chosen by the caller; no route from '{key}' leads to '{role}'")
    how, prompt, location = found[0]
    reason = f"chosen by the caller; the graph routes from '{key}' to '{role}' on {how}"
    return Decision(role, _render(prompt, context, key, role), None, key, _location(location, context, key, role), None, reason)


def _max_steps(workflow: Workflow, key: str) -> Decision:
    return Decision(END, None, REASON_MAX_STEPS, key, reason=f"maxSteps ({workflow.max_steps}) reached")


def _template_data(context: ThreadContext) -> object:
    last = context.last_step
    return last.output if last is not None else context.start.to_payload()


def _rendered(template: str, context: ThreadContext, failed: str) -> str:
    """A route's template (a prompt, a location) with the last output, or the StartNode at $START."""
    from ..workflow.templates import render

    try:
        return render(template, _template_data(context))
    except UwfError as exc:
        raise ModeratorError(f"{failed}: {exc.message}") from None


def _render(prompt: str | None, context: ThreadContext, key: str, role: str) -> str | None:
    if prompt is None:
        return None
    text = _rendered(prompt, context, "prompt template failed")
    if not text.strip():
        raise ModeratorError(
            f"the prompt from '{key}' to '{role}' rendered empty ({_short(prompt)} with the last output): "
            f"the next role would get no instruction"
        )
    return text


def _location(template: str | None, context: ThreadContext, key: str, role: str) -> str | None:
    """A target's `location`, rendered like a prompt (the reference's Mustache, a missing variable
    empty), then held to a relative path that stays inside the workspace (the reference takes any
    path; uwf does not let a route send an agent elsewhere). Rendered blank: the workspace itself."""
    if template is None:
        return None
    text = _rendered(template, context, f"location template of the route from '{key}' to '{role}' failed")
    if not text.strip():
        return None
    shown = f"location '{text}'" + (f" (rendered from '{template}')" if text != template else "")
    if text.startswith(("/", "~")) or "\0" in text:
        raise ModeratorError(f"{shown} of the route from '{key}' to '{role}' must be relative to the thread's workspace")
    if leaves_directory(text):
        raise ModeratorError(f"{shown} of the route from '{key}' to '{role}' leaves the thread's workspace")
    return text


def _decision(
    role: str, prompt: str | None, context: ThreadContext, key: str, location: str | None = None, *, matched: str | None, reason: str
) -> Decision:
    if role == END:
        return Decision(END, None, REASON_DONE, key, matched=matched, reason=reason)
    return Decision(role, _render(prompt, context, key, role), None, key, _location(location, context, key, role), matched, reason)


def _by_transitions(workflow: Workflow, context: ThreadContext, key: str, routes: Routes, time_limit: float | None) -> Decision:
    from ..workflow.jsonata_expr import evaluate as evaluate_expression
    from ..workflow.jsonata_expr import steps_window, truthy

    seen: list[str] = []
    data: dict[int | None, dict[str, Any]] = {}  # by window: a condition sees only as many steps as it can name
    functions = role_functions(context)
    transitions = routes.transitions or ()
    for transition in transitions:
        if transition.condition is None:
            alone = len(transitions) == 1
            why = f"the only transition from '{key}'" if alone else f"the fallback transition from '{key}' (condition: null)"
            return _decision(transition.role, transition.prompt, context, key, matched=None, reason=_after(why, seen))
        condition = workflow.conditions.get(transition.condition)
        if condition is None:
            raise ModeratorError(f"'{key}' routes on unknown condition '{transition.condition}'")
        try:
            window = steps_window(condition.expression)
            if window not in data:
                data[window] = context.to_json(window)
            value = evaluate_expression(condition.expression, data[window], time_limit, functions)
        except UwfError as exc:
            raise ConditionFailed(
                f"condition '{transition.condition}' ({condition.expression}) failed after '{key}': {exc.message}"
            ) from None
        if truthy(value):
            why = f"condition '{transition.condition}' ({condition.expression}) is {_short(value)}"
            return _decision(transition.role, transition.prompt, context, key, matched=transition.condition, reason=_after(why, seen))
        seen.append(f"{transition.condition}={_short(value)}")
    raise ModeratorError(
        f"no route from '{key}': no transition matched ({', '.join(seen) or 'no transitions'}); "
        f"last output: {_short(_template_data(context), 200)}"
    )


def role_functions(context: ThreadContext) -> dict[str, Callable[[object], object]]:
    """uwf's functions for JSONata (jsonata_expr.UWF_FUNCTIONS): $first / $last give a role's
    first / last output, as the reference's findByRole does; $firstStep / $lastStep the whole step
    ({role, output, detail, agent}). Undefined when the role has not run."""

    def of(find: Callable[[str], StepContext | None], whole: bool) -> Callable[[object], object]:
        def value(role: object) -> object:
            found = find(role) if isinstance(role, str) else None
            if found is None:
                return None
            return found.to_json() if whole else found.output

        return value

    return {
        "first": of(context.first_step, False),
        "last": of(context.last_step_of, False),
        "firstStep": of(context.first_step, True),
        "lastStep": of(context.last_step_of, True),
    }


def _by_status(workflow: Workflow, context: ThreadContext, key: str, routes: Routes) -> Decision:
    statuses = routes.statuses or {}
    status: object
    if key == START:
        status = "resume" if context.start.resumes else "new"
    else:
        last = context.last_step
        assert last is not None  # key is not START: it is the last step's role
        output = last.output
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
    why = f"{STATUS_FIELD} '{status}' " + ("at $START" if key == START else f"of '{key}''s output")
    return _decision(target.role, target.prompt, context, key, target.location, matched=status, reason=why)


def _after(why: str, seen: list[str]) -> str:
    """The reason, with the conditions that were false before it."""
    return f"{why}, after {', '.join(seen)}" if seen else why


def _short(value: object, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True) if value is not None else "null"
    return text if len(text) <= limit else text[: limit - 3] + "..."
