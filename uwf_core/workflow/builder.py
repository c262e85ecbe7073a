"""A workflow built in code: typed values that say what the YAML says, for `put_workflow`, which
checks them exactly as it checks a file (every problem at once, each with its field, in these
classes' words). Plain frozen dataclasses: `dataclasses.replace` makes a variant.

    put_workflow(repo, WorkflowSpec(
        name="draft-review", description="a writer and a critic",
        roles={"writer": RoleSpec("writes the draft", goal="...", procedure="...", output="the draft",
                                  schema={"type": "object", "properties": {"draft": {"type": "string"}}, "required": ["draft"]}),
               "critic": RoleSpec(...)},
        conditions={"rejected": "steps[-1].output.approved = false"},
        graph={"$START": [Route("writer")], "writer": [Route("critic")],
               "critic": [Route("writer", when="rejected"), Route("$END")]},
    ))
"""

from __future__ import annotations

from dataclasses import dataclass, field

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from .draft import Draft


@dataclass(frozen=True)
class Route:
    """A transition to `role` (or `$END`): taken `when` the named condition holds (None: always),
    with `prompt`, a Mustache template, as the next role's instruction. In a status map (the graph
    keyed by the last output's `$status`), `location` is the role's directory in the workspace."""

    role: str
    when: str | None = None
    prompt: str | None = None
    location: str | None = None

    def to_dict(self, in_status_map: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role} if in_status_map else {"role": self.role, "condition": self.when}
        if self.prompt is not None:
            data["prompt"] = self.prompt
        if self.location is not None:
            data["location"] = self.location
        return data


@dataclass(frozen=True)
class RoleSpec:
    """One role: what its agent is for, and `schema`, the JSON Schema of its output (the YAML's
    `meta`). A map role gives `map` (over, workflow, prompt, maxParallel, onFailure) instead of
    the agent's fields."""

    description: str
    goal: str = ""
    procedure: str = ""
    output: str = ""
    schema: Mapping[str, object] | None = None
    capabilities: Sequence[str] = ()
    map: Mapping[str, object] | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.map is not None:
            return {"description": self.description, "map": dict(self.map)}
        data: dict[str, Any] = {"description": self.description, "goal": self.goal}
        if self.capabilities:
            data["capabilities"] = list(self.capabilities)
        data.update(procedure=self.procedure, output=self.output)
        if self.schema is not None:
            data["meta"] = dict(self.schema)
        return data


@dataclass(frozen=True)
class WorkflowSpec:
    """A whole workflow. `graph` maps each role (and `$START`) to its routes: a list of `Route`s
    (the first whose condition holds wins), or a status map `{status: Route or role name}`.
    `conditions` maps a name to its JSONata expression, or to `(description, expression)`."""

    name: str
    description: str
    roles: Mapping[str, RoleSpec]
    graph: Mapping[str, Sequence[Route] | Mapping[str, Route | str]]
    conditions: Mapping[str, str | tuple[str, str]] = field(default_factory=dict)
    max_steps: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None
    supervisor_interval: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The workflow as its YAML says it."""
        data: dict[str, Any] = {"name": self.name, "description": self.description}
        for key, value in (("maxSteps", self.max_steps), ("maxTokens", self.max_tokens), ("maxCost", self.max_cost),
                           ("supervisorInterval", self.supervisor_interval)):
            if value is not None:
                data[key] = value
        data["roles"] = {name: role.to_dict() if isinstance(role, RoleSpec) else role for name, role in self.roles.items()}
        if self.conditions:
            data["conditions"] = {name: _condition(name, value) for name, value in self.conditions.items()}
        data["graph"] = {name: _routes(routes) for name, routes in self.graph.items()}
        return data


def _condition(name: str, value: object) -> object:
    if isinstance(value, str):
        return {"description": name, "expression": value}
    if isinstance(value, tuple) and len(value) == 2:
        return {"description": value[0], "expression": value[1]}
    return value  # as it is: the lint says what is wrong with it


def _routes(routes: object) -> object:
    if isinstance(routes, dict):
        return {status: route.to_dict(in_status_map=True) if isinstance(route, Route) else route for status, route in routes.items()}
    if isinstance(routes, (list, tuple)):
        return [route.to_dict() if isinstance(route, Route) else route for route in routes]
    return routes


SPEC_WORDS = {"meta": "schema", "condition": "when", "maxSteps": "max_steps", "maxTokens": "max_tokens", "maxCost": "max_cost",
              "supervisorInterval": "supervisor_interval"}


class SpecDocument:
    """The YAML a spec was written out as (stored as its source), whose problems are said of the
    spec by field: it has no lines of its own."""

    def __init__(self, document: object, name: str) -> None:
        self._document = document
        self.file = f"WorkflowSpec {name!r}"

    def line_of(self, path: tuple[object, ...]) -> None:
        return None

    def __getattr__(self, name: str) -> object:
        return getattr(self._document, name)


def in_spec_words(draft: Draft, name: str) -> Draft:
    """The lint's problems, said of the spec's fields (`schema`, `when`, `max_steps`) rather than
    of the YAML it was written out as, and without that YAML's line numbers."""
    from ..encoding.records import replace
    from .draft import Problem

    def said(problem: Problem) -> Problem:
        path = tuple(SPEC_WORDS.get(part, part) if isinstance(part, str) else part for part in problem.path)
        message = problem.message
        for yaml_word, word in SPEC_WORDS.items():
            message = message.replace(f"'{yaml_word}'", f"'{word}'")
        return replace(problem, path=path, message=message)

    return replace(draft, document=SpecDocument(draft.document, name), problems=[said(problem) for problem in draft.problems])
