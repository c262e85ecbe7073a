"""The python protocol: the agent is a Python function, called with a PythonContext in uwf's own
process (or, with `isolate: process`, in a child process that is contained and killed like any
agent's). Its answer is validated, corrected and written exactly as a text agent's is.

In uwf's process an async function is cancelled at the deadline, and a synchronous one (run on a
thread of its own when there is a deadline) is given up on at it: the step fails as a timeout at
once, the function runs on until it returns and its answer is dropped (`ctx.check()` stops it
sooner). `isolate: process` is the hard limit: its process group is killed.
"""

from __future__ import annotations

import json
import sys
import time

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..attempt import StepError
from ..extraction.extract import MAX_CORRECTIONS  # as for text agents
from ..python.context import json_copy
from ..record import write_answer

if TYPE_CHECKING:
    from ..call import AgentCall, KillWatch
    from ..python.context import Correction, PythonContext


def run(call: AgentCall) -> str:
    from ..python.context import WrittenStep

    call.python  # noqa: B018  (imported now: a module that cannot be is the step's one-line error)
    ctx = _context(call, _cancel(call))
    answer = _ask(call, ctx)
    if isinstance(answer, WrittenStep):
        return _written(call, answer.step)
    output, text, extra = _parts(call, answer)
    method, corrections, usage = None, 0, None
    if output is not None:
        refused: dict | None = None
        while True:
            errors = _errors(call, output)
            if not errors:
                break
            again = refused is not None and output == refused  # a function that cannot do otherwise is not asked once more
            if again or corrections >= MAX_CORRECTIONS:
                more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
                tried = f"; after {corrections} correction{'s' if corrections != 1 else ''}" if corrections else ""
                same = ", the same output again after a correction" if again else ""
                raise StepError(f"python agent '{call.resolved.label}' returned an output that does not match the role's schema"
                                f"{same}: {errors[0]}{more}{tried}")
            corrections += 1
            refused = output if isinstance(output, dict) else None
            output, text, extra = _parts(call, _again(call, ctx, _correction(errors, output), corrections))
            if output is None:
                break  # it answered the correction with text: extracted below
    if output is None:
        output, text, method, more, usage = _extract(call, ctx, text, corrections)
        corrections += more
    detail = {**extra, **call.python.to_detail(), "call": "process" if call.resolved.isolate else "in-process", "corrections": corrections,
              "durationMs": int(time.time() * 1000) - call.started_ms}
    if method is not None:
        detail["extract"] = method
    if call.timeout is not None:
        detail["deadline"] = "process" if call.resolved.isolate else "cooperative"
    if usage is not None:
        from ..extraction.extract import usage_detail

        detail.update(usage_detail(call.repo.config, usage))
    return write_answer(
        call.repo.nodes,
        context=call.context,
        role=call.role,
        agent=call.resolved.label,
        protocol="python",
        prompt=call.prompt_parts if ctx.prompt_read else None,  # stored when the function read it
        answer=text,
        output=output,
        detail=detail,
        secrets=call.secrets,
        instruction=call.decision.instruction,
        started_ms=call.started_ms,
        agent_key=call.agent_key,
    )


def _written(call: AgentCall, step: str) -> str:
    """A StepNode the function wrote itself: checked as a step-protocol agent's is."""
    from ...encoding.ids import is_cas_ref
    from ...thread.write import check_step_node
    from .step import refuse_keys

    if not isinstance(step, str) or not is_cas_ref(step.upper()):
        raise StepError(f"python agent '{call.resolved.label}' returned WrittenStep({step!r}), which is not a node hash")
    check_step_node(call.repo.nodes, step.upper(), call.context, call.role.name, call.role.meta, call.resolved.label)
    refuse_keys(call, step.upper())
    return step.upper()


def _context(call: AgentCall, cancel: KillWatch) -> PythonContext:
    from ..call import named_secrets
    from ..python.context import PythonContext

    start = call.context.start
    return PythonContext(
        thread=call.info.thread, workflow=call.workflow.hash or "", workflow_name=call.workflow.name, role=call.role.name,
        schema=call.schema,
        instruction=call.decision.instruction, task=start.prompt, steps=call.context.steps, workspace=call.workspace,
        cwd=call.cwd, deadline=call.deadline, secrets=named_secrets(call.repo, call.resolved), prompt=lambda: call.prompt,
        cancel=cancel, log=_log(call), repo=call.repo, context=call.context,
    )


def _cancel(call: AgentCall) -> KillWatch:
    """The step's cancel flag, set too when the thread is killed from another process or host."""
    from ..call import KillWatch

    return KillWatch(call.repo, call.info.thread, call.options.cancel)


def _log(call: AgentCall):
    shown = call.options.on_output
    return None if shown is None else lambda line: shown(call.secrets.text(line))


def _ask(call: AgentCall, ctx: PythonContext) -> object:
    """One call of the function, in this process or in its own."""
    if call.resolved.isolate:
        return _ask_isolated(call, ctx)
    from ..python.call import FunctionFailed, Overran, Stopped, call_function

    try:
        with call.agent_span((call.python.target,)):
            result = call_function(call.python.func, ctx, deadline=call.deadline, cancel=ctx.cancel_flag, on_output=_log(call))
    except StepError as exc:  # ctx.check(): out of time, or cancelled
        raise _stopped(call) if exc.status == "killed" else _timed_out(call, "it stopped at ctx.check()") from None
    except FunctionFailed as exc:
        raise _raised(call, exc.kind, exc.message, exc.trace, exc.error) from exc.error
    except Overran as exc:
        ctx.silence()  # it runs on in its thread: what it says now is no step's
        raise _timed_out(call, str(exc)) from None
    except Stopped:
        ctx.silence()
        raise _stopped(call) from None
    if ctx.cancelled:
        raise _stopped(call)
    if call.deadline is not None and time.monotonic() > call.deadline:
        raise _timed_out(call, "it returned after the deadline and its answer is dropped (in uwf's process the deadline is "
                               "cooperative: call ctx.check(), or give the entry isolate: process)")
    return result


def _timed_out(call: AgentCall, how: str) -> StepError:
    """Every timeout of a python agent reads alike (an isolated one's: its process group was killed)."""
    return StepError(f"python agent '{call.resolved.label}' timed out after {call.timeout:g}s; {how}", "timeout")


def _stopped(call: AgentCall) -> StepError:
    if call.info.thread not in call.repo.threads.heads():
        return StepError(f"thread {call.info.thread} was killed while python agent '{call.resolved.label}' ran", "killed")
    why = call.options.cancel.why() if call.options.cancel is not None else ""
    return StepError(f"python agent '{call.resolved.label}' was cancelled{why}", "killed")


def _raised(call: AgentCall, kind: str, message: str, trace: str, cause: BaseException | None = None) -> StepError:
    """The attempt fails with the exception's type and message; the traceback is its record's
    stderr (uwf-tui's Detail of the failed attempt, `uwf thread runs`), not the terminal's; the
    exception itself is the error's `cause` when it was raised in this process."""
    said = f": {message}" if message else ""
    return StepError(f"python agent '{call.resolved.label}' raised {kind}{said}", "failed", trace, cause=cause)


def _ask_isolated(call: AgentCall, ctx: PythonContext) -> object:
    from ..python.context import PythonAnswer

    request = {"target": call.python.target, "context": ctx.to_json()}
    try:
        outcome = _spawn_host(call, request)
    except StepError as exc:  # its timeout, cancel or exit, said as of the python agent it is
        if exc.message.startswith("agent '"):
            exc.message = "python " + exc.message
            exc.args = (exc.message,)
        raise
    try:
        reply = json.loads(outcome.stdout)
    except ValueError:
        raise StepError(f"python agent '{call.resolved.label}' (isolated) answered no JSON: {outcome.stdout[:200]!r}") from None
    if "error" in reply:
        error = reply["error"]
        if error.get("type") == "JSON":  # what it returned, checked in the child as here
            raise StepError(f"python agent '{call.resolved.label}' returned {error.get('message')}")
        if error.get("type") == "StepError":  # ctx.check() in the child: its time ran out
            raise _timed_out(call, "it stopped at ctx.check()")
        if error.get("type") == "Load":  # the entry point, as uwf's own process says it
            raise StepError(f"python agent '{call.resolved.label}' ({call.python.target}): {error.get('message')}")
        raise _raised(call, error.get("type", "Error"), error.get("message", ""), error.get("traceback", ""))
    if reply.get("promptRead"):
        ctx.mark_prompt_read()  # then it is stored with the step, as in uwf's process
    if "answer" in reply:
        answer = reply["answer"]
        return PythonAnswer(answer.get("output"), answer.get("text"), answer.get("detail") or {})
    return reply.get("text") if "text" in reply else reply.get("output")


def _spawn_host(call: AgentCall, request: dict):
    # -P: the workspace (its cwd) is not put on sys.path: a json.py or uwf_core/ there is not what it imports
    return call.spawn([sys.executable, "-P", "-m", "uwf_core.engine.python.host"], json.dumps(request, ensure_ascii=False))


def _again(call: AgentCall, ctx: PythonContext, correction: Correction, corrections: int) -> object:
    ctx.correction = correction
    ctx.corrections = corrections
    return _ask(call, ctx)


def _parts(call: AgentCall, answer: object) -> tuple[dict | None, str | None, dict]:
    """(output, text, detail fields) of what the function returned."""
    from ..python.context import PythonAnswer, WrittenStep

    label = call.resolved.label
    if isinstance(answer, WrittenStep):
        raise StepError(f"python agent '{label}' returned a WrittenStep on a correction; return the corrected output instead")
    if isinstance(answer, PythonAnswer):
        if answer.output is None and answer.text is None:
            raise StepError(f"python agent '{label}' returned a PythonAnswer with neither output nor text")
        if not isinstance(answer.detail, dict):
            raise StepError(f"python agent '{label}' returned a PythonAnswer whose detail is a {type(answer.detail).__name__}, not a dict")
        reserved = sorted(set(answer.detail) & {"agent", "protocol", "prompt", "content"})
        if reserved:
            raise StepError(f"python agent '{label}': its detail may not set {reserved[0]!r} (uwf records it)")
        _check_plain(label, answer.detail, "its detail")
        if answer.output is not None:
            _check_plain(label, answer.output, "its output")
        detail = dict(answer.detail)
        if "usage" in detail:
            detail["usage"] = _usage(label, detail["usage"])
        return json_copy(answer.output), answer.text, detail
    if isinstance(answer, str):
        return None, answer, {}
    if answer is None:
        raise StepError(f"python agent '{label}' returned None; return the role's output (a dict) or an answer text")
    _check_plain(label, answer, "its output")
    return json_copy(answer), None, {}


USAGE_KEYS = {  # what the ledger reads, from the names model SDKs give them
    "promptTokens": ("promptTokens", "prompt_tokens", "input_tokens"),
    "completionTokens": ("completionTokens", "completion_tokens", "output_tokens"),
    "totalTokens": ("totalTokens", "total_tokens"),
    "requests": ("requests",),
}


def _usage(label: str, usage: object) -> dict:
    """A function's token counts as the ledger reads them (uwf's names, OpenAI's or Anthropic's);
    counts it cannot read are an error, not a silent zero."""
    if not isinstance(usage, dict):
        raise StepError(f"python agent '{label}': its detail's usage is a {type(usage).__name__}, not a mapping of token counts")
    found = {}
    for key, names in USAGE_KEYS.items():
        for name in names:
            if isinstance(usage.get(name), int) and not isinstance(usage.get(name), bool):
                found[key] = usage[name]
                break
    if not found:
        raise StepError(
            f"python agent '{label}': its detail's usage has no token counts uwf reads "
            f"(promptTokens and completionTokens, or prompt_tokens/completion_tokens, or input_tokens/output_tokens)"
        )
    return found


def _check_plain(label: str, value: object, what: str) -> None:
    """JSON's values only (a node holds nothing else): one line naming where, not a traceback."""
    from ..python.context import json_problem

    problem = json_problem(value)
    if problem is not None:
        raise StepError(f"python agent '{label}' returned {what} with {problem}")


def _errors(call: AgentCall, output: object) -> list[str]:
    """What is wrong with an output, as a correction tells it: what the store cannot hold (as for
    an extracted answer), then the schema's errors."""
    from ...store.schemas import validation_errors
    from ..extraction.extract import ExtractError, check_storable

    if not isinstance(output, dict):
        return [f"at $: the output must be an object, not {type(output).__name__}"]
    try:
        check_storable(output)
    except ExtractError as exc:
        return [exc.message]
    return validation_errors(call.schema, output, cache_key=call.role.meta)


def _correction(errors: list[str], output: object) -> Correction:
    """What a function is told of an output the schema refused: the errors, as values, and the
    output itself (a text agent's correction speaks of frontmatter; a function returns a dict)."""
    from ..python.context import Correction

    listed = "; ".join(errors[:5]) + (f" (and {len(errors) - 5} more)" if len(errors) > 5 else "")
    refused = json_copy(output) if isinstance(output, dict) else None
    return Correction(f"the output does not match the role's schema: {listed}", tuple(errors), refused)


def _extract(call: AgentCall, ctx: PythonContext, text: str, corrections: int):
    """An answer text, read as a text agent's is: frontmatter or JSON, the LLM fallback, corrections."""
    from ..extraction.extract import ExtractError, extract_with_corrections, lazy_fallback
    from .text import llm_fallback

    from ..python.context import Correction

    asked = [corrections]
    answered = [text]

    def retry(message: str) -> str:
        asked[0] += 1
        output, again, _ = _parts(call, _again(call, ctx, Correction(message), asked[0]))
        again = again if output is None else json.dumps(output, ensure_ascii=False)
        if again == answered[0]:  # it cannot do otherwise: not asked once more
            raise StepError(f"could not read the answer of python agent '{call.resolved.label}': it answered the same again "
                            f"after a correction ({message.splitlines()[0] if message else 'unreadable'})")
        answered[0] = again
        return again

    try:
        result = extract_with_corrections(
            text, call.schema, cache_key=call.role.meta, fallback=lazy_fallback(lambda: llm_fallback(call)), retry=retry,
            max_corrections=max(0, MAX_CORRECTIONS - corrections),
        )
    except ExtractError as exc:
        raise StepError(f"could not read the answer of python agent '{call.resolved.label}': {exc.message}") from None
    return result.extracted.output, result.text, result.extracted.method, asked[0] - corrections, result.usage
