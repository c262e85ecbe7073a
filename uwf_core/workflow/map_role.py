"""A role's `map:` as written in YAML: parsed and linted into a MapSpec (the fan-out itself runs
in engine/fanout/map.py)."""

from __future__ import annotations

from .model import ON_FAILURE, MapSpec

MAP_FIELDS = {"over", "workflow", "prompt", "maxParallel", "onFailure"}
MAP_ROLE_FIELDS = {"description", "map"}  # no agent answers a map role: no goal, procedure, output or meta


def parse_map(parser, data: object, path: tuple) -> MapSpec | None:
    """`parser` is lint's _Parser: its error() records a problem at a YAML path."""
    from .jsonata_expr import compile_error, unknown_functions
    from .templates import template_error

    if not isinstance(data, dict):
        parser.error(path, "must be a mapping {over, workflow, prompt?, maxParallel?, onFailure?}")
        return None
    for key in data:
        if key not in MAP_FIELDS:
            parser.error(path + (key,), f"unknown map field '{key}' (the fields: {', '.join(sorted(MAP_FIELDS))})")
    over = parser.text(data, "over", path, required=True)
    workflow = parser.text(data, "workflow", path, required=True)
    prompt = data.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        parser.error(path + ("prompt",), f"must be a Mustache template (a string), got {type(prompt).__name__}")
        prompt = None
    if over and (problem := compile_error(over)):
        parser.error(path + ("over",), f"JSONata does not compile: {problem}")
    elif over:
        for function, close in unknown_functions(over):
            hint = f" (did you mean ${close}?)" if close else ""
            parser.error(path + ("over",), f"over calls ${function}, which is neither a JSONata function nor uwf's{hint}")
    if prompt and (problem := template_error(prompt)):
        parser.error(path + ("prompt",), f"Mustache template does not parse: {problem}")
    limit = data.get("maxParallel")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        parser.error(path + ("maxParallel",), f"must be a positive integer (children stepping at a time), got {limit!r}")
        limit = None
    on_failure = data.get("onFailure", "fail")
    if on_failure not in ON_FAILURE:
        parser.error(path + ("onFailure",), f"must be one of {', '.join(ON_FAILURE)}, got {on_failure!r}")
        on_failure = "fail"
    if not over or not workflow:
        return None
    return MapSpec(over, workflow, prompt, limit, on_failure)
