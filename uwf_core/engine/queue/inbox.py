"""The people's side of a shared root: every thread whose next role is a person's (`uwf inbox`), and
an answer to one from any host (`uwf thread answer`), which a worker then takes up at once.

A thread is in the inbox when its next role resolves to the agent `human` and nobody steps it now.
An answer is one step of the human protocol with the person's text already written: validated
against the role's schema as the TUI's form is, recorded as agent `human`, the head moved by
compare-and-set. Moving the head clears the queue's "asking" mark and notifies every worker.
"""

from __future__ import annotations

from ...encoding.records import record
from ...errors import UwfError

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any, Callable

    from ...repo import Repo
    from ...thread.ops import ThreadInfo
    from ..attempt import HumanRequest, StepOptions, StepResult

    # when each head landed; when (and by which worker) each (thread, head) was first found asking
    _RunTimes = tuple[dict[str, int], dict[tuple[str, str], tuple[int, str | None]]]


@record(frozen=True)
class InboxItem:
    """A thread waiting for a person."""

    thread: str
    workflow: str  # its name
    role: str
    head: str
    since: int  # ms: when it came to wait (its head's step landed, or it was started)
    prompt: str  # what the person is asked, as `uwf thread step` on a terminal would show it
    instruction: str | None  # the moderator's instruction for this step, if any
    description: str  # the role's, as the workflow says it
    task: str  # the thread's own task (its start prompt): what tells threads of one workflow apart
    schema: dict[str, Any]  # the role's output schema, which an answer must satisfy
    queued: bool  # queued for workers: one takes the thread up again once it is answered
    asked_by: str | None = None  # the worker (or process) that found the role a person's, if one did

    def to_json(self) -> dict[str, Any]:
        return {
            "thread": self.thread, "workflow": self.workflow, "role": self.role, "head": self.head, "since": self.since,
            "description": self.description, "task": self.task, "instruction": self.instruction, "queued": self.queued, "askedBy": self.asked_by, "prompt": self.prompt,
        }


def inbox(repo: Repo) -> list[InboxItem]:
    """Every active thread waiting for a person, oldest wait first."""
    from ...thread.ops import list_threads

    from functools import cache

    queued = {entry.thread for entry in repo.backend.queue.entries()}
    run_times = cache(lambda: _run_times(repo))  # runs.jsonl read once, and only when a thread waits (a 100,000-step root's is 100,000 lines)
    items = []
    for info in list_threads(repo):
        if not info.active or info.problem or repo.locks.running(info.thread) is not None:
            continue
        item = _waiting(repo, info, info.thread in queued, run_times)
        if item is not None:
            items.append(item)
    return sorted(items, key=lambda item: (item.since, item.thread))


def _run_times(repo: Repo) -> _RunTimes:
    """When each head landed, and when (and by whom) each thread was first found asking at a head."""
    landed: dict[str, int] = {}
    asked: dict[tuple[str, str], tuple[int, str | None]] = {}
    for run in repo.runs.read():
        if run.ok and run.step:
            landed[run.step] = run.completedAt
        elif run.status == "asking" and run.head and (run.thread, run.head) not in asked:
            asked[(run.thread, run.head)] = (run.completedAt, run.worker)
    return landed, asked


def _waiting(repo: Repo, info: ThreadInfo, queued: bool, run_times: Callable[[], _RunTimes]) -> InboxItem | None:
    from ...encoding.ids import ulid_timestamp_ms
    from ...thread.context import context_of
    from ...thread.moderator import evaluate
    from ...workflow.ops import workflow_of
    from ..dry_run import next_prompt
    from ..resolve import resolve_agent

    try:
        context = context_of(repo, info.head, keep=False)
        workflow = workflow_of(repo, context.start.workflow)
        decision = evaluate(workflow, context)
        if decision.is_end or workflow.roles[decision.role].map is not None:
            return None
        resolved = resolve_agent(repo.config, workflow.name, decision.role, context.start.agents, functions=repo.agents.entries)
    except UwfError:
        return None  # a thread that cannot step is `thread list`'s to show, not the inbox's
    if resolved.protocol != "human":
        return None
    schema = repo.nodes.schema(workflow.roles[decision.role].meta)
    landed, asked = run_times()
    since, by = asked.get((info.thread, info.head), (None, None))
    if since is None:
        since = landed.get(info.head) or ulid_timestamp_ms(info.thread)
    return InboxItem(
        info.thread, workflow.name, decision.role, info.head, since, next_prompt(workflow, decision, schema, context),
        decision.instruction, workflow.roles[decision.role].description or "", context.start.prompt, schema, queued, by,
    )


def waiting_item(repo: Repo, thread: str) -> InboxItem:
    """What the person is asked on `thread` (an error when its next role is not a person's)."""
    from ...thread.ops import active_thread, resolve_thread_id

    info = active_thread(repo, resolve_thread_id(repo, thread))
    item = _waiting(repo, info, False, lambda: ({}, {}))
    if item is None:
        raise UwfError(f"thread {info.thread} is not waiting for a person (see `uwf thread dry-run {info.thread}`)")
    return item


def answer_thread(repo: Repo, thread: str, answer: str, options: StepOptions | None = None, *, expected_head: str | None = None) -> StepResult:
    """Answer the person's role `thread` waits for with `answer` (frontmatter markdown, or a JSON
    or YAML object of the role's output): one step, recorded as agent `human`. Refused, with the
    head unchanged, when the thread's next role is not a person's or the answer does not fit, and,
    given `expected_head` (the head whose prompt the person read), when the thread moved on
    meanwhile: the answer was to that question, not to whatever it asks now."""
    from ...encoding.records import replace
    from ...thread.ops import active_thread
    from ..attempt import StepError, StepOptions
    from ..step import perform_step

    waiting = waiting_item(repo, thread)
    thread_id = waiting.thread
    if expected_head is not None and waiting.head != expected_head:
        raise UwfError(f"thread {thread_id} moved on while the answer was written (it now asks {waiting.role} at {waiting.head}): nothing was recorded")
    text = as_answer(answer)
    _check_answer(text, waiting)

    def human(request: HumanRequest) -> str:
        # under the step lock now: the head can no longer move, but it may have since the check above
        if expected_head is not None and active_thread(repo, thread_id).head != expected_head:
            raise StepError(f"thread {thread_id} moved on while the answer was written: it was not recorded as its step", "killed")
        return text

    base = options or StepOptions()
    result = perform_step(repo, thread_id, replace(base, human=human, only_human=True))
    if result.done:
        repo.backend.queue.dequeue(thread_id)
    else:
        _clear_asking(repo, thread_id)
    return result


def _check_answer(text: str, waiting: InboxItem) -> None:
    """The answer against the role's schema before anything is written or recorded."""
    from ..extraction.extract import ExtractError, extract_fast

    try:
        extract_fast(text, waiting.schema)
    except ExtractError as exc:
        raise UwfError(f"the answer for role '{waiting.role}' of thread {waiting.thread} cannot be used: {exc.message}") from None


def _clear_asking(repo: Repo, thread: str) -> None:
    """A worker's queue entry no longer waits (its head moved anyway; this also says so at once)."""
    for entry in repo.backend.queue.entries():
        if entry.thread == thread and entry.asking:
            repo.backend.queue.ask(thread, None)


def as_answer(text: str) -> str:
    """A file's answer as the human protocol reads it: frontmatter markdown as written; a YAML
    mapping (an output written as YAML) as its JSON."""
    import json

    stripped = text.strip()
    if not stripped:
        raise UwfError("the answer is empty")
    if stripped.startswith("---") or stripped.startswith("{"):
        return text
    try:
        import yaml

        value = yaml.safe_load(stripped)
    except Exception:
        return text  # not YAML: the extractor says what it lacks
    return json.dumps(value) if isinstance(value, dict) else text
