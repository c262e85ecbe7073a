"""What a Python agent function is given, and what it may return.

A function takes one `PythonContext` and returns the role's output as a dict, or an answer
text (extracted as a text agent's is), or a `PythonAnswer` (output and/or text, with fields for
the detail node: `usage` and `model` put its tokens in the cost ledger), or a `WrittenStep` when
it wrote its own nodes (full control; uwf verifies them as it does a step-protocol agent's).
"""

from __future__ import annotations

import time
from collections.abc import Sequence as _Sequence  # loaded with os already: free

from ...encoding.records import field, record
from ...errors import StepError

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any, Callable, Iterator, Sequence, overload

    from ...thread.model import StepContext, ThreadContext
    from ..contain.process import Cancel


@record(frozen=True)
class PythonAnswer:
    """A function's answer with more than the output: the text it rests on (stored as the step's
    content; extracted when there is no output) and fields for the detail node."""

    output: dict[str, Any] | None = None
    text: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@record(frozen=True)
class Correction:
    """Why a function's last answer could not be used, when it is asked again: `errors`, each a
    place in the output and what the role's schema wants there; `output`, the output refused (None
    when the answer was text that could not be read); `message`, the same in words (what a text
    agent would be told)."""

    message: str
    errors: tuple[str, ...] = ()
    output: dict[str, Any] | None = None

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict[str, Any]:
        return {"message": self.message, "errors": list(self.errors), "output": self.output}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Correction:
        return cls(data["message"], tuple(data.get("errors") or ()), data.get("output"))


@record(frozen=True)
class WrittenStep:
    """The StepNode a function wrote itself (through the agent kit); uwf checks it continues the
    head, has the role's name and a valid output, and holds no key, then moves the head to it."""

    step: str


class PythonContext:
    """One role's work, as a Python agent function sees it. Read-only: the thread moves only by
    what the function returns.

    `thread`; `workflow`, the workflow's hash (as everywhere in the API) and `workflow_name`;
    `role`; `schema`, the role's output schema a returned dict must match; `task`, the thread's
    prompt; `instruction`, the route's, if any; `steps`, the earlier steps oldest first (`.role`,
    `.output`, `.agent`, `.hash`), `last` the newest of them and `last_output` its output;
    `workspace` and `cwd` (the route's location in it); `deadline` (time.monotonic(), None: no
    limit); `secrets`, the .env keys the entry names; `correction` (a `Correction`) and
    `corrections`, set when it is asked again; `repo` and `context`, in uwf's process only, for a
    function that writes its own step."""

    __slots__ = (
        "thread", "workflow", "workflow_name", "role", "schema", "instruction", "task", "steps", "workspace", "cwd",
        "deadline", "secrets", "correction", "corrections", "repo", "context", "_prompt", "_prompt_text", "_read",
        "_cancel", "_log",
    )

    def __init__(
        self,
        *,
        thread: str,
        workflow: str,
        workflow_name: str,
        role: str,
        schema: dict[str, Any],
        instruction: str | None,
        task: str,
        steps: Sequence[StepContext],
        workspace: str,
        cwd: str,
        deadline: float | None = None,
        secrets: dict[str, str] | None = None,
        prompt: Callable[[], str] | str = "",
        cancel: Cancel | None = None,
        log: Callable[[str], None] | None = None,
        repo: Any = None,
        context: ThreadContext | None = None,
    ) -> None:
        self.thread = thread
        self.workflow = workflow  # the workflow's hash, as StepResult.workflow and ThreadInfo.workflow
        self.workflow_name = workflow_name  # its registered name
        self.role = role
        self.schema: dict[str, Any] = json_copy(schema)  # type: ignore[assignment]  # a dict's copy: the role's output schema
        self.instruction = instruction  # the route's rendered instruction, if it has one
        self.task = task  # the thread's prompt (its StartNode's)
        self.steps: Sequence[StepView] = StepViews(steps)  # the earlier steps, oldest first: .role, .output, .agent, .hash
        self.workspace = workspace  # the thread's files (uwf's own directory when it has none)
        self.cwd = cwd  # the route's location inside the workspace: where a text agent would run
        self.deadline = deadline  # time.monotonic() at which the step's time runs out (None: no limit)
        self.secrets = dict(secrets or {})  # the .env keys the agent's entry names, and no others
        self.correction: Correction | None = None  # why the last answer could not be used, on a correction call
        self.corrections = 0  # how many times it was asked again
        self.repo = repo  # the opened Repo (in uwf's process only): for a function that writes its own step (typed Any: no import circle)
        self.context = context  # the thread as the moderator sees it (in uwf's process only)
        self._prompt = prompt
        self._prompt_text: str | None = prompt if isinstance(prompt, str) else None
        self._read = False  # the function asked for the prompt (only then is it stored with the step)
        self._cancel = cancel
        self._log = log

    @property
    def prompt(self) -> str:
        """The whole prompt a text agent would be sent (built on first use, and then stored with
        the step as what the function was given)."""
        self._read = True
        return self._text()

    @property
    def prompt_read(self) -> bool:
        """Whether the function asked for the prompt (an isolated one's child says so)."""
        return self._read

    def mark_prompt_read(self) -> None:
        self._read = True

    def _text(self) -> str:
        if self._prompt_text is None:
            prompt = self._prompt
            self._prompt_text = prompt if isinstance(prompt, str) else prompt()
        return self._prompt_text

    def output_of(self, role: str) -> Any:
        """The last output of `role` in the thread, or None when it has not run."""
        for step in reversed(self.steps):
            if step.role == role:
                return step.output
        return None

    @property
    def last(self) -> StepView | None:
        """The previous step, as `ctx.steps[-1]` (None at the thread's first step)."""
        return self.steps[-1] if len(self.steps) else None

    @property
    def last_output(self) -> dict[str, Any] | None:
        """The previous step's output (None at the thread's first step)."""
        return self.steps[-1].output if len(self.steps) else None

    def time_left(self) -> float | None:
        """Seconds until the step's deadline (None: no limit)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    @property
    def cancel_flag(self) -> Cancel | None:
        """The step's cancel flag (what stops an async function at once)."""
        return self._cancel

    @property
    def cancelled(self) -> bool:
        """The step was cancelled (K in uwf-tui, `thread kill`, a worker stopping)."""
        return self._cancel is not None and self._cancel.is_set()

    def check(self) -> None:
        """Raise if the step's time is up or it was cancelled: the cooperative stop of a
        synchronous function that runs long (call it between pieces of work)."""
        if self.cancelled:
            why = self._cancel.why() if self._cancel is not None else ""
            raise StepError(f"the step of role '{self.role}' was cancelled{why}", "killed")
        left = self.time_left()
        if left is not None and left <= 0:
            raise StepError(f"the step of role '{self.role}' ran out of time", "timeout")

    def silence(self) -> None:
        """The step gave up on the function: its `log` lines go nowhere from now on."""
        self._log = None

    def log(self, line: str) -> None:
        """A line to the step's output (the CLI's stderr, uwf-tui's log); what `print` does too."""
        if self._log is not None:
            self._log(str(line))

    # -- across a process boundary (isolate: process) ---------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "thread": self.thread, "workflow": self.workflow, "workflowName": self.workflow_name, "role": self.role,
            "schema": self.schema,
            "instruction": self.instruction, "task": self.task, "workspace": self.workspace, "cwd": self.cwd,
            "steps": [{"hash": s.hash, "role": s.role, "agent": s.agent, "output": s.output} for s in self.steps],
            "secrets": sorted(self.secrets), "prompt": self._text(),
            "correction": None if self.correction is None else self.correction.to_json(),
            "corrections": self.corrections, "timeLeft": self.time_left(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], environ: dict[str, str]) -> PythonContext:
        """The context in the child process: its keys from the environment uwf gave it."""
        from ...thread.model import StepContext

        outputs = {step["hash"]: step["output"] for step in data["steps"]}
        steps = tuple(
            StepContext(step["hash"], step["role"], step["hash"], "", step["agent"], "", load_output=outputs.__getitem__)
            for step in data["steps"]
        )
        left = data.get("timeLeft")
        ctx = cls(
            thread=data["thread"], workflow=data["workflow"], workflow_name=data["workflowName"], role=data["role"],
            schema=data["schema"],
            instruction=data.get("instruction"), task=data["task"], steps=steps, workspace=data["workspace"],
            cwd=data["cwd"], deadline=None if left is None else time.monotonic() + left,
            secrets={name: environ[name] for name in data.get("secrets", ()) if name in environ},
            prompt=data.get("prompt") or "", log=lambda line: print(line, flush=True),
        )
        ctx.correction = Correction.from_json(data["correction"]) if data.get("correction") else None
        ctx.corrections = data.get("corrections", 0)
        return ctx


class StepView:
    """One earlier step as a function sees it: its output is the function's own copy (the one uwf
    holds is shared with routing and every later step; a function may change what it is given)."""

    __slots__ = ("_step",)

    def __init__(self, step: StepContext) -> None:
        self._step = step

    @property
    def hash(self) -> str:
        return self._step.hash

    @property
    def role(self) -> str:
        return self._step.role

    @property
    def agent(self) -> str:
        return self._step.agent

    @property
    def instruction(self) -> str | None:
        return self._step.instruction

    @property
    def output(self) -> dict[str, Any]:
        return json_copy(self._step.output)  # type: ignore[return-value]  # a step's output is an object

    def __repr__(self) -> str:
        return f"StepView(hash={self.hash!r}, role={self.role!r}, agent={self.agent!r})"


class StepViews(_Sequence["StepView"]):
    """The thread's earlier steps, oldest first, read back only as far as they are asked for."""

    __slots__ = ("_steps",)

    def __init__(self, steps: Sequence[StepContext]) -> None:
        self._steps = steps

    def __len__(self) -> int:
        return len(self._steps)

    if TYPE_CHECKING:

        @overload
        def __getitem__(self, index: int) -> StepView: ...

        @overload
        def __getitem__(self, index: slice) -> list[StepView]: ...

    def __getitem__(self, index: int | slice) -> StepView | list[StepView]:
        if isinstance(index, slice):
            return [StepView(step) for step in self._steps[index]]
        return StepView(self._steps[index])

    def __iter__(self) -> Iterator[StepView]:
        return (StepView(step) for step in self._steps)

    def __reversed__(self) -> Iterator[StepView]:
        return (StepView(step) for step in reversed(self._steps))


def json_copy(value: object) -> object:
    """A copy of a JSON value, dicts and lists new (tuples as lists: what JSON, the schema and the
    store see); the rest is immutable."""
    if isinstance(value, dict):
        return {key: json_copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_copy(item) for item in value]
    return value


def json_problem(value: object, path: str = "$") -> str | None:
    """What in a value JSON cannot hold (a node holds nothing else), and where; None: nothing."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"a {type(key).__name__} key at {path} (keys must be strings)"
            problem = json_problem(item, f"{path}.{key}")
            if problem:
                return problem
        return None
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            problem = json_problem(item, f"{path}[{index}]")
            if problem:
                return problem
        return None
    return f"a {type(value).__name__} at {path}, which JSON cannot hold"
