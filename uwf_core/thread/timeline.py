"""A thread as a timeline: its steps, its failed attempts (from runs.jsonl) after
the step they started from, and the threads that branch off it (forks)."""

from __future__ import annotations

from ..encoding.records import field, record, replace
from ..errors import UwfError
from ..store.cas import CasStore
from ..store.records import RunRecord
from .context import context_of
from .model import StepContext, ThreadContext, step_numbers
from .nodes import START_TYPES, start_of, starts_of, thread_node
from .ops import ThreadInfo, list_threads, thread_info

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from ..repo import Repo


@record(frozen=True)
class Branch:
    """Another thread that shares this one's history up to `at` (a step hash, or the start)."""

    thread: str
    at: str
    own_steps: int  # steps it has beyond the shared part
    active: bool
    reason: str | None
    agent: str | None = None  # the agent of its first own step (a candidate of `thread step --agents`: which one)
    output: object = None  # that step's output, and how long it took, to compare candidates by
    took_ms: int | None = None  # by uwf's clock (its attempt in runs.jsonl), else its StepNode's times
    first: str | None = None  # that step's hash


@record
class Timeline:
    """A thread's steps with the attempts and forks around them: the history views show what
    failed and what branched off, not just the chain."""

    info: ThreadInfo
    context: ThreadContext
    attempts: dict[str, list[RunRecord]] = field(default_factory=dict)  # head hash -> failed attempts from it
    # step hash -> the attempt that wrote it: its times are uwf's, around the whole agent run
    # (a StepNode's own startedAt/completedAt are whatever the agent wrote, a kit's inner call)
    step_runs: dict[str, RunRecord] = field(default_factory=dict)
    branches: dict[str, list[Branch]] = field(default_factory=dict)  # step (or start) hash -> branches
    step_count: int = 0  # the workflow's steps behind the head (`steps` holds uwf's checks too)
    first_shown: int = 0  # the index in `steps` of the oldest step read with its runs (a window)

    @property
    def steps(self) -> Sequence[StepContext]:
        return self.context.steps

    @property
    def shown(self) -> Sequence[StepContext]:
        """The steps of the window, oldest first (all of them without one)."""
        return self.context.steps[self.first_shown:]

    def numbered(self) -> list[tuple[int, StepContext]]:
        """The shown steps with the numbers routing gives them (a check takes its step's)."""
        shown = self.shown
        return list(zip(step_numbers(shown, self.step_count), shown))


def thread_timeline(
    repo: Repo, thread: str, *, with_branches: bool = True, others: list[ThreadInfo] | None = None, window: int | None = None
) -> Timeline:
    """`others`: the threads to look for forks in, when the caller has listed them already.
    `window`: only the newest `window` steps are read (their runs included), so a view of a long
    thread costs what it shows; forks are then found apart (`find_branches`), as they need the
    whole chain."""
    info = thread_info(repo, thread)
    context = context_of(repo, info.head, with_checks=True)
    first = 0 if window is None else max(0, len(context.steps) - window)
    timeline = Timeline(info, context, step_count=len(context_of(repo, info.head).steps), first_shown=first)
    for attempt in _window_runs(repo.runs.read(info.thread), timeline.shown[0].hash if window is not None and timeline.shown else None):
        if attempt.ok and attempt.step:
            timeline.step_runs[attempt.step] = attempt
        elif not attempt.ok and attempt.head and (attempt.status != "waiting" or attempt.head == info.head):
            # a map's wait for its children is news only while it lasts: its step says the rest
            timeline.attempts.setdefault(attempt.head, []).append(attempt)
    _inherited_runs(repo, timeline)
    if with_branches:
        timeline.branches = find_branches(repo, timeline, others)
    return timeline


def _window_runs(records: list[RunRecord], oldest: str | None) -> list[RunRecord]:
    """The attempts a window of steps shows, oldest first: those since the attempt that wrote its
    oldest step (a thread's attempts are recorded in the order they ended, one at a time, and an
    attempt from a step comes after the one that wrote it), so a 100,000-step thread's window
    looks at its last few records; all of them when that attempt is not on record."""
    if oldest is None:
        return records
    for index in range(len(records) - 1, -1, -1):
        if records[index].step == oldest and records[index].ok:
            return records[index:]
    return records


def find_branches(repo: Repo, timeline: Timeline, others: list[ThreadInfo] | None = None) -> dict[str, list[Branch]]:
    """The threads that branch off this one, by the step (or start) they share last. Only a
    thread of one of this chain's StartNodes can be one; the whole chain is read only when some is."""
    candidates = others if others is not None else list_threads(repo, include_archived=True)
    found = _branches(repo.nodes, timeline.info, timeline.context, candidates)
    for branches in found.values():  # the time the fork's own timeline shows for the step: uwf's, around the attempt
        for index, branch in enumerate(branches):
            runs = [run for run in repo.runs.of_step(branch.first) if run.ok] if branch.first else []
            if runs:
                branches[index] = replace(branch, took_ms=runs[-1].durationMs)
    return found


def _inherited_runs(repo: Repo, timeline: Timeline) -> None:
    """A fork's steps before the fork were run as another thread's: find their attempts in the
    whole runs.jsonl, read only when some shown step has no run of this thread."""
    missing = {step.hash for step in timeline.shown} - timeline.step_runs.keys()
    if not missing:
        return
    for step, attempt in runs_by_step(repo.runs.read()).items():
        if step in missing:
            timeline.step_runs[step] = attempt


def runs_by_step(records: Iterable[RunRecord]) -> dict[str, RunRecord]:
    """Each step hash -> the attempt that wrote it (pass the whole runs.jsonl: a fork's steps were
    run as another thread's): uwf's own clock around the agent run, which is what a step took
    wherever uwf shows a step's time (a StepNode's startedAt/completedAt are whatever its agent wrote)."""
    return {attempt.step: attempt for attempt in records if attempt.ok and attempt.step}


def _branches(store: CasStore, info: ThreadInfo, context: ThreadContext, others: list[ThreadInfo]) -> dict[str, list[Branch]]:
    starts = starts_of(store, info.head)
    candidates = []
    for other in others:
        if other.thread == info.thread or not other.head:
            continue
        try:
            if start_of(store, other.head)[0] in starts:
                candidates.append(other)
        except UwfError:
            continue
    if not candidates:
        return {}
    ours = {step.hash for step in context.steps} | {context.start_hash}
    result: dict[str, list[Branch]] = {}
    for other in candidates:
        try:
            at, own, first = _divergence(store, other.head, ours)
        except UwfError:
            continue
        if at is not None and (own or other.head != info.head):
            agent, output, took = _first_step(store, first)
            result.setdefault(at, []).append(Branch(other.thread, at, own, other.active, other.reason, agent, output, took, first))
    return result


def _divergence(store: CasStore, head: str, ours: set[str]) -> tuple[str | None, int, str | None]:
    """Walk back from `head` to the first node we share; count the steps on the way, and say
    the first of them."""
    own = 0
    first = None
    cursor: str | None = head
    while cursor is not None:
        if cursor in ours:
            return cursor, own, first
        node = thread_node(store, cursor)
        if node.type in START_TYPES:
            cursor = node.payload.get("resumes")
            continue
        own += 1
        first = cursor
        cursor = node.payload.get("prev") or node.payload.get("start")
    return None, own, first


def _first_step(store: CasStore, step: str | None) -> tuple[str | None, object, int | None]:
    """(agent, output, took in ms) of a fork's first own step."""
    if step is None:
        return None, None, None
    payload = thread_node(store, step).payload
    started, completed = payload.get("startedAt"), payload.get("completedAt")
    took = completed - started if isinstance(started, int) and isinstance(completed, int) else None
    return payload.get("agent"), store.get(payload["output"]).payload, took



