"""Where uwf's checks (engine/oversight/supervisor.py, imported only when one runs) meet a step: when each
runs, with which model, and how its result moves the head.

Each check is its own commit, after the step it follows has moved the head: an interrupted or
failed check never costs a finished step, and a check that succeeded is kept even if the next
agent fails. A check that cannot be made is one warning line and a `$supervisor` attempt in
runs.jsonl; the thread goes on (the supervisor is asked again once, before the next step).
"""

from __future__ import annotations

import time

from ...errors import ConflictError, UwfError
from ...thread.model import SUMMARIZER_AGENT, SUMMARY_ROLE, SUPERVISOR_AGENT, SUPERVISOR_ROLE, ThreadContext
from ...thread.moderator import REASON_DONE, REASON_KILLED
from ..attempt import Attempt, Committed, StepOptions

RAW_SUMMARY_CHARS = 1000  # of a finished thread's own summary, kept in its archive record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from ...repo import Repo
    from ...thread.ops import ThreadInfo
    from ...workflow.model import Workflow


def interval_of(repo: Repo, workflow: Workflow) -> int:
    return workflow.supervisor_interval if workflow.supervisor_interval is not None else repo.config.supervisor_interval


def supervisor_due(interval: int, context: ThreadContext) -> bool:
    """After every `interval` steps since the StartNode, once: a check already at the head is it."""
    if interval <= 0 or context.since_start == 0 or context.since_start % interval:
        return False
    return context.head == context.steps[-1].hash


def model_alias(repo: Repo, purpose: str) -> str | None:
    """The seeds' names first: a model alias called `supervisor` / `summarizer` in config.yaml's
    models; then modelOverrides.<purpose>; then the supervisor takes defaultModel, the summarizer
    the extraction model (modelOverrides.extract, else defaultModel), as the seeds' does."""
    config = repo.config
    if purpose in config.models:
        return purpose
    if config.model_overrides.get(purpose):
        return config.model_overrides[purpose]
    if purpose == "summarizer":
        return config.model_overrides.get("extract") or config.default_model
    return config.default_model


def summarizer_on(repo: Repo) -> bool:
    """On unless config.yaml says `summarizer: false`, where a model can be named at all."""
    return repo.config.summarizer and model_alias(repo, "summarizer") is not None


def raw_summary(repo: Repo, context: ThreadContext) -> str | None:
    """What a finished thread says of itself without the summarizer (the seeds' raw completion
    summary): its last step's `summary` when that is text, else that output as JSON, cut."""
    import json

    if not context.steps:
        return None
    output = context.steps[-1].output
    text = output.get("summary") if isinstance(output, dict) else None
    if not isinstance(text, str) or not text.strip():
        text = json.dumps(output, ensure_ascii=False, sort_keys=True)
    text = repo.secrets.text(text.strip())
    return text if len(text) <= RAW_SUMMARY_CHARS else text[: RAW_SUMMARY_CHARS - 1] + "…"


def within_budget(repo: Repo, context: ThreadContext, workflow: Workflow) -> bool:
    """A check spends tokens too: none once the thread's budget is used up (its next step stops it)."""
    if not (context.start.has_budget or workflow.has_budget):
        return True
    from ...thread.budget import budget_status

    status = budget_status(repo, context, workflow, keep=True)
    return status is None or status.exceeded is None


def due(repo: Repo, context: ThreadContext, workflow: Workflow) -> bool:
    """A supervisor check is due at this head (and the budget allows one)."""
    return supervisor_due(interval_of(repo, workflow), context) and within_budget(repo, context, workflow)


def supervise_at(
    repo: Repo, info: ThreadInfo, context: ThreadContext, workflow: Workflow, options: StepOptions, time_left, *, retry: bool = False
) -> tuple[str, str | None]:
    """Ask the supervisor about the head `info.head` (the newest step) and commit its answer:
    (the head after it, why the supervisor killed the thread or None). A call that fails, or a
    head that moved meanwhile, leaves the head where it was, with a warning; `retry`: this was the
    second asking (before the next step), after which the thread goes on without the check."""
    from .supervisor import CheckError, supervise

    started = int(time.time() * 1000)
    try:
        check = supervise(repo, context, workflow, model_alias(repo, "supervisor"), time_left)
    except CheckError as exc:
        later = "the step goes on without this check" if retry else "the supervisor is asked again before the next step"
        warn(options, f"{exc.message}; {later}")
        _record(repo, info, SUPERVISOR_ROLE, started, "failed", None, exc.message)
        return info.head, None
    killed_by = f"killed by the supervisor: {check.text}" if check.kills else None
    try:
        repo.threads.compare_and_set(
            info.thread,
            info.head,
            check.head,
            archive_reason=REASON_KILLED if check.kills else None,
            workflow=workflow.hash,
            check=lambda: still_stored(repo, check.head),
            summary=killed_by,
        )
    except ConflictError as exc:
        warn(options, f"the supervisor's answer was not kept: {exc.message}")
        return info.head, None
    _record(repo, info, SUPERVISOR_ROLE, started, "ok", check.head)
    note = f"{check.decision}: {check.text}" + ("  [killed]" if check.kills else "")
    committed(options, Committed(SUPERVISOR_ROLE, SUPERVISOR_AGENT, check.head, note))
    return check.head, killed_by


def finish_done(repo: Repo, info: ThreadInfo, context: ThreadContext, workflow: Workflow, options: StepOptions, time_left) -> str:
    """Archive a thread that is done at `info.head` (`context`), after a summary of its run by the
    summarizer (when it is on and a model can be named): the head it is archived with. Without
    one, or when it fails (a warning, and a failed `$summary` attempt), the archive record keeps
    the thread's raw summary."""
    if summarizer_on(repo) and within_budget(repo, context, workflow):
        from .supervisor import CheckError, summarize

        started = int(time.time() * 1000)
        try:
            check = summarize(repo, context, workflow, model_alias(repo, "summarizer"), time_left)
        except CheckError as exc:
            warn(options, f"{exc.message}; the thread is archived with its raw summary (from its last output)")
            _record(repo, info, SUMMARY_ROLE, started, "failed", None, exc.message)
        else:
            try:
                repo.threads.compare_and_set(
                    info.thread,
                    info.head,
                    check.head,
                    archive_reason=REASON_DONE,
                    workflow=workflow.hash,
                    check=lambda: still_stored(repo, check.head),
                    summary=check.text,
                )
                _record(repo, info, SUMMARY_ROLE, started, "ok", check.head)
                committed(options, Committed(SUMMARY_ROLE, SUMMARIZER_AGENT, check.head, "[done]"))
                return check.head
            except ConflictError as exc:  # killed or moved meanwhile: what happened to it stands
                warn(options, f"the summary was not kept: {exc.message}")
                return info.head
    repo.threads.archive(info.thread, workflow.hash, REASON_DONE, expected=info.head, summary=raw_summary(repo, context))
    return info.head


def still_stored(repo: Repo, step_hash: str) -> None:
    """A new StepNode and what it names are still there (checked with the heads held, so gc
    cannot sweep them between this and the move)."""
    from ...thread.nodes import read_step
    from ..attempt import StepError

    step = read_step(repo.nodes, step_hash)
    for hash_ in (step_hash, step.output, step.detail, *filter(None, (step.files, step.files_before))):
        if not repo.backend.nodes.exists(hash_):
            raise StepError(f"node {hash_} of the new step was removed (by `uwf cas gc`?) before the head could move; the head stays")


def warn(options: StepOptions, message: str) -> None:
    """A warning of the step (the CLI prints it, a worker logs it)."""
    line = f"uwf: warning: {message}"
    if options.on_warning is not None:
        options.on_warning(line)
    elif options.on_output is not None:
        options.on_output(line)


def committed(options: StepOptions, node: Committed) -> None:
    if options.on_commit is not None:
        options.on_commit(node)


def _record(repo: Repo, info: ThreadInfo, role: str, started: int, status: str, step: str | None, error: str | None = None) -> None:
    """The check in runs.jsonl, as an attempt of its own, timed from its call's start."""
    agent = SUPERVISOR_AGENT if role == SUPERVISOR_ROLE else SUMMARIZER_AGENT
    try:
        Attempt(repo, info, started_ms=started, role=role, agent=agent).record(status, step=step, error=error)
    except UwfError:
        pass  # the log is a record, not the thread: the check itself is in the chain
