"""The child process of a python agent with `isolate: process`: `python -m uwf_core.engine.python.host`.

It reads the target and the context as JSON on stdin, calls the function (in its sandbox, killed
with its process group at the step's deadline, as every agent process is) and prints one JSON
object on stdout: {"output": ...}, {"text": ...}, {"answer": {...}}, or {"error": {...}}.
What the function prints goes to stderr, which uwf streams as the step's output.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    request = json.loads(sys.stdin.read())
    result_fd = os.dup(1)
    os.dup2(2, 1)  # the function's prints, and any C library's, join its stderr
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    reply = _call(request)
    try:
        text = json.dumps(reply, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        text = json.dumps({"error": {"type": "TypeError", "message": f"it returned what JSON cannot hold: {exc}", "traceback": ""}})
    with os.fdopen(result_fd, "w", encoding="utf-8") as out:
        out.write(text)
    return 0


def _call(request: dict) -> dict:
    from ...errors import UwfError
    from ..attempt import StepError
    from .call import FunctionFailed, call_function
    from .load import load_function
    from .context import PythonAnswer, PythonContext, WrittenStep, json_problem

    place = request["target"].rpartition(":")[0]
    if place.endswith(".py"):  # a script's function: its own directory on the path, as Python gives a script its siblings
        sys.path.insert(0, os.path.dirname(os.path.abspath(os.path.expanduser(place))))
    try:
        func = load_function(request["target"])
    except UwfError as exc:
        return {"error": {"type": "Load", "message": exc.message, "traceback": ""}}
    ctx = PythonContext.from_json(request["context"], dict(os.environ))
    try:
        result = call_function(func, ctx, deadline=ctx.deadline, cancel=None, on_output=_to_stderr)
    except StepError as exc:  # ctx.check(): the step's time is up
        return {"error": {"type": "StepError", "status": exc.status, "message": exc.message, "traceback": ""}}
    except FunctionFailed as exc:
        return {"error": {"type": exc.kind, "message": exc.message, "traceback": exc.trace}}
    if isinstance(result, PythonAnswer):
        checked = (("its output", result.output), ("its detail", result.detail))
    else:
        checked = (("its output", result),) if not isinstance(result, (str, WrittenStep)) else ()
    for what, value in checked:
        problem = json_problem(value)
        if problem:  # said as uwf's own process says it
            return {"error": {"type": "JSON", "message": f"{what} with {problem}", "traceback": ""}}
    read = {"promptRead": True} if ctx.prompt_read else {}
    if isinstance(result, PythonAnswer):
        return {"answer": {"output": result.output, "text": result.text, "detail": result.detail}, **read}
    if isinstance(result, WrittenStep):
        return {"error": {"type": "TypeError", "message": "an isolated function cannot write its own step (it has no store)", "traceback": ""}}
    if isinstance(result, str):
        return {"text": result, **read}
    return {"output": result, **read}


def _to_stderr(line: str) -> None:
    sys.__stderr__.write(line + "\n")
    sys.__stderr__.flush()


if __name__ == "__main__":
    sys.exit(main())
