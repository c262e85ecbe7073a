"""The long calls into uwf_core, run in worker threads by the app: they only call the core and
post messages (they never touch a widget). One place talks to the step engine."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Callable

from textual.message import Message

from uwf_core.api import (
    AgentCheck,
    Cancel,
    Committed,
    HumanRequest,
    InboxItem,
    Repo,
    StepOptions,
    UwfError,
    answer_thread,
    check_agent,
    fsck,
    inbox,
    kill_thread,
    perform_step,
    run_thread,
    step_counts,
    thread_info,
    waiting_item,
)

from .messages import (
    AgentChecked,
    AgentOutput,
    FsckDone,
    HumanAnswerRequested,
    InboxAnswered,
    InboxLoaded,
    KillDone,
    ReportReady,
    RootChanged,
    StepDone,
)

Post = Callable[[Message], object]
RUN_STOPPED = "run stopped"  # a run's StepDone after x: the step in flight ended, no other began


def step(repo: Repo, thread: str, run: bool, cancel: Cancel, post: Post, pending: dict[str, Future]) -> None:
    """One step (or, with `run`, steps until done) of `thread`; the outcome is a StepDone."""

    def on_output(line: str) -> None:
        post(AgentOutput(thread, line))

    def landed(node: Committed) -> None:  # the step, then any check after it, as each lands
        post(AgentOutput(thread, f"✓ {node.role} ({node.agent}) → {node.head}" + (f"  {node.note}" if node.note else "")))

    declined = False  # the person closed the form: a cancel, like x

    def human(request: HumanRequest) -> str | None:
        nonlocal declined
        answer: Future = Future()
        pending[thread] = answer  # a cancel or quitting resolves it with None
        post(HumanAnswerRequested(thread, request, answer))
        try:
            text = None if cancel.is_set() else answer.result()
        finally:
            pending.pop(thread, None)
        declined = text is None
        return text

    options = StepOptions(on_output=on_output, cancel=cancel, human=human, on_commit=landed)
    taken = 0

    def counted(_result) -> None:
        nonlocal taken
        taken += 1

    try:
        if run:
            result = run_thread(repo, thread, options, on_step=counted)
        else:
            result = perform_step(repo, thread, options)
    except UwfError as exc:
        cancelled = getattr(exc, "status", None) == "killed" and (cancel.is_set() or declined)
        if cancelled and run and cancel.is_set() and taken:  # x stopped the step in flight: the run stopped before it
            post(StepDone(thread, _run_stopped(repo, _head(repo, thread), taken)))
        else:
            post(StepDone(thread, "cancelled" if cancelled else "failed", None if cancelled else exc.message))
        return
    except Exception as exc:  # a bug: report it in the UI rather than kill the app
        post(StepDone(thread, "failed", f"internal error: {type(exc).__name__}: {exc}"))
        return
    if run and cancel.is_set() and not result.done:
        summary = _run_stopped(repo, result.head, taken)
    elif run and result.paused:
        summary = f"{_run_stopped(repo, result.head, taken).partition(';')[0]}: the thread was paused (space unpauses it)"
    elif result.done:
        summary = "thread finished" if result.reason == "done" else f"thread ended ({result.reason})"
    else:
        summary = f"{result.role} stepped; head {result.head}" if result.role else f"head {result.head}"
    post(StepDone(thread, summary))


def _run_stopped(repo: Repo, head: str | None, taken: int) -> str:
    number = step_counts(repo, [head]).get(head) if head is not None else None
    return f"{RUN_STOPPED} after step {number:,} ({taken:,} this run); s or r goes on" if number is not None else f"{RUN_STOPPED} ({taken:,} steps this run)"


def _head(repo: Repo, thread: str) -> str | None:
    try:
        return thread_info(repo, thread).head
    except UwfError:
        return None


def kill(repo: Repo, thread: str, post: Post) -> None:
    """Killing waits for the agent's process group to go: off the UI thread."""
    try:
        kill_thread(repo, thread)
    except UwfError as exc:
        post(KillDone(thread, exc.message))
        return
    post(KillDone(thread))


def check(repo: Repo, agent: str, post: Post) -> None:
    """One scratch step through `agent` (it may take minutes: a real CLI answers a real prompt)."""
    try:
        result = check_agent(repo, agent)
    except UwfError as exc:  # the agent cannot even be resolved
        result = AgentCheck(agent, False, 0.0, error=exc.message)
    post(AgentChecked(result))


def check_root(repo: Repo, post: Post) -> None:
    """What `uwf cas fsck` says of a root that looked damaged (it reads every node: off the UI thread)."""
    try:
        report = fsck(repo)
    except UwfError as exc:
        post(FsckDone(f"uwf cas fsck could not run: {exc.message}"))
        return
    errors = report.errors
    if not errors:
        post(FsckDone(f"uwf cas fsck: {report.checked:,} nodes checked, no errors"))
        return
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    post(FsckDone(f"uwf cas fsck: {len(errors)} error{'s' if len(errors) > 1 else ''}: {first.target}: {first.message}{more}"))


def listen(repo: Repo, post: Post) -> None:
    """A root that notifies its changes (PostgreSQL's LISTEN/NOTIFY): post RootChanged at once,
    until the app cancels this worker (it looks every second)."""
    import time

    from textual.worker import get_current_worker

    worker = get_current_worker()
    token = None
    while not worker.is_cancelled:
        try:
            changed = repo.backend.wait_for_change(token, 1.0)
        except UwfError:
            time.sleep(1.0)  # the app's poll shows what is wrong
            continue
        if token is not None and changed != token and not worker.is_cancelled:
            post(RootChanged())
        token = changed


def report(repo: Repo, call: Callable, args: tuple, post: Post) -> None:
    """A read-only core call for a screen (`diff_threads`, `dry_run`); the outcome is a ReportReady."""
    try:
        value = call(repo, *args)
    except UwfError as exc:
        post(ReportReady(None, exc.message))
        return
    post(ReportReady(value))


def load_inbox(repo: Repo, post: Post) -> None:
    """Every thread waiting for a person (it reads the runs log and each active thread's context)."""
    try:
        items = inbox(repo)
    except UwfError as exc:
        post(InboxLoaded([], exc.message))
        return
    except Exception as exc:  # a bug: said, and the next change reads again (the view waits for this answer)
        post(InboxLoaded([], f"internal error: {type(exc).__name__}: {exc}"))
        return
    post(InboxLoaded(items))


def answer(repo: Repo, item: InboxItem, text: str, post: Post) -> None:
    """Record a person's answer to the role `item` waits at: one step, as agent `human`. Refused
    when the thread moved on while the person wrote (answered elsewhere, or stepped): the answer
    was to the prompt they read, not to whatever it asks now."""
    try:
        result = answer_thread(repo, item.thread, text, expected_head=item.head)
    except UwfError as exc:
        post(InboxAnswered(item, text, error=exc.message, still_waiting=_still_waiting(repo, item.thread)))
        return
    except Exception as exc:  # a bug: said in the UI, the answer kept
        post(InboxAnswered(item, text, error=f"internal error: {type(exc).__name__}: {exc}", still_waiting=_still_waiting(repo, item.thread)))
        return
    post(InboxAnswered(item, text, result))


def _still_waiting(repo: Repo, thread: str) -> bool:
    """Whether a refused answer can be tried again (the thread still asks a person)."""
    try:
        waiting_item(repo, thread)
    except UwfError:
        return False
    return True
