"""`uwf-subflow`: run a whole child workflow as one role of a parent thread.

`uwf-subflow --workflow develop` as the `developer` of `solve-issue` starts a
child thread whose prompt comes from the parent's context, runs it to done
(each child step spawning its own agents as usual), and answers the parent
role with an output extracted for the parent's schema: the child's outputs
merged (later steps win) when they fit, else through the LLM fallback over
the child's transcript. The detail node names the child's terminal StepNode
(`child`) and thread. The child thread stays listed and inspectable; killing
the parent's run kills the child's; UWF_DEPTH with --max-depth stops recursion.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from ..engine.contain.process import Cancel
from ..errors import UwfError
from .kit import AgentAnswer, AgentContext, make_undumpable, run_agent

NAME = "uwf-subflow"
DEFAULT_MAX_DEPTH = 3


def _configure(parser) -> None:
    parser.add_argument("--workflow", required=True, metavar="NAME", help="the child workflow (registry name or hash)")
    parser.add_argument("--agent", dest="bind", action="append", default=[], metavar="ROLE=AGENT", help="bind a child role to an agent")
    parser.add_argument("--child-agent", metavar="CMD", help="agent for every child step (like `uwf thread step --agent`)")
    parser.add_argument("--max-depth", type=int, default=DEFAULT_MAX_DEPTH, metavar="N", help="refuse to nest deeper than N")
    parser.add_argument("--timeout", type=float, metavar="S", help="timeout of each child step")


def child_prompt(ctx: AgentContext) -> str:
    parts = [ctx.context.start.prompt.strip()]
    if ctx.instruction:
        parts.append(ctx.instruction.strip())
    history = [f"- {step.role}: {json.dumps(step.output, ensure_ascii=False)}" for step in ctx.context.steps[-10:]]
    if history:
        parts.append(f"Context from the parent workflow '{ctx.workflow.name}':\n" + "\n".join(history))
    parts.append(f"(You are running as the '{ctx.role.name}' role of '{ctx.workflow.name}'.)")
    return "\n\n".join(parts)


def merged_output(outputs: list[object], schema: dict) -> dict:
    """The child's outputs merged in order, kept to the parent schema's properties."""
    merged: dict = {}
    for output in outputs:
        if isinstance(output, dict):
            merged.update(output)
    properties = schema.get("properties") or {}
    if properties and schema.get("additionalProperties") is not True:
        merged = {key: value for key, value in merged.items() if key in properties}
    return merged


def run(ctx: AgentContext) -> AgentAnswer:
    from ..engine.resolve import parse_assignments
    from ..thread.ops import start_thread

    make_undumpable()  # it holds .env for its children's agents: none of them may read it from /proc
    options = ctx.options
    depth = int(os.environ.get("UWF_DEPTH") or 0)
    if depth >= options["max_depth"]:
        raise UwfError(f"sub-workflow depth limit reached: this would be depth {depth + 1}, --max-depth is {options['max_depth']}")
    os.environ["UWF_DEPTH"] = str(depth + 1)
    bindings = parse_assignments(options["bind"]) or None
    child = start_thread(ctx.repo, options["workflow"], child_prompt(ctx), ctx.workspace if ctx.context.start.workspace else None, bindings)
    sys.stderr.write(f"{NAME}: child thread {child.thread} ({options['workflow']})\n")
    _run_child(ctx, child.thread)
    return _answer_from_child(ctx, child.thread)


def _run_child(ctx: AgentContext, thread: str) -> None:
    """Step the child to done. A SIGTERM or SIGINT of this agent cancels the child's step and
    kills the child thread, so killing the parent's run kills the child's."""
    from ..engine.attempt import StepOptions
    from ..engine.step import run_thread

    cancel = Cancel()

    def on_signal(signum, frame) -> None:
        # The child step sees the flag within 0.1 s, kills its agent's group and
        # records the attempt as killed; the kill of this process waits for that.
        cancel.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    options = StepOptions(
        agent=ctx.options.get("child_agent"),
        timeout=ctx.options.get("timeout"),
        on_output=lambda line: sys.stderr.write(line + "\n"),
        cancel=cancel,
    )
    try:
        result = run_thread(ctx.repo, thread, options)
    except UwfError as exc:
        if cancel.is_set():
            _kill_quietly(ctx, thread)
            raise UwfError(f"cancelled; child thread {thread} was killed") from None
        raise UwfError(f"child thread {thread} failed: {exc.message}") from None
    if not result.done:
        if cancel.is_set():
            _kill_quietly(ctx, thread)
        raise UwfError(f"child thread {thread} stopped before it was done")
    if result.killed_by:
        raise UwfError(f"child thread {thread} was {result.killed_by}")


def _answer_from_child(ctx: AgentContext, thread: str) -> AgentAnswer:
    """The child's outputs merged for the parent's schema, or its transcript for the extractor."""
    from ..store.schemas import validation_errors
    from ..thread.context import context_of
    from ..thread.ops import thread_info
    from ..thread.read import read_thread
    from ..thread.usage import thread_usage

    info = thread_info(ctx.repo, thread)
    steps = context_of(ctx.repo, info.head).steps
    detail = {
        "protocol": "subflow",
        "child": info.head,
        "childThread": thread,
        "childWorkflow": info.workflow,
        "childSteps": len(steps),
        "usage": thread_usage(ctx.store, context_of(ctx.repo, info.head, with_checks=True).steps).to_json(),  # its checks' tokens too
    }
    candidate = merged_output([step.output for step in steps], ctx.schema)
    if not validation_errors(ctx.schema, candidate, cache_key=ctx.role.meta):
        return AgentAnswer(json.dumps(candidate, ensure_ascii=False), detail)
    return AgentAnswer(read_thread(ctx.repo, thread), detail)


def _kill_quietly(ctx: AgentContext, thread: str) -> None:
    from ..engine.control import kill_thread

    try:
        kill_thread(ctx.repo, thread)
    except UwfError:
        pass


def main(argv: list[str] | None = None) -> int:
    return run_agent(NAME, run, argv, configure=_configure, description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
