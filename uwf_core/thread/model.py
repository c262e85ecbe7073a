"""Typed thread nodes (StartNode, StepNode) and the context built from a chain."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from ..encoding.records import field, record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, Callable, overload


# A thread's chain may hold uwf's own checks beside its roles' steps: StepNodes whose role is one
# of these (a workflow's roles cannot start with `$`). The moderator, conditions, step counts and
# agents' history never see them; timelines, the ledger and forks do (engine/oversight/supervisor.py).
SUPERVISOR_ROLE = "$supervisor"
SUMMARY_ROLE = "$summary"
SUPERVISOR_AGENT = "uwf-supervisor"  # the agent such a step names
SUMMARIZER_AGENT = "uwf-summarizer"


def is_check_role(role: object) -> bool:
    """uwf's own checks are StepNodes of `$`-named roles: routing and step numbers pass over them."""
    return isinstance(role, str) and role.startswith("$")


def check_line(role: str, output: object) -> str | None:
    """A check's output in one line, its decision first (its fields are stored by key length, so
    `reason` would lead); None for a step of a role."""
    if not is_check_role(role) or not isinstance(output, dict):
        return None
    if role == SUPERVISOR_ROLE:
        return f"{output.get('decision')}: {output.get('reason')}"
    return str(output.get("summary", ""))


def step_numbers(steps: Sequence[StepContext], total: int) -> list[int]:
    """Numbers for `steps` (the newest of a chain, with uwf's checks, ending at its head), `total`
    being how many steps of the workflow lie behind the head: a step's number is the one routing
    and agents' prompts give it; a check takes the number of the step it follows (0 before any)."""
    numbers = []
    number = total
    for step in reversed(steps):
        numbers.append(number)
        if not is_check_role(step.role):
            number -= 1
    numbers.reverse()
    return numbers


def numbered(steps: Sequence[StepContext]) -> list[tuple[int, StepContext]]:
    """A whole chain's steps (checks included) with their step_numbers."""
    steps = list(steps)
    return list(zip(step_numbers(steps, sum(1 for step in steps if not is_check_role(step.role))), steps))


@record(frozen=True)
class StartNode:
    workflow: str
    prompt: str
    workspace: str | None = None
    resumes: str | None = None
    agents: dict[str, str] | None = None
    max_tokens: int | None = None  # the thread's own budget (`thread start --max-tokens`), over the workflow's
    max_cost: float | None = None
    files: str | None = None  # the workspace's tree at the start (workspace/)
    snapshot: bool = True  # False: this thread's files are not snapshot (`thread start --no-snapshot`)

    @property
    def has_budget(self) -> bool:
        return self.max_tokens is not None or self.max_cost is not None

    @property
    def has_files(self) -> bool:
        """Stored under the schema that allows `files` and `snapshot`."""
        return self.files is not None or not self.snapshot

    def to_payload(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "workflow": self.workflow,
            "prompt": self.prompt,
            "workspace": self.workspace,
            "resumes": self.resumes,
            "agents": dict(self.agents) if self.agents else None,
        }
        if self.has_budget:  # only then: a StartNode without one keeps the plain schema and its hash
            budget = {"maxTokens": self.max_tokens, "maxCost": self.max_cost}
            data["budget"] = {key: value for key, value in budget.items() if value is not None}
        if self.files is not None:
            data["files"] = self.files
        if not self.snapshot:
            data["snapshot"] = False
        return data

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> StartNode:
        budget = payload.get("budget") or {}
        return cls(
            workflow=payload["workflow"],
            prompt=payload["prompt"],
            workspace=payload.get("workspace"),
            resumes=payload.get("resumes"),
            agents=payload.get("agents") or None,
            max_tokens=budget.get("maxTokens"),
            max_cost=budget.get("maxCost"),
            files=payload.get("files"),
            snapshot=payload.get("snapshot", True) is not False,
        )


@record(frozen=True)
class StepNode:
    start: str
    prev: str | None
    role: str
    output: str
    detail: str
    agent: str
    instruction: str | None = None
    started_at: int | None = None
    completed_at: int | None = None
    files: str | None = None  # the workspace's tree after this step
    files_before: str | None = None  # the tree it began from, when changed by hand since the last snapshot

    def to_payload(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "start": self.start,
            "prev": self.prev,
            "role": self.role,
            "output": self.output,
            "detail": self.detail,
            "agent": self.agent,
            "instruction": self.instruction,
        }
        if self.started_at is not None:
            data["startedAt"] = self.started_at
        if self.completed_at is not None:
            data["completedAt"] = self.completed_at
        if self.files is not None:
            data["files"] = self.files
        if self.files_before is not None:
            data["filesBefore"] = self.files_before
        return data

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> StepNode:
        return cls(
            start=payload["start"],
            prev=payload.get("prev"),
            role=payload["role"],
            output=payload["output"],
            detail=payload["detail"],
            agent=payload["agent"],
            instruction=payload.get("instruction"),
            started_at=payload.get("startedAt"),
            completed_at=payload.get("completedAt"),
            files=payload.get("files"),
            files_before=payload.get("filesBefore"),
        )


@record(frozen=True)
class StepContext:
    """One completed step as the moderator and agents see it.

    `output` is the expanded payload, read on first use: routing by status or
    by a null condition needs only the last one, so a long chain is walked
    without reading every output.
    """

    hash: str
    role: str
    output_hash: str
    detail: str
    agent: str
    start: str
    instruction: str | None = None
    started_at: int | None = None
    completed_at: int | None = None
    load_output: Callable[[str], object] | None = field(default=None, compare=False, repr=False)

    @cached_property
    def output(self) -> Any:
        if self.load_output is None:
            raise ValueError(f"step {self.hash}: no loader for output {self.output_hash}")
        return self.load_output(self.output_hash)

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "output": self.output, "detail": self.detail, "agent": self.agent}


class LazySteps(Sequence[StepContext]):
    """A chain's steps, oldest first, read newest-first only as far as they are asked for.

    `len()` is known without reading (the chain index counts it); `steps[-k]`, `reversed()` and
    `steps[-k:]` read the k newest; iterating or `steps[0]` reads the whole chain. `older(hash)`
    gives a step's context and the hash of the step before it (None at the beginning)."""

    def __init__(self, count: int, newest: str | None, older: Callable[[str], tuple[StepContext, str | None]], tail: list[StepContext] | None = None) -> None:
        self._count = count
        self._next = newest  # the next older step not read yet
        self._older = older
        self._tail: list[StepContext] = list(tail or [])  # newest last
        self._tail.reverse()  # kept newest first while reading backwards

    def __len__(self) -> int:
        return self._count

    def _read_back(self, wanted: int) -> None:
        while len(self._tail) < wanted and self._next is not None:
            step, self._next = self._older(self._next)
            self._tail.append(step)

    if TYPE_CHECKING:

        @overload
        def __getitem__(self, index: int) -> StepContext: ...
        @overload
        def __getitem__(self, index: slice) -> list[StepContext]: ...

    def __getitem__(self, index: int | slice) -> StepContext | list[StepContext]:
        if isinstance(index, slice):
            start, stop, stride = index.indices(self._count)
            if stride != 1:
                return [self[i] for i in range(start, stop, stride)]
            self._read_back(self._count - start)
            return [self._tail[self._count - 1 - i] for i in range(start, stop)]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("step index out of range")
        back = self._count - index
        self._read_back(back)
        if len(self._tail) < back:
            raise IndexError(f"the chain holds {len(self._tail)} steps, fewer than its index says ({self._count})")
        return self._tail[back - 1]

    def __reversed__(self) -> Iterator[StepContext]:
        offset = 0
        while True:
            self._read_back(offset + 1)
            if offset >= len(self._tail):
                return
            yield self._tail[offset]
            offset += 1

    def __iter__(self) -> Iterator[StepContext]:
        self._read_back(self._count)
        return iter(self._tail[::-1])

    def extended(self, step: StepContext) -> LazySteps:
        """These steps and one more (what the next step's context holds), sharing what was read."""
        longer = LazySteps(self._count + 1, self._next, self._older)
        longer._tail = [step, *self._tail]
        return longer


@record(frozen=True)
class ThreadContext:
    """What the chain from a head says: the current StartNode, and its steps oldest first.

    `steps` includes steps of resumed runs; `since_start` counts only those
    taken after the current StartNode (the moderator routes from $START
    when it is zero). Built from the chain index, it reads steps only as far back
    as they are used; built from a list (tests, read models) it is that list.
    """

    head: str
    start_hash: str
    start: StartNode
    steps: Sequence[StepContext] = field(default_factory=list)
    since_start: int = 0
    first_of_role: dict[str, str] | None = None  # role -> its first step's hash (None: look in steps)
    last_of_role: dict[str, str] | None = None
    role_counts: dict[str, int] | None = None
    load_step: Callable[[str], StepContext] | None = field(default=None, compare=False, repr=False)

    @property
    def last_step(self) -> StepContext | None:
        return self.steps[-1] if self.since_start else None

    @property
    def head_is_start(self) -> bool:
        return self.head == self.start_hash

    def role_count(self, role: str) -> int:
        if self.role_counts is not None:
            return self.role_counts.get(role, 0)
        return sum(1 for step in self.steps if step.role == role)

    def first_step(self, role: str) -> StepContext | None:
        if self.first_of_role is not None and self.load_step is not None:
            found = self.first_of_role.get(role)
            return self.load_step(found) if found else None
        return next((step for step in self.steps if step.role == role), None)

    def last_step_of(self, role: str) -> StepContext | None:
        if self.last_of_role is not None and self.load_step is not None:
            found = self.last_of_role.get(role)
            return self.load_step(found) if found else None
        return next((step for step in reversed(self.steps) if step.role == role), None)

    def at_head(self, head: str) -> ThreadContext:
        """This context at a head that is a check (a `$supervisor` StepNode after its newest step):
        the same steps, the next step's prev is the check."""
        return ThreadContext(
            head, self.start_hash, self.start, self.steps, self.since_start,
            first_of_role=self.first_of_role, last_of_role=self.last_of_role, role_counts=self.role_counts, load_step=self.load_step,
        )

    def to_json(self, newest: int | None = None) -> dict[str, Any]:
        """The JSONata input: {start, steps} as design.md section 7 describes; with `newest`, only
        that many of the newest steps (for a condition that looks no further back)."""
        steps = self.steps if newest is None or newest >= len(self.steps) else self.steps[len(self.steps) - newest :]
        return {"start": self.start.to_payload(), "steps": [step.to_json() for step in steps]}

    def extended(self, step: StepContext) -> ThreadContext:
        """The context of the head that `step` (just written after this head) becomes."""
        steps = self.steps.extended(step) if isinstance(self.steps, LazySteps) else [*self.steps, step]
        first_of_role = last_of_role = role_counts = None
        if self.role_counts is not None and self.first_of_role is not None and self.last_of_role is not None:
            first_of_role = {step.role: step.hash, **self.first_of_role}
            last_of_role = {**self.last_of_role, step.role: step.hash}
            role_counts = {**self.role_counts, step.role: self.role_counts.get(step.role, 0) + 1}
        return ThreadContext(
            step.hash, self.start_hash, self.start, steps, self.since_start + 1,
            first_of_role=first_of_role, last_of_role=last_of_role, role_counts=role_counts, load_step=self.load_step,
        )
