"""What one step attempt is given and what it ends as: options, the human hook, results,
errors with the status runs.jsonl records, and the bookkeeping of that line."""

from __future__ import annotations

import time

from ..encoding.records import field, record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import StepError as StepError, UwfError  # StepError re-exported: the step's terms hold it too
from ..store.records import RunRecord, RunningStep

if TYPE_CHECKING:
    from typing import Callable

    from ..config.env import Secrets
    from ..repo import Repo
    from ..thread.ops import ThreadInfo
    from typing import Any, Protocol

    from .contain.process import Cancel
    from .python.agent_types import AgentFunction

    class Traced(Protocol):  # engine/tracing.py's StepTrace (not imported: it imports this module)
        def note(self, status: str, step: str | None, error: str | None, **attributes: object) -> None: ...
        def put(self, attributes: dict[str, Any]) -> None: ...

    class Contained(Protocol):  # engine/call.py's AgentCall (not imported: it imports this module)
        @property
        def containment(self) -> str: ...

if TYPE_CHECKING:
    OutputCallback = Callable[[str], None]


@record(frozen=True)
class HumanRequest:
    """What a person is asked when a role's agent is `human`."""

    thread: str
    workflow: str
    role: str
    prompt: str
    schema: dict[str, object]
    template: str
    instruction: str | None


# Returns the person's answer (frontmatter markdown or a JSON object), or None to cancel.
if TYPE_CHECKING:
    HumanInput = Callable[[HumanRequest], "str | None"]


@record(frozen=True)
class Committed:
    """A node a step moved the thread's head to: the role's own step, then any check after it
    (`thread run` prints each as it lands, in order)."""

    role: str
    agent: str
    head: str
    note: str | None = None  # e.g. "[reused X]", "continue: <reason>", "[done]"


@record(frozen=True)
class StepOptions:
    """How the caller wants a step run: the same for every step of `thread run`."""

    agent: str | AgentFunction | None = None  # --agent: an alias or a command line, over every other choice; or a Python function
    timeout: float | None = None  # seconds; over the agent entry's own timeout
    on_output: OutputCallback | None = None  # the agent's stderr, line by line
    cancel: Cancel | None = None
    human: HumanInput | None = None  # how a person answers a `human` role (None: refuse)
    # memoized replay for every agent (an agent entry's `reuse: true` opts in alone); a Python
    # function's answer is indexed for it only when its step ran with reuse on or read ctx.prompt
    # (the key is the prompt, which is not built otherwise): run the original with reuse=True too
    reuse: bool = False
    worker: str | None = None  # the `uwf worker` running the step, named in its lock for every view
    on_warning: OutputCallback | None = None  # a warning of uwf's about the step (None: on_output has it)
    checks: bool = True  # False: no supervisor or summarizer (`uwf agent test`'s one-step thread)
    on_commit: Callable[[Committed], None] | None = None  # each node the head moved to, as it moves
    candidate_of: str | None = None  # the thread whose next step this fork's is a candidate for (its runs record says)
    map_depth: int = 0  # how many map steps this step runs inside (a map's children are one deeper)
    traced: bool = True  # False: no spans even with a collector named (`uwf agent test`'s scratch step)
    only_human: bool = False  # refuse a step whose role is not a person's (`uwf thread answer`)


MAP_WAITING = "waiting"  # runs.jsonl: a map step whose children workers are still stepping (the head stays)
ASKING = "asking"  # runs.jsonl: the next role is a person's and none was at hand (`uwf inbox` lists the thread)


def interruption(lost: RunningStep) -> str:
    """What the runs log says of a step whose process lost its lock: dead, or alive but cut off (a
    database restart, a lease another worker took over: its late result meets a moved head)."""
    who = f"uwf (pid {lost.pid}{f' on {lost.host}' if lost.host and not lost.here else ''}{f', worker {lost.worker}' if lost.worker else ''})"
    if lost.lost:
        return f"{who} lost its lock during this step: {lost.lost}; the head did not move by it"
    return f"{who} died during this step; the head did not move"


@record(frozen=True)
class StepResult:
    """What a step did, as `uwf thread step` prints it: where the head is now and whether the thread ended."""

    workflow: str
    thread: str
    head: str
    done: bool
    role: str | None = None  # the role that ran; None when the thread just finished
    agent: str | None = None
    reason: str | None = None
    reused_from: str | None = None  # the earlier step whose output this step reused (no agent ran)
    killed_by: str | None = None  # why the supervisor ended the thread (engine/oversight/supervisor.py)
    step: str | None = None  # the role's own StepNode, when a check after it is the head
    next_error: str | None = None  # deciding what comes after the step failed (a condition's error): the step stands
    paused: bool = False  # run_thread stopped here: the thread was paused meanwhile

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"workflow": self.workflow, "thread": self.thread, "head": self.head, "done": self.done}
        if self.role:
            data["role"] = self.role
        if self.agent:
            data["agent"] = self.agent
        if self.reason:
            data["reason"] = self.reason
        if self.reused_from:
            data["reusedFrom"] = self.reused_from
        if self.killed_by:
            data["killedBy"] = self.killed_by
        if self.step and self.step != self.head:
            data["step"] = self.step
        if self.next_error:
            data["nextError"] = self.next_error
        if self.paused:
            data["paused"] = True
        return data


@record
class Attempt:
    """Bookkeeping for the runs.jsonl line of one attempt."""

    repo: Repo
    info: ThreadInfo
    started_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    role: str | None = None
    agent: str | None = None
    candidate_of: str | None = None
    worker: str | None = None
    trace: Traced | None = None  # the attempt's StepTrace (engine/tracing.py), when the step is traced
    call: Contained | None = None  # the AgentCall, once there is one: how it was contained, what it wrote outside

    def record(self, status: str, step: str | None = None, error: str | None = None, stderr: str | None = None) -> None:
        """Append the line; an agent's stderr or an error quoting it never brings a key along."""
        now = int(time.time() * 1000)
        secrets = secrets_or_none(self.repo)
        if self.trace is not None:
            self.trace.note(status, step, error, role=self.role, agent=self.agent)
        self.repo.runs.append(
            RunRecord(
                thread=self.info.thread,
                workflow=self.info.workflow,
                role=self.role,
                agent=self.agent,
                status=status,
                head=self.info.head,
                step=step,
                startedAt=self.started_ms,
                completedAt=now,
                durationMs=now - self.started_ms,
                error=secrets.text(error) if error is not None else None,
                stderr=secrets.text(stderr) if stderr else None,
                candidateOf=self.candidate_of,
                worker=self.worker,
                containment=self.call.containment if self.call is not None and getattr(self.call, "ran", False) else None,
                outside=getattr(self.call, "outside", None),
            )
        )


def secrets_or_none(repo: Repo) -> Secrets:
    """The root's secrets; none when .env cannot be read (that error is reported on its own path,
    and a failure being recorded must not be replaced by it)."""
    from ..config.env import NO_SECRETS

    try:
        return repo.secrets
    except UwfError:
        return NO_SECRETS


def redact_error(repo: Repo, error: UwfError) -> None:
    """Redact a failed step's message in place, before any caller prints it."""
    message = secrets_or_none(repo).text(error.message)
    if message != error.message:
        error.message = message
        error.args = (message,)
    if isinstance(error, StepError) and error.stderr:
        error.stderr = secrets_or_none(repo).text(error.stderr)
