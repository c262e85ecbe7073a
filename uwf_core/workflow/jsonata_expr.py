"""JSONata conditions: compile once, evaluate against a thread context.

jsonata-python costs ~40 ms to import, so it is imported only here, and
only when an expression is actually compiled or evaluated. Its regex literals
run on RE2 (linear time), not Python's `re` (linear_regex.py).
"""

from __future__ import annotations

import math
import threading

from ..errors import UwfError

# A compiled expression keeps its input and clock in itself while evaluating, so
# each thread (the TUI steps several threads at once) gets its own compilations.
_local = threading.local()


def compile_error(expression: str) -> str | None:
    """The compiler's message for a bad expression, or None when it compiles."""
    try:
        _compile(expression)
    except UwfError as exc:
        return exc.message
    return None


def _compile(expression: str):
    _compiled = _local.__dict__.setdefault("compiled", {})
    cached = _compiled.get(expression)
    if cached is not None:
        return cached
    from .model import MAX_CONDITION_CHARS

    if len(expression) > MAX_CONDITION_CHARS:  # a workflow from a bundle is not linted
        raise UwfError(f"the expression has {len(expression):,} characters, more than a condition may have ({MAX_CONDITION_CHARS:,})")
    import jsonata

    from .linear_regex import linear_regex

    try:
        compiled = jsonata.Jsonata(expression, linear_regex)
    except Exception as exc:  # jsonata raises its own JException and, on odd input, plain errors
        raise UwfError(_message(exc)) from None
    _compiled[expression] = compiled
    return compiled


# uwf's own functions of a role name. $first / $last are the reference moderator's (its
# findByRole): the *output* of the role's first / last step in the thread. $firstStep / $lastStep
# are uwf's: the whole step, {role, output, detail, agent}. Each is undefined when the role has not run.
UWF_FUNCTIONS = ("first", "last", "firstStep", "lastStep")

# A condition is a few path lookups: one that runs for seconds or recurses this deep is runaway
# (a tail call such as `$f := function($x){ $f($x) }` never hits Python's recursion limit).
TIME_LIMIT_SECONDS = 5.0
GRACE_SECONDS = 0.5  # past the limit, for jsonata's own clock to say it first
MAX_DEPTH = 500


def evaluate(expression: str, context: object, time_limit: float | None = None, functions: dict | None = None) -> object:
    """The expression's value against a thread context's JSON ({start, steps}), stopped after
    `time_limit` seconds (default TIME_LIMIT_SECONDS); a runtime failure raises UwfError with
    JSONata's message. `functions` gives UWF_FUNCTIONS by name (role -> value); without them they
    look through the steps in `context`. Conditions in simple_condition's subset are evaluated
    without importing jsonata-python, with its exact result; others in a child process with a
    hard deadline and a memory cap (condition_box.py)."""
    simple = _simple(expression)
    if simple is not None:
        from .simple_condition import UNDEFINED, Unsupported

        try:
            value = simple(context, functions)
            return None if value is UNDEFINED else value
        except Unsupported:
            pass  # JSONata does something the subset does not: let it decide
    compiled = _compile(expression)
    steps = context.get("steps") if isinstance(context, dict) else None
    steps = steps if isinstance(steps, list) else []
    functions = {**_functions_over(steps), **(functions or {})}
    for name in UWF_FUNCTIONS:
        compiled.register_lambda(name, functions[name])
    limit = TIME_LIMIT_SECONDS if time_limit is None else min(time_limit, TIME_LIMIT_SECONDS)

    def work() -> object:
        compiled.environment.set_runtime_bounds(max(1, int(limit * 1000)), MAX_DEPTH)  # the clock starts now
        try:
            return compiled.evaluate(context)
        except RecursionError:
            raise UwfError("the expression recursed too deeply (more than Python's stack allows)") from None
        except MemoryError:
            raise  # the box says how much it was allowed
        except Exception as exc:
            raise UwfError(_message(exc)) from None

    from .condition_box import run_boxed

    # In a child of its own: the time limit holds inside one built-in too, and memory is capped.
    return run_boxed(work, limit, GRACE_SECONDS)


def _functions_over(steps: list) -> dict:
    """UWF_FUNCTIONS looking through the context's own steps (when the caller gives none)."""

    def step_of(role: object, newest: bool) -> object:
        found = (step for step in (reversed(steps) if newest else steps) if isinstance(step, dict) and step.get("role") == role)
        return next(found, None)

    def output_of(role: object, newest: bool) -> object:
        step = step_of(role, newest)
        return step.get("output") if step is not None else None

    return {
        "first": lambda role: output_of(role, False),
        "last": lambda role: output_of(role, True),
        "firstStep": lambda role: step_of(role, False),
        "lastStep": lambda role: step_of(role, True),
    }


def steps_window(expression: str) -> int | None:
    """How many of the newest steps the expression can see, when that is bounded: every use of
    `steps` is `steps[-k]` with a literal k (and nothing reaches the steps another way: `$`,
    `$$`, wildcards, parents). None when it may need them all (`$count(steps)`, `steps[0]`,
    `steps[role='x']`...). Conditions like `steps[-1].output.approved` then cost the same at
    10,000 steps as at ten. The expression must compile."""
    cache = _local.__dict__.setdefault("windows", {})
    if expression not in cache:
        simple = _simple(expression)
        cache[expression] = simple.window if simple is not None else _window(_compile(expression).ast)
    return cache[expression]


def _simple(expression: str):
    """The expression compiled by simple_condition, or None when it is outside the subset."""
    cache = _local.__dict__.setdefault("simple", {})
    if expression not in cache:
        from .simple_condition import compile_condition

        cache[expression] = compile_condition(expression)
    return cache[expression]


def _window(root: object) -> int | None:
    newest = 0
    stack = [(root, None)]
    seen: set[int] = set()
    while stack:
        node, parent = stack.pop()
        if isinstance(node, (list, tuple)):
            stack.extend((item, parent) for item in node)
            continue
        if not hasattr(node, "type") or id(node) in seen:
            continue
        seen.add(id(node))
        kind, value = node.type, getattr(node, "value", None)
        if kind in ("wildcard", "descendant", "parent") or (kind == "variable" and value in ("", "$")):
            return None  # reaches the data without naming `steps`
        if kind == "name" and value == "steps":
            back = _negative_index(node, parent)
            if back is None:
                return None
            newest = max(newest, back)
        for child in vars(node).values():
            if isinstance(child, (list, tuple)) or hasattr(child, "type"):
                stack.append((child, node))
    return newest


def _negative_index(name: object, parent: object) -> int | None:
    """k when `name` (a `steps` name node) is the head of a path and filtered by exactly `[-k]`."""
    path_steps = getattr(parent, "steps", None) if getattr(parent, "type", None) == "path" else None
    if not path_steps or path_steps[0] is not name or getattr(name, "predicate", None):
        return None
    stages = getattr(name, "stages", None) or []
    if len(stages) != 1 or getattr(stages[0], "type", None) != "filter":
        return None
    index = getattr(stages[0], "expr", None)
    value = getattr(index, "value", None)
    if getattr(index, "type", None) != "number" or not isinstance(value, (int, float)) or value >= 0 or value != int(value):
        return None
    return -int(value)


def unknown_functions(expression: str) -> list[tuple[str, str | None]]:
    """Functions the expression calls that are neither JSONata's, uwf's, nor defined in the
    expression itself, each with the closest known name (or None). The expression must compile."""
    import difflib

    import jsonata

    calls: list[str] = []
    defined: set[str] = set()
    _collect_names(_compile(expression).ast, calls, defined, set())
    known = set(jsonata.Jsonata.static_frame.bindings) | set(UWF_FUNCTIONS)
    unknown = [name for name in dict.fromkeys(calls) if name not in known and name not in defined]
    return [(name, next(iter(difflib.get_close_matches(name, sorted(known), n=1)), None)) for name in unknown]


def _collect_names(root: object, calls: list[str], defined: set[str], seen: set[int]) -> None:
    for node in _walk(root, seen):
        kind = node.type
        procedure = getattr(node, "procedure", None)
        if kind in ("function", "partial") and getattr(procedure, "type", None) == "variable" and isinstance(procedure.value, str):
            calls.append(procedure.value)
        if kind == "bind" and getattr(getattr(node, "lhs", None), "type", None) == "variable":
            defined.add(node.lhs.value)
        if kind == "lambda":
            defined.update(arg.value for arg in getattr(node, "arguments", None) or () if getattr(arg, "type", None) == "variable")


def _walk(root: object, seen: set[int]):
    """Every node of jsonata's AST (objects with a `type`; children in attributes and lists),
    each once, without recursion."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, (list, tuple)):
            stack.extend(reversed(node))
            continue
        if not hasattr(node, "type") or id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(reversed([value for value in vars(node).values() if isinstance(value, (list, tuple)) or hasattr(value, "type")]))


def output_reads(expression: str) -> list[tuple[str, str | None]]:
    """Where the expression reads `.output` of what $first / $last return — uwf's meaning of them
    before they returned the output itself, as the reference's do: (function, role) pairs, the
    role None when it is not a string literal. The expression must compile."""
    found = []
    for node in _walk(_compile(expression).ast, set()):
        steps = getattr(node, "steps", None) if node.type == "path" else None
        if not steps or len(steps) < 2 or steps[0].type != "function":
            continue
        procedure, arguments = getattr(steps[0], "procedure", None), getattr(steps[0], "arguments", None) or []
        name = getattr(procedure, "value", None) if getattr(procedure, "type", None) == "variable" else None
        if name in ("first", "last") and steps[1].type == "name" and steps[1].value == "output":
            role = arguments[0].value if len(arguments) == 1 and arguments[0].type == "string" else None
            found.append((name, role))
    return found


def truthy(value: object) -> bool:
    """The reference's rule: null/undefined false, booleans as is, numbers non-zero and not NaN,
    strings non-empty, anything else true."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0 and not math.isnan(value)
    if isinstance(value, str):
        return value != ""
    return True


def _message(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
