"""JSONata conditions: compile once, evaluate against a thread context.

jsonata-python costs ~40 ms to import, so it is imported only here, and
only when an expression is actually compiled or evaluated.
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
    import jsonata

    try:
        compiled = jsonata.Jsonata(expression)
    except Exception as exc:  # jsonata raises its own JException and, on odd input, plain errors
        raise UwfError(_message(exc)) from None
    _compiled[expression] = compiled
    return compiled


def evaluate(expression: str, context: object) -> object:
    """The expression's value; a runtime failure raises UwfError with JSONata's message."""
    compiled = _compile(expression)
    try:
        return compiled.evaluate(context)
    except Exception as exc:
        raise UwfError(_message(exc)) from None


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
