"""The graph's lint: unknown names, dead ends, unreachable roles, no path to $END, statuses a
role cannot produce — found on a parsed draft (lint.py) before anything is written."""

from __future__ import annotations

from collections import deque

from .draft import Draft, Problem, suggest
from .model import END, START, STATUS_FIELD, Routes, Target, Workflow

START_STATUSES = ("new", "resume")  # what $START may route on



def lint_graph(draft: Draft, workflow: Workflow) -> None:
    problems = draft.problems
    roles, graph = workflow.roles, workflow.graph
    if START not in graph:
        problems.append(Problem(("graph",), "no '$START' entry: the graph must say which role goes first"))
        return
    for key, routes in graph.items():
        path = ("graph", key)
        if key == END:
            problems.append(Problem(path, "'$END' cannot have outgoing transitions"))
            continue
        if key != START and key not in roles:
            problems.append(Problem(path, f"unknown role '{key}'{suggest(key, roles)}"))
            continue
        if not routes.targets():
            problems.append(Problem(path, f"role '{key}' has no outgoing transitions"))
        _lint_routes(draft, workflow, key, routes, path)
    for name in roles:
        if name not in graph:
            problems.append(Problem(("roles", name), f"role '{name}' has no outgoing transitions (it is not a key of graph)"))
    if draft.errors:
        return
    reachable = _reachable(graph, START)
    for name in roles:
        if name not in reachable:
            problems.append(Problem(("roles", name), f"role '{name}' is unreachable from $START"))
    reaches_end = _reaching(graph, END)
    for key in graph:
        if key in reachable and key not in reaches_end:
            problems.append(Problem(("graph", key), f"no path from '{key}' to $END: a thread there could never finish"))
    used = {t.condition for routes in graph.values() for t in routes.transitions or () if t.condition}
    for name in workflow.conditions:
        if name not in used:
            problems.append(Problem(("conditions", name), f"condition '{name}' is never used", "warning"))


def _lint_routes(draft: Draft, workflow: Workflow, key: str, routes: Routes, path: tuple) -> None:
    problems = draft.problems
    for target_path, role in _route_targets(routes, path):
        if role == START:
            problems.append(Problem(target_path, "'$START' cannot be a target"))
        elif role != END and role not in workflow.roles:
            problems.append(Problem(target_path, f"unknown role '{role}'{suggest(role, workflow.roles)}"))
    if routes.transitions is not None:
        fallback_seen = False
        for index, transition in enumerate(routes.transitions):
            item_path = path + (index,)
            if fallback_seen:
                problems.append(Problem(item_path, "unreachable: an earlier transition has condition null and always matches", "warning"))
            if transition.condition is None:
                fallback_seen = True
            elif transition.condition not in workflow.conditions:
                problems.append(
                    Problem(
                        item_path + ("condition",),
                        f"unknown condition '{transition.condition}'{suggest(transition.condition, workflow.conditions)}",
                    )
                )
        if routes.transitions and not fallback_seen:
            problems.append(Problem(path, "no fallback transition (condition: null): when no condition holds the step fails with 'no route'", "warning"))
        return
    _lint_status_map(draft, workflow, key, routes.statuses or {}, path)


def _route_targets(routes: Routes, path: tuple):
    if routes.statuses is not None:
        return [(path + (status, "role"), target.role) for status, target in routes.statuses.items()]
    return [(path + (index, "role"), t.role) for index, t in enumerate(routes.transitions or ())]


def _lint_status_map(draft: Draft, workflow: Workflow, key: str, statuses: dict[str, Target], path: tuple) -> None:
    problems = draft.problems
    if key == START:
        for status in statuses:
            if status not in START_STATUSES:
                problems.append(Problem(path + (status,), f"$START statuses are 'new' and 'resume', not '{status}'"))
        if "new" not in statuses:
            problems.append(Problem(path, "a $START status map needs a 'new' entry, or no thread can start"))
        return
    schema = draft.schemas.get(key) or {}
    status_schema = (schema.get("properties") or {}).get(STATUS_FIELD)
    if not isinstance(status_schema, dict):
        problems.append(
            Problem(("roles", key, "meta"), f"role '{key}' is routed by {STATUS_FIELD} but its meta has no '{STATUS_FIELD}' property")
        )
        return
    types = status_schema.get("type")
    if types not in (None, "string") and not (isinstance(types, list) and "string" in types):
        problems.append(Problem(("roles", key, "meta"), f"'{STATUS_FIELD}' of role '{key}' must be a string"))
        return
    listed = status_schema.get("enum") if "const" not in status_schema else [status_schema["const"]]
    if isinstance(listed, list) and any(not isinstance(value, str) for value in listed):
        problems.append(Problem(("roles", key, "meta"), f"'{STATUS_FIELD}' of role '{key}' may only list strings"))
        return
    producible = _producible_values(status_schema)
    if producible is not None:
        for status in statuses:
            if status not in producible:
                problems.append(
                    Problem(path + (status,), f"role '{key}' cannot produce {STATUS_FIELD} '{status}' (its schema allows {', '.join(map(str, producible))})")
                )
        for value in producible:
            if value not in statuses:
                problems.append(Problem(path, f"{STATUS_FIELD} '{value}' of role '{key}' has no route: such a step would fail with 'no route'", "warning"))
    if STATUS_FIELD not in (schema.get("required") or []):
        problems.append(Problem(("roles", key, "meta"), f"'{STATUS_FIELD}' should be required: routing needs it", "warning"))


def _producible_values(schema: dict) -> list | None:
    """The statuses a `$status` schema allows, when it lists them (only strings can route)."""
    if "const" in schema:
        values = [schema["const"]]
    elif isinstance(schema.get("enum"), list):
        values = list(schema["enum"])
    else:
        return None
    return [value for value in values if isinstance(value, str)]


def _reachable(graph: dict[str, Routes], start: str) -> set[str]:
    seen = {start}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        routes = graph.get(current)
        for target in routes.targets() if routes else ():
            if target not in seen:
                seen.add(target)
                queue.append(target)
    return seen


def _reaching(graph: dict[str, Routes], goal: str) -> set[str]:
    incoming: dict[str, set[str]] = {}
    for key, routes in graph.items():
        for target in routes.targets():
            incoming.setdefault(target, set()).add(key)
    seen = {goal}
    queue = deque([goal])
    while queue:
        for source in incoming.get(queue.popleft(), ()):
            if source not in seen:
                seen.add(source)
                queue.append(source)
    return seen
