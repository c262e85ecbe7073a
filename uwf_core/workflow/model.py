"""The typed form of a stored workflow, and its CAS payload shape."""

from __future__ import annotations

from ..encoding.records import field, record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any

START = "$START"
END = "$END"
STATUS_FIELD = "$status"
DEFAULT_MAX_STEPS = 100
MAX_ROLES = 500  # a workflow of more is generated, and each role costs a schema and a lint
MAX_CONDITIONS = 500
MAX_CONDITION_CHARS = 10_000  # a condition is a few path lookups; compiling 2 MB of one took 30 s and 1 GB


ON_FAILURE = ("fail", "collect")  # a map's child that fails: the step fails, or its failure is collected


@record(frozen=True)
class MapSpec:
    """A role that fans out: one child thread of `workflow` per item of `over` (JSONata over the
    last output, as a route's prompt sees it), all started at once, joined in item order."""

    over: str
    workflow: str  # the children's workflow: a registry name or hash, resolved when the map starts
    prompt: str | None = None  # Mustache over {item, index, number, prompt}; None: the item itself
    max_parallel: int | None = None  # children stepping at a time; None: all
    on_failure: str = "fail"

    def to_payload(self) -> dict[str, Any]:
        data: dict[str, Any] = {"over": self.over, "workflow": self.workflow, "onFailure": self.on_failure}
        if self.prompt is not None:
            data["prompt"] = self.prompt
        if self.max_parallel is not None:
            data["maxParallel"] = self.max_parallel
        return data

    @classmethod
    def from_payload(cls, data: dict[str, Any]) -> MapSpec:
        return cls(data["over"], data["workflow"], data.get("prompt"), data.get("maxParallel"), data.get("onFailure", "fail"))


@record(frozen=True)
class Role:
    """One role as stored in the workflow node: the prompt's parts, and the hash of the schema
    every answer for the role is held to."""

    name: str
    description: str
    goal: str
    capabilities: tuple[str, ...]
    procedure: str
    output: str
    meta: str  # hash of the role's output schema node
    map: MapSpec | None = None  # a fan-out role: children do its work, no agent runs

    def to_payload(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "description": self.description,
            "goal": self.goal,
            "capabilities": list(self.capabilities),
            "procedure": self.procedure,
            "output": self.output,
            "meta": self.meta,
        }
        if self.map is not None:
            data["map"] = self.map.to_payload()
        return data


@record(frozen=True)
class Condition:
    name: str
    description: str
    expression: str


@record(frozen=True)
class Transition:
    """One entry of a transition list: taken when `condition` is null or true."""

    role: str
    condition: str | None
    prompt: str | None = None

    def to_payload(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "condition": self.condition}
        if self.prompt is not None:
            data["prompt"] = self.prompt
        return data


@record(frozen=True)
class Target:
    """One entry of a status map: taken when the last output's `$status` is `status`."""

    status: str
    role: str
    prompt: str | None = None
    location: str | None = None  # the role's working directory, relative to the thread's workspace

    def to_payload(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role}
        if self.prompt is not None:
            data["prompt"] = self.prompt
        if self.location is not None:
            data["location"] = self.location
        return data


@record(frozen=True)
class Routes:
    """A graph key's outgoing edges: exactly one of the two forms is set."""

    transitions: tuple[Transition, ...] | None = None
    statuses: dict[str, Target] | None = None

    @property
    def is_status_map(self) -> bool:
        return self.statuses is not None

    def targets(self) -> list[str]:
        if self.statuses is not None:
            return [target.role for target in self.statuses.values()]
        return [transition.role for transition in self.transitions or ()]

    def to_payload(self) -> list[dict[str, Any]] | dict[str, Any]:
        if self.statuses is not None:
            return {status: target.to_payload() for status, target in self.statuses.items()}
        return [transition.to_payload() for transition in self.transitions or ()]


@record(frozen=True)
class Workflow:
    """A workflow as stored: frozen, because one decoded node is shared by every step that reads
    it (`workflow_of` caches it by hash)."""

    name: str
    description: str
    max_steps: int
    roles: dict[str, Role]
    conditions: dict[str, Condition]
    graph: dict[str, Routes]
    hash: str | None = field(default=None, compare=False)
    max_tokens: int | None = None  # budget: no new step once the thread's steps used this many tokens
    max_cost: float | None = None  # budget: ... or cost this much (prices in config.yaml)
    snapshot: bool = True  # False: its threads' files are not snapshot (`workspace: {snapshot: false}`)
    supervisor_interval: int | None = None  # a supervisor every N steps (0: none; None: config.yaml's)
    old_reads: tuple[str, ...] = field(default=(), compare=False)  # warned at each step it routes (workflow/old_reads.py)

    @property
    def has_budget(self) -> bool:
        return self.max_tokens is not None or self.max_cost is not None

    @property
    def maps(self) -> bool:
        """True when a role fans out (stored under its own schema)."""
        return any(role.map is not None for role in self.roles.values())

    @property
    def names_locations(self) -> bool:
        """True when a status-map target names a working directory (stored under its own schema)."""
        return any(target.location for routes in self.graph.values() for target in (routes.statuses or {}).values())

    def to_payload(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "maxSteps": self.max_steps,
            "roles": {name: role.to_payload() for name, role in self.roles.items()},
            "conditions": {
                name: {"description": c.description, "expression": c.expression} for name, c in self.conditions.items()
            },
            "graph": {key: routes.to_payload() for key, routes in self.graph.items()},
            **({"maxTokens": self.max_tokens} if self.max_tokens is not None else {}),
            **({"maxCost": self.max_cost} if self.max_cost is not None else {}),
            **({} if self.snapshot else {"workspace": {"snapshot": False}}),
            **({"supervisorInterval": self.supervisor_interval} if self.supervisor_interval is not None else {}),
        }

    @classmethod
    def from_payload(cls, payload: dict[str, Any], hash_: str | None = None) -> Workflow:
        """Rebuild from a stored payload (already validated against the workflow schema)."""
        roles = {
            name: Role(
                name=name,
                description=data["description"],
                goal=data["goal"],
                capabilities=tuple(data["capabilities"]),
                procedure=data["procedure"],
                output=data["output"],
                meta=data["meta"],
                map=MapSpec.from_payload(data["map"]) if "map" in data else None,
            )
            for name, data in payload["roles"].items()
        }
        conditions = {
            name: Condition(name, data.get("description", ""), data["expression"])
            for name, data in payload["conditions"].items()
        }
        graph = {key: routes_from_payload(value) for key, value in payload["graph"].items()}
        order = graph_order(graph)
        roles = {name: roles[name] for name in sorted(roles, key=lambda name: order.get(name, len(order)))}
        graph = {key: graph[key] for key in sorted(graph, key=lambda key: order.get(key, len(order)))}
        return cls(
            name=payload["name"],
            description=payload["description"],
            max_steps=payload["maxSteps"],
            roles=roles,
            conditions=conditions,
            graph=graph,
            hash=hash_,
            max_tokens=payload.get("maxTokens"),
            max_cost=payload.get("maxCost"),
            snapshot=(payload.get("workspace") or {}).get("snapshot", True) is not False,
            supervisor_interval=payload.get("supervisorInterval"),
        )


def graph_order(graph: dict[str, Routes]) -> dict[str, int]:
    """Breadth-first position of each key from $START.

    Stored payloads are CBOR maps, which keep keys in canonical (not
    authored) order; walking the graph gives a stable, readable order back.
    """
    order = {START: 0}
    queue = [START]
    while queue:
        routes = graph.get(queue.pop(0))
        for target in routes.targets() if routes else ():
            if target not in order:
                order[target] = len(order)
                queue.append(target)
    return order


def routes_from_payload(value: list[dict[str, Any]] | dict[str, Any]) -> Routes:
    if isinstance(value, dict):
        return Routes(
            statuses={
                status: Target(status, target["role"], target.get("prompt"), target.get("location"))
                for status, target in value.items()
            }
        )
    return Routes(
        transitions=tuple(Transition(item["role"], item["condition"], item.get("prompt")) for item in value)
    )


def leaves_directory(path: str) -> bool:
    """True when a relative path climbs out of the directory it starts in (`..`, `a/../../b`)."""
    import posixpath

    normal = posixpath.normpath(path)
    return normal == ".." or normal.startswith("../")
