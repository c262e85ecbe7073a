"""Turn a workflow YAML document into a typed draft, and lint it.

Everything a put could refuse is found here, before anything is written:
structure, role fields, output schemas, JSONata, Mustache, and the graph
(graph_lint.py: unknown names, dead ends, unreachable roles, no path to
$END, statuses a role cannot produce). Problems (draft.py) carry their YAML
path so messages can name the file, line and field.
"""

from __future__ import annotations

from ..errors import UwfError
from ..store.schemas import check_schema
from .model import (
    DEFAULT_MAX_STEPS,
    MAX_CONDITION_CHARS,
    MAX_CONDITIONS,
    MAX_ROLES,
    Condition,
    Role,
    Routes,
    Target,
    Transition,
    Workflow,
    leaves_directory,
)
from .draft import Draft, Problem, suggest
from .graph_lint import lint_graph
from .old_reads import has_output_field, old_read_message
from .yaml_doc import YamlDocument

NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
TOP_FIELDS = {"name", "description", "maxSteps", "maxTokens", "maxCost", "supervisorInterval", "workspace", "roles", "conditions", "graph"}
ROLE_FIELDS = {"description", "goal", "capabilities", "procedure", "output", "meta"}
REQUIRED_ROLE_FIELDS = ("description", "goal", "procedure", "output", "meta")


def build_draft(document: YamlDocument) -> Draft:
    """Parse and lint; the draft's problems list says whether it may be stored."""
    draft = Draft(document)
    data = document.data
    if not isinstance(data, dict):
        draft.problems.append(Problem((), "a workflow must be a YAML mapping (name, roles, graph, ...)"))
        return draft
    parser = _Parser(draft)
    workflow = parser.workflow(data)
    if workflow is not None and not draft.errors:
        draft.workflow = workflow
        lint_graph(draft, workflow)
    return draft


class _Parser:
    def __init__(self, draft: Draft) -> None:
        self.draft = draft

    def error(self, path: tuple, message: str) -> None:
        self.draft.problems.append(Problem(path, message))

    def warn(self, path: tuple, message: str) -> None:
        self.draft.problems.append(Problem(path, message, "warning"))

    def text(self, data: dict, key: str, path: tuple, *, required: bool, default: str = "") -> str:
        if key not in data or data[key] is None:
            if required:
                self.error(path, f"missing field '{key}'")
            return default
        value = data[key]
        if not isinstance(value, str):
            self.error(path + (key,), f"must be a string, got {type(value).__name__}")
            return default
        return value

    def workflow(self, data: dict) -> Workflow | None:
        if data and not any(key in data for key in ("name", "roles", "graph")):
            # A script of canned answers, a config file...: say that first, not a problem per key.
            self.error((), "not a workflow: it has none of 'name', 'roles' and 'graph'")
            return None
        for key in data:
            if key not in TOP_FIELDS:
                self.error((key,), f"unknown field '{key}'{suggest(key, TOP_FIELDS)}")
        name = self.text(data, "name", (), required=True)
        if name and not valid_workflow_name(name):
            self.error(("name",), f"'{name}' is not a valid workflow name ({NAME_RULE})")
        description = self.text(data, "description", (), required=False)
        max_steps = data.get("maxSteps", DEFAULT_MAX_STEPS)
        if max_steps is None:
            max_steps = DEFAULT_MAX_STEPS
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            self.error(("maxSteps",), f"must be a positive integer, got {max_steps!r}")
            max_steps = DEFAULT_MAX_STEPS
        max_tokens, max_cost = self.budget(data)
        interval = data.get("supervisorInterval")
        if interval is not None and (isinstance(interval, bool) or not isinstance(interval, int) or interval < 0):
            self.error(("supervisorInterval",), f"must be a whole number of steps (0: no supervisor), got {interval!r}")
            interval = None
        roles = self.roles(data.get("roles"), name)
        conditions = self.conditions(data.get("conditions"))
        graph = self.graph(data.get("graph"))
        if self.draft.errors:
            return None
        return Workflow(
            name, description, max_steps, roles, conditions, graph, max_tokens=max_tokens, max_cost=max_cost, snapshot=self.snapshot(data),
            supervisor_interval=interval,
        )

    def snapshot(self, data: dict) -> bool:
        """`workspace: {snapshot: false}`: this workflow's threads keep no snapshots of their files."""
        workspace = data.get("workspace")
        if workspace is None:
            return True
        if not isinstance(workspace, dict) or set(workspace) - {"snapshot"}:
            self.error(("workspace",), "must be a mapping {snapshot: true|false}")
            return True
        value = workspace.get("snapshot", True)
        if not isinstance(value, bool):
            self.error(("workspace", "snapshot"), f"must be true or false, got {value!r}")
            return True
        return value

    def budget(self, data: dict) -> tuple[int | None, float | None]:
        """maxTokens (a positive integer) and maxCost (a positive number, in the currency of the
        prices in config.yaml): a thread stops with reason `budget` once its steps used as much."""
        max_tokens = data.get("maxTokens")
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
            self.error(("maxTokens",), f"must be a positive integer (tokens), got {max_tokens!r}")
            max_tokens = None
        max_cost = data.get("maxCost")
        if max_cost is not None:
            if isinstance(max_cost, bool) or not isinstance(max_cost, (int, float)) or not 0 < max_cost < float("inf"):
                self.error(("maxCost",), f"must be a positive number (in the currency of config.yaml's prices), got {max_cost!r}")
                max_cost = None
            elif isinstance(max_cost, float) and max_cost.is_integer():
                max_cost = int(max_cost)  # stored as CBOR stores it: 5.0 is the integer 5
        return max_tokens, max_cost

    def roles(self, data: object, workflow_name: str) -> dict[str, Role]:
        if data is None:
            self.error((), "missing field 'roles'")
            return {}
        if not isinstance(data, dict) or not data:
            self.error(("roles",), "must be a non-empty mapping of role name to role")
            return {}
        if len(data) > MAX_ROLES:
            self.error(("roles",), f"{len(data):,} roles, more than a workflow may have ({MAX_ROLES:,})")
            return {}
        roles = {}
        for name, spec in data.items():
            path = ("roles", name)
            if not _valid_role_name(name):
                self.error(path, f"'{name}' is not a valid role name (letters, digits, '_', '-'; not starting with '$')")
                continue
            if not isinstance(spec, dict):
                self.error(path, "a role must be a mapping with description, goal, procedure, output and meta")
                continue
            if "map" in spec:
                roles[name] = self.map_role(name, spec, path, workflow_name)
                continue
            for key in spec:
                if key not in ROLE_FIELDS:
                    self.error(path + (key,), f"unknown role field '{key}'{suggest(key, ROLE_FIELDS | {'map'})}")
            missing = [key for key in REQUIRED_ROLE_FIELDS if spec.get(key) is None]
            for key in missing:
                self.error(path, f"role '{name}' is missing '{key}'")
            capabilities = spec.get("capabilities") or []
            if not isinstance(capabilities, list) or not all(isinstance(c, str) for c in capabilities):
                self.error(path + ("capabilities",), "must be a list of strings")
                capabilities = []
            meta = spec.get("meta")
            if meta is not None:
                self.role_schema(name, meta, path + ("meta",), workflow_name)
            roles[name] = Role(
                name=name,
                description=self.text(spec, "description", path, required=False),
                goal=self.text(spec, "goal", path, required=False),
                capabilities=tuple(capabilities),
                procedure=self.text(spec, "procedure", path, required=False),
                output=self.text(spec, "output", path, required=False),
                meta="",
            )
        return roles

    def map_role(self, name: str, spec: dict, path: tuple, workflow_name: str) -> Role:
        """A role whose work is done by child threads: a description and the map, nothing an agent reads."""
        from ..store.builtin_schemas import MAP_OUTPUT
        from .map_role import MAP_ROLE_FIELDS, parse_map

        for key in spec:
            if key not in MAP_ROLE_FIELDS:
                self.error(path + (key,), f"a map role has only a description and its map: '{key}' is for roles an agent answers")
        spec_map = parse_map(self, spec["map"], path + ("map",))
        self.draft.schemas[name] = {**MAP_OUTPUT, "title": f"{workflow_name}.{name}"}
        description = self.text(spec, "description", path, required=True)
        return Role(name=name, description=description, goal="", capabilities=(), procedure="", output="", meta="", map=spec_map)

    def role_schema(self, role: str, meta: object, path: tuple, workflow_name: str) -> None:
        try:
            check_schema(meta, "meta")
        except UwfError as exc:
            self.error(path, exc.message)  # "Invalid schema: meta...: why"
            return
        if meta.get("type") != "object":
            self.error(path, "the output schema must have 'type: object' (the frontmatter is a mapping)")
            return
        schema = dict(meta)
        schema.setdefault("title", f"{workflow_name}.{role}")
        self.draft.schemas[role] = schema

    def conditions(self, data: object) -> dict[str, Condition]:
        if data is None:
            return {}
        if not isinstance(data, dict):
            self.error(("conditions",), "must be a mapping of condition name to {description, expression}")
            return {}
        if len(data) > MAX_CONDITIONS:
            self.error(("conditions",), f"{len(data):,} conditions, more than a workflow may have ({MAX_CONDITIONS:,})")
            return {}
        conditions = {}
        for name, spec in data.items():
            path = ("conditions", name)
            if isinstance(spec, str):
                spec = {"expression": spec}
            if not isinstance(spec, dict):
                self.error(path, "a condition must be a mapping with 'expression' (and 'description')")
                continue
            for key in spec:
                if key not in ("description", "expression"):
                    self.error(path + (key,), f"unknown condition field '{key}'")
            expression = self.text(spec, "expression", path, required=True)
            description = self.text(spec, "description", path, required=False)
            if "expression" in spec and isinstance(spec["expression"], str) and not expression.strip():
                self.error(path + ("expression",), f"condition '{name}': the expression is empty")
            elif expression and len(expression) > MAX_CONDITION_CHARS:
                self.error(path + ("expression",), f"condition '{name}': {len(expression):,} characters, more than a condition may have ({MAX_CONDITION_CHARS:,})")
            elif expression:
                message = _jsonata_compile_error(expression)
                if message:
                    kind = "" if message.startswith("regular expression") else "JSONata syntax error: "  # valid JSONata, a regex RE2 refuses
                    self.error(path + ("expression",), f"condition '{name}': {kind}{message}")
                for function, close in [] if message else _unknown_functions(expression):
                    hint = f" (did you mean ${close}?)" if close else ""
                    self.error(
                        path + ("expression",),
                        f"condition '{name}' calls ${function}, which is neither a JSONata function nor uwf's ({UWF_NAMES}){hint}",
                    )
                for function, role in [] if message else _output_reads(expression):
                    if role is None or not has_output_field(self.draft.schemas.get(role)):
                        self.warn(path + ("expression",), old_read_message(name, function, role))
            conditions[str(name)] = Condition(str(name), description, expression)
        return conditions

    def graph(self, data: object) -> dict[str, Routes]:
        if data is None:
            self.error((), "missing field 'graph'")
            return {}
        if not isinstance(data, dict) or not data:
            self.error(("graph",), "must be a mapping of $START and role names to their transitions")
            return {}
        graph = {}
        for key, value in data.items():
            path = ("graph", key)
            if isinstance(value, list):
                graph[str(key)] = Routes(transitions=tuple(self.transitions(value, path)))
            elif isinstance(value, dict):
                graph[str(key)] = Routes(statuses=self.status_map(value, path))
            elif value is None:
                graph[str(key)] = Routes(transitions=())
            else:
                self.error(path, "must be a list of transitions or a mapping of $status to target")
        return graph

    def transitions(self, items: list, path: tuple) -> list[Transition]:
        result = []
        for index, item in enumerate(items):
            item_path = path + (index,)
            if not isinstance(item, dict):
                self.error(item_path, "a transition must be a mapping {role, condition, prompt?}")
                continue
            for key in item:
                if key not in ("role", "condition", "prompt"):
                    self.error(item_path + (key,), f"unknown transition field '{key}'")
            role = self.text(item, "role", item_path, required=True)
            condition = item.get("condition")
            if condition is not None and not isinstance(condition, str):
                self.error(item_path + ("condition",), "must be a condition name or null")
                condition = None
            prompt = self.prompt(item, item_path)
            result.append(Transition(role, condition, prompt))
        return result

    def status_map(self, mapping: dict, path: tuple) -> dict[str, Target]:
        result = {}
        for status, target in mapping.items():
            target_path = path + (status,)
            if isinstance(target, str):
                target = {"role": target}
            if not isinstance(target, dict):
                self.error(target_path, "a status target must be a role name or a mapping {role, prompt?}")
                continue
            for key in target:
                if key not in ("role", "prompt", "location"):
                    self.error(target_path + (key,), f"unknown target field '{key}'")
            role = self.text(target, "role", target_path, required=True)
            location = self.location(target, target_path)
            result[str(status)] = Target(str(status), role, self.prompt(target, target_path), location)
        return result

    def location(self, item: dict, path: tuple) -> str | None:
        """A working directory relative to the thread's workspace, which it may not leave: a
        Mustache template rendered with the last output. What can be known before it is rendered
        is checked here: its syntax, and the text before its first variable."""
        location = item.get("location")
        if location is None:
            return None
        where = path + ("location",)
        if not isinstance(location, str) or not location.strip():
            self.error(where, "must be a directory path relative to the thread's workspace")
            return None
        message = _mustache_error(location)
        if message:
            self.error(where, f"Mustache template error: {message}")
            return None
        fixed, templated = _literal_prefix(location)
        if fixed.startswith(("/", "~")) or "\0" in fixed:
            self.error(where, f"'{location}' must be relative to the thread's workspace, not absolute")
            return None
        climbs = fixed if not templated else fixed.rsplit("/", 1)[0] if "/" in fixed else ""
        if climbs and leaves_directory(climbs):
            self.error(where, f"'{location}' leaves the thread's workspace")
            return None
        return location

    def prompt(self, item: dict, path: tuple) -> str | None:
        prompt = item.get("prompt")
        if prompt is None:
            return None
        if not isinstance(prompt, str):
            self.error(path + ("prompt",), "must be a Mustache template string")
            return None
        message = _mustache_error(prompt)
        if message:
            self.error(path + ("prompt",), f"Mustache template error: {message}")
        elif _renders_blank(prompt):
            self.error(path + ("prompt",), "the prompt is empty: it would hand the next role no instruction (leave it out instead)")
        return prompt


NAME_RULE = "letters, digits, '.', '_', '-', beginning with a letter or digit, at most 100"


def valid_workflow_name(name: str) -> bool:
    """The names `workflow put` registers (and a bundle may bring): never a path or a line break."""
    return 0 < len(name) <= 100 and NAME_CHARS.issuperset(name) and name[0].isalnum()


def _valid_role_name(name: object) -> bool:
    return isinstance(name, str) and bool(name) and not name.startswith("$") and NAME_CHARS.issuperset(name)


UWF_NAMES = "$first, $last, $firstStep, $lastStep"


def _output_reads(expression: str) -> list[tuple[str, str | None]]:
    from .jsonata_expr import output_reads

    return output_reads(expression)


def _jsonata_compile_error(expression: str) -> str | None:
    from .jsonata_expr import compile_error

    return compile_error(expression)


def _literal_prefix(template: str) -> tuple[str, bool]:
    """The template's text before its first tag, and whether it has tags at all."""
    from .templates import literal_prefix

    return literal_prefix(template)


def _renders_blank(template: str) -> bool:
    from .templates import renders_blank

    return renders_blank(template)


def _unknown_functions(expression: str) -> list[tuple[str, str | None]]:
    from .jsonata_expr import unknown_functions

    return unknown_functions(expression)


def _mustache_error(template: str) -> str | None:
    from .templates import template_error

    return template_error(template)
