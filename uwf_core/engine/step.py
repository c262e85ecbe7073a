"""One step of a thread: moderator → agent → verify → compare-and-set the head.

perform_step is the single implementation every caller uses (the CLI, `thread
run`, the TUI, sub-workflows). It returns a result instead of printing,
streams the agent's stderr lines to a callback, and can be cancelled. On any
failure the head stays where it was, and every attempt is in runs.jsonl.

Inside the step lock the thread's head is read once; the only later look at
it is the compare-and-set that moves it.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..encoding.records import replace
from ..errors import ConflictError, PausedError, UwfError
from ..thread.context import context_of, keep_context, step_context
from ..thread.model import SUPERVISOR_AGENT, SUPERVISOR_ROLE, ThreadContext
from ..thread.nodes import read_step
from ..thread.moderator import (
    REASON_DONE,
    REASON_KILLED,
    REASON_MAX_STEPS,
    Decision,
    evaluate,
)
from ..thread.ops import ThreadInfo, active_thread, resolve_thread_id, thread_info
from ..thread.pause import refuse_paused
from ..workflow.ops import workflow_of
from .attempt import ASKING, MAP_WAITING, Attempt, Committed, StepError, StepOptions, StepResult, interruption, redact_error
from .call import AgentCall
from .protocols import run_protocol
from .resolve import resolve_agent
from .tracing import step_trace
from .oversight.step_checks import (
    committed,
    due,
    finish_done,
    raw_summary,
    still_stored,
    summarizer_on,
    supervise_at,
    warn,
)

if TYPE_CHECKING:
    from typing import Any, Callable

    from ..repo import Repo
    from ..store.base import StepLease
    from ..workflow.model import Workflow
    from .files import Before
    from .resolve import ResolvedAgent


def perform_step(repo: Repo, thread: str, options: StepOptions = StepOptions()) -> StepResult:
    """One step of `thread` (an id or a unique prefix): moderator, agent, verify, move the head.
    Raises StepError (the head unmoved, the attempt in the runs log) when it fails; PausedError,
    with nothing run or recorded, when the thread is paused."""
    thread_id = resolve_thread_id(repo, thread)
    with repo.locks.acquire(thread_id, options.worker) as lease:
        info = active_thread(repo, thread_id)
        refuse_paused(repo, info.thread)
        options = replace(options, on_output=_told(lease, options.on_output, repo.secrets.text))
        trace = step_trace(repo, info, options, lease.interrupted)
        if lease.interrupted is not None:
            _record_interrupted(repo, info, lease)
        attempt = Attempt(repo, info, candidate_of=options.candidate_of, worker=options.worker, trace=trace if trace.root else None)
        with trace:
            try:
                result = _step(repo, info, attempt, lease, options)
            except StepError as exc:
                _record_failure(attempt, exc, exc.status, exc.message, exc.stderr)
                raise
            except UwfError as exc:
                _record_failure(attempt, exc, "failed", exc.message)
                raise
            except KeyboardInterrupt as exc:
                _record_failure(attempt, exc, "killed", "interrupted (Ctrl-C)")
                raise
            except Exception as exc:  # a bug, but still an attempt: on record before the traceback
                _record_failure(attempt, exc, "failed", f"internal error: {type(exc).__name__}: {exc}")
                raise
            trace.put({"uwf.done": result.done, "uwf.reason": result.reason, "uwf.reused_from": result.reused_from, "uwf.head.after": result.head})
            return result


def _told(lease: StepLease, shown: Callable[[str], None] | None, redact: Callable[[str], str]) -> Callable[[str], None]:
    """The step's output to the caller and to the lease, where `uwf thread live` in any process
    reads it; redacted here once more, whoever made the line (an agent's lines are where they
    are read, engine/call.py; uwf's own notes name paths an agent chose)."""

    def both(line: str) -> None:
        line = redact(line)
        lease.say(line)
        if shown is not None:
            shown(line)

    return both


def _record_failure(attempt: Attempt, error: BaseException, status: str, message: str, stderr: str | None = None) -> None:
    """Record the failed attempt; if even that fails (a full disk), say so on the first error
    rather than replacing it with the second. A map still waiting for the same children is
    recorded once, not at every look a worker takes."""
    if isinstance(error, UwfError):
        redact_error(attempt.repo, error)
    if status in (MAP_WAITING, ASKING) and _still_waiting(attempt, status, message):
        return
    try:
        attempt.record(status, error=message, stderr=stderr)
    except UwfError as exc:
        if isinstance(error, UwfError):
            error.message = f"{error.message} (and the attempt could not be recorded: {exc.message})"
            error.args = (error.message,)


def _still_waiting(attempt: Attempt, status: str, message: str) -> bool:
    last = attempt.repo.runs.read(attempt.info.thread)[-1:]
    return bool(last) and last[0].status == status and last[0].head == attempt.info.head and last[0].error == message


def _record_interrupted(repo: Repo, info: ThreadInfo, lease: StepLease) -> None:
    lost = lease.interrupted
    assert lost is not None  # called only when the lease says so
    attempt = Attempt(repo, info, started_ms=lost.started_at or int(time.time() * 1000), role=lost.role, agent=lost.agent)
    attempt.record("killed", error=interruption(lost))


def _step(repo: Repo, info: ThreadInfo, attempt: Attempt, lease: StepLease, options: StepOptions) -> StepResult:
    # --timeout is one budget for the whole step: routing, the agent with its extraction and
    # corrections, and the routing that says whether the thread is done.
    deadline = time.monotonic() + options.timeout if options.timeout is not None else None
    context = context_of(repo, info.head)
    workflow = workflow_of(repo, context.start.workflow)
    if attempt.trace is not None:
        attempt.trace.put({"uwf.workflow.name": workflow.name, "uwf.step.number": len(context.steps) + 1})
    decision = evaluate(workflow, context, options.timeout)
    for message in workflow.old_reads:  # written for uwf's old $first / $last: routes differently now
        warn(options, f"workflow '{workflow.name}': {message}")
    if options.checks and not decision.is_end and due(repo, context, workflow):
        # the check after the last step did not happen (its call failed): asked once more, first
        head, killed_by = supervise_at(repo, info, context, workflow, options, _time_left(deadline), retry=True)
        if killed_by is not None:
            return StepResult(info.workflow, info.thread, head, True, SUPERVISOR_ROLE, SUPERVISOR_AGENT, REASON_KILLED, killed_by=killed_by)
        if head != info.head:
            context = context.at_head(head)
            keep_context(repo, context)
            info = replace(info, head=head)
            attempt.info = info  # the step's attempt starts from the check
    if decision.is_end:
        return _finish(repo, info, decision, workflow, context, options, _time_left(deadline))
    attempt.role = decision.role
    if workflow.roles[decision.role].map is not None:  # a fan-out: child threads do the role's work
        from .fanout.map import MAP_AGENT, run_map

        attempt.agent = MAP_AGENT
        lease.update(role=decision.role, agent=MAP_AGENT)
        if context.start.has_budget or workflow.has_budget:
            _check_budget(repo, info, context, workflow)  # a thread out of budget starts no children
        mapped = run_map(repo, info, workflow, context, decision, lease, options, deadline, attempt.started_ms, run_thread)
        return _land(repo, info, attempt, workflow, context, decision, MAP_AGENT, mapped, None, options, deadline)
    resolved = resolve_agent(
        repo.config, workflow.name, decision.role, context.start.agents, _agent_name(repo, options.agent),
        config_file=repo.backend.config.location, functions=repo.agents.entries,
    )
    attempt.agent = resolved.label
    if options.only_human and resolved.protocol != "human":
        raise StepError(f"thread {info.thread} is not waiting for a person: its next role '{decision.role}' is agent {resolved.label}'s")
    lease.update(role=decision.role, agent=resolved.label)
    call = AgentCall(repo, info, workflow, context, decision, resolved, lease, options, deadline=deadline)
    attempt.call = call
    before = None
    if context.start.workspace:
        from .files import before_step

        before = before_step(repo, info.thread, context, options.on_output)
    new_head = reused_from = reuse_key = None
    if reuse_enabled(options, resolved):
        from .reuse.replay import write_reused
        from .reuse.index import find_reusable

        reuse_key = _reuse_key(call, before)
        reused_from = find_reusable(repo.nodes, reuse_key, decision.role)
        if reused_from is not None and before is not None:
            from ..thread.files import files_of

            if files_of(repo.nodes, reused_from) is None:
                reused_from = None  # a step that kept no files cannot give them back
        if reused_from is not None:
            if before is not None:
                from .files import restore

                restore(call, before, reused_from)  # the files the replayed step left
            new_head = write_reused(call, reused_from, reuse_key)  # no agent runs, no tokens: within any budget
    if new_head is None:
        if context.start.has_budget or workflow.has_budget:
            _check_budget(repo, info, context, workflow)
        new_head = run_protocol(call)
    if before is not None:
        from .files import after_step, files_key

        new_head = after_step(call, before, new_head)
        reuse_key = reuse_key or files_key(call, before, new_head)  # indexed whether or not reuse was on
    if reuse_key is not None and (reused_from is None or before is not None):
        _remember_run(repo, reuse_key, new_head, overwrite=before is not None)  # the StepNode with its files
    return _land(repo, info, attempt, workflow, context, decision, resolved.label, new_head, reused_from, options, deadline)


def _land(
    repo: Repo, info: ThreadInfo, attempt: Attempt, workflow: Workflow, context: ThreadContext, decision: Decision,
    label: str, new_head: str, reused_from: str | None, options: StepOptions, deadline: float | None,
) -> StepResult:
    """Move the head to the step written (archiving when the thread is done), record the attempt,
    then run the checks due after it."""
    left = max(0.001, deadline - time.monotonic()) if deadline is not None else None
    done, after, next_error = _next_is_end(repo, workflow, context, new_head, left)
    summarize = done and options.checks and summarizer_on(repo)  # then archived after its summary, below
    if options.cancel is not None and options.cancel.is_set():  # cancelled after its agent ended: not taken either
        raise StepError(f"the step was cancelled{options.cancel.why()} before the head moved; its answer is not kept", "killed")
    try:
        repo.threads.compare_and_set(
            info.thread,
            info.head,
            new_head,
            archive_reason=REASON_DONE if done and not summarize else None,
            workflow=workflow.hash,
            check=lambda: still_stored(repo, new_head),
            summary=raw_summary(repo, after) if done and not summarize else None,
        )
    except ConflictError as exc:
        record = repo.threads.last_archived(info.thread)
        killed = record is not None and record.reason == "killed" and info.thread not in repo.threads.heads()
        raise StepError(exc.message, "killed" if killed else "failed") from None
    try:
        attempt.record("ok", step=new_head)
    except UwfError as exc:  # the step is done and the head moved: say so, don't call it a failure
        warn(options, f"the step succeeded but runs.jsonl could not be written: {exc.message}")
    notes = [f"[reused {reused_from}]" if reused_from else "", "[done]" if done and not summarize else ""]
    committed(options, Committed(decision.role, label, new_head, "  ".join(filter(None, notes)) or None))
    head, reason, killed_by = new_head, REASON_DONE if done else None, None
    stepped = replace(info, head=new_head)
    if summarize:
        head = finish_done(repo, stepped, after, workflow, options, _time_left(deadline))
    elif not done and options.checks and due(repo, after, workflow):
        head, killed_by = supervise_at(repo, stepped, after, workflow, options, _time_left(deadline))
        reason = REASON_KILLED if killed_by else None
        if head != new_head:
            keep_context(repo, after.at_head(head))  # `thread run`'s next step starts from the check
    return StepResult(
        info.workflow, info.thread, head, reason is not None, decision.role, label, reason, reused_from, killed_by, new_head, next_error
    )


def _agent_name(repo: Repo, agent: str | Callable[..., Any] | None) -> str | None:
    """--agent as a name: a Python function given as StepOptions(agent=func) is registered for the
    session under its entry point (module:function), the name its steps are recorded under."""
    if agent is None or isinstance(agent, str):
        return agent
    return repo.agents.name_of(agent)


def reuse_enabled(options: StepOptions, resolved: ResolvedAgent) -> bool:
    """Memoized replay for this step: `--reuse`, or the agent entry's `reuse: true`; never for a
    person (a human role is asked every time)."""
    return (options.reuse or resolved.reuse) and resolved.protocol != "human"


def _reuse_key(call: AgentCall, before: Before | None) -> str:
    """The step's inputs key; with snapshots on, the files the step found are part of it."""
    from .reuse.replay import call_key
    from .reuse.index import with_files

    key = call_key(call)
    return with_files(key, before.tree) if before is not None else key


def _remember_run(repo: Repo, key: str, new_head: str, *, overwrite: bool) -> None:
    """Index a step run with reuse on, unless its agent did (an agent that writes its StepNode
    itself); a step with files always (its StepNode is uwf's, the key is uwf's alone)."""
    from .reuse.index import KEY, remember

    if overwrite or repo.nodes.nodes.derived(KEY + key) is None:
        remember(repo.nodes, key, new_head)


def _check_budget(repo: Repo, info: ThreadInfo, context: ThreadContext, workflow: Workflow) -> None:
    """Stop the thread before an agent runs once its budget is used up: archived with reason
    `budget`, like maxSteps. A maxCost that unpriced tokens make unknowable stops the step only."""
    from ..thread.budget import REASON_BUDGET, budget_status

    status = budget_status(repo, context, workflow, keep=True)
    if status is None:
        return
    if status.exceeded is not None:
        repo.threads.archive(info.thread, workflow.hash, REASON_BUDGET, expected=info.head)
        raise StepError(
            f"thread {info.thread} stopped before its next step: {status.exceeded}; archived with reason budget "
            f"(resume it, or fork a step, to go on)",
            REASON_BUDGET,  # runs.jsonl: stopped by its budget, no agent ran (not a failure of one)
        )
    if status.unpriced is not None:
        raise StepError(f"thread {info.thread} cannot take a step within its budget: {status.unpriced}", REASON_BUDGET)


def _finish(repo: Repo, info: ThreadInfo, decision: Decision, workflow: Workflow, context: ThreadContext, options: StepOptions, time_left: Callable[[], float] | None) -> StepResult:
    if decision.end_reason == REASON_MAX_STEPS:
        repo.threads.archive(info.thread, workflow.hash, REASON_MAX_STEPS, expected=info.head)
        raise StepError(
            f"thread {info.thread} reached maxSteps ({workflow.max_steps}) of workflow '{workflow.name}' without finishing; "
            f"archived with reason max-steps (fork a step or resume it to go on)"
        )
    if options.checks:
        head = finish_done(repo, info, context, workflow, options, time_left)
    else:
        head = repo.threads.archive(info.thread, workflow.hash, REASON_DONE, expected=info.head)
    return StepResult(info.workflow, info.thread, head, True, reason=REASON_DONE)


def _next_is_end(
    repo: Repo, workflow: Workflow, context: ThreadContext, new_head: str, time_limit: float | None = None
) -> tuple[bool, ThreadContext, str | None]:
    """Ask the moderator again: does the thread end after this step? With the context at it, and
    the error of a condition that failed on this step's output.

    The extended context is kept on the Repo, so `thread run`'s next step starts from it.
    A routing error here does not undo the step: the step's result says it (`uwf thread step`
    exits 1 with it), and the thread stays where the step put it.
    """
    extended = context.extended(step_context(repo.nodes, new_head, read_step(repo.nodes, new_head)))
    keep_context(repo, extended)
    from ..thread.moderator import ConditionFailed

    try:
        decision = evaluate(workflow, extended, time_limit)
    except ConditionFailed as exc:
        return False, extended, exc.message
    except UwfError:
        return False, extended, None  # no route yet (an output no transition takes): the next step says so
    return decision.is_end and decision.end_reason == REASON_DONE, extended, None


def _time_left(deadline: float | None) -> Callable[[], float] | None:
    """The step's remaining time for a check's LLM call (None: no --timeout)."""
    if deadline is None:
        return None
    return lambda: max(0.001, deadline - time.monotonic())


def run_thread(
    repo: Repo,
    thread: str,
    options: StepOptions = StepOptions(),
    *,
    max_steps: int | None = None,
    on_step: Callable[[StepResult], None] | None = None,
) -> StepResult:
    """Step until the thread is done, a step fails (raised), `max_steps` steps ran, or it was
    paused meanwhile (the result then says `paused`; paused before its first step: PausedError)."""
    taken = 0
    result = None
    while max_steps is None or taken < max_steps:
        try:
            result = perform_step(repo, thread, options)
        except PausedError:
            if result is None:
                raise
            return replace(result, paused=True)
        if on_step is not None:
            on_step(result)
        if result.done:
            return result
        taken += 1
        if options.cancel is not None and options.cancel.is_set():
            break
    if result is None:
        info = thread_info(repo, thread)
        return StepResult(info.workflow, info.thread, info.head, info.done, reason=info.reason)
    return result
