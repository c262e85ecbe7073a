"""Agents side by side: a thread's next step run once per agent, all at the same time, each in a
fork of the thread's head, so the thread itself does not move until an answer is chosen.

`pick="first"` is hedging: the first valid answer moves the thread's head to its step and the
other agents are cancelled (their attempts recorded as cancelled: runs.jsonl's `killed`). With no
pick the forks stay, to be compared (`uwf diff`, the TUI) and chosen with `pick_step`. A chosen
fork is archived as `picked` (the thread now holds its step), the others as `not-picked`.
"""

from __future__ import annotations

import time

from ...encoding.records import record, replace
from ...errors import ConflictError, UwfError
from ...thread.context import context_of
from ...thread.moderator import REASON_DONE, evaluate
from ...thread.nodes import STEP_TYPES, read_step, thread_node
from ...thread.ops import ThreadInfo, active_thread, fork_thread, resolve_node, resolve_thread_id
from ...workflow.ops import workflow_of
from ..attempt import StepError, StepOptions
from ..contain.process import Cancel
from ..step import perform_step

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any

    from ...repo import Repo

PICKS = ("first",)
REASON_PICKED = "picked"  # a candidate's fork whose step the thread now holds
REASON_NOT_PICKED = "not-picked"  # the other candidates' forks


@record(frozen=True)
class Candidate:
    """One agent's try at the step, in its own fork."""

    agent: str
    thread: str  # the fork it ran in
    status: str  # as runs.jsonl says it: ok, failed, timeout, killed (cancelled), budget
    head: str  # the fork's head after it (its step, or a check after it, when ok)
    seconds: float
    step: str | None = None  # the agent's StepNode, when ok
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = {"agent": self.agent, "thread": self.thread, "status": self.status, "head": self.head, "seconds": round(self.seconds, 3)}
        if self.step is not None:
            data["step"] = self.step
        if self.error is not None:
            data["error"] = self.error
        return data


@record(frozen=True)
class SideBySide:
    """What `uwf thread step --agents` did: the thread's head (moved only by a pick) and each try."""

    workflow: str
    thread: str
    head: str
    role: str
    candidates: tuple[Candidate, ...]
    picked: str | None = None  # the agent whose answer the thread took
    done: bool = False
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = {"workflow": self.workflow, "thread": self.thread, "head": self.head, "done": self.done, "role": self.role}
        if self.reason:
            data["reason"] = self.reason
        data["picked"] = self.picked
        data["candidates"] = [candidate.to_json() for candidate in self.candidates]
        return data


@record(frozen=True)
class Picked:
    """What `uwf thread pick` did: the thread moved from one head to the chosen step."""

    workflow: str
    thread: str
    head: str
    previous: str
    done: bool
    picked: tuple[str, ...]  # the forks that held the step, archived as picked
    not_picked: tuple[str, ...]  # the thread's other candidates, archived as not picked

    def to_json(self) -> dict[str, Any]:
        return {
            "workflow": self.workflow, "thread": self.thread, "head": self.head, "from": self.previous,
            "done": self.done, "picked": list(self.picked), "notPicked": list(self.not_picked),
        }


def step_side_by_side(repo: Repo, thread: str, agents: list[str], options: StepOptions = StepOptions(), pick: str | None = None) -> SideBySide:
    """Run `thread`'s next step once per agent at the same time, each in a fork of its head.
    Raises when every agent failed (the forks archived, each attempt in the runs log)."""
    _check_request(agents, pick)
    info = active_thread(repo, resolve_thread_id(repo, thread))
    role = _next_role(repo, info, agents)
    forks = [fork_thread(repo, info.head) for _ in agents]
    candidates, winner = _race(repo, info.thread, forks, agents, options, pick)
    if winner is not None:
        head, reason = _move(repo, info, winner)
        _archive(repo, [winner.thread], info.workflow, REASON_PICKED)
        _archive(repo, [c.thread for c in candidates if c is not winner], info.workflow, REASON_NOT_PICKED)
        return SideBySide(info.workflow, info.thread, head, role, candidates, winner.agent, reason is not None, reason)
    failed = [c for c in candidates if c.status != "ok"]
    _archive(repo, [c.thread for c in failed], info.workflow, REASON_NOT_PICKED)  # nothing to compare in a fork that did not move
    if len(failed) == len(candidates):
        raise UwfError("every agent failed: " + "; ".join(f"{c.agent}: {c.error}" for c in candidates))
    return SideBySide(info.workflow, info.thread, info.head, role, candidates)


def _check_request(agents: list[str], pick: str | None) -> None:
    if len(agents) < 2:
        raise UwfError("side by side needs at least two agents (e.g. --agents claude,codex)")
    repeated = sorted({agent for agent in agents if agents.count(agent) > 1})
    if repeated:
        raise UwfError(f"agent {repeated[0]!r} is named twice: each agent runs once")
    if pick is not None and pick not in PICKS:
        raise UwfError(f"unknown pick {pick!r}: the choice is {', '.join(PICKS)}")


def _next_role(repo: Repo, info: ThreadInfo, agents: list[str]) -> str:
    """The role the agents will answer; refused before any fork when there is none, when an
    agent is unknown or a person, or when the forks would share a directory."""
    from ...thread.files import snapshots_on
    from ..dry_run import cannot_start
    from ..resolve import resolve_agent

    context = context_of(repo, info.head)
    workflow = workflow_of(repo, context.start.workflow)
    decision = evaluate(workflow, context)
    if decision.is_end:
        raise UwfError(f"thread {info.thread} has no next step ({decision.reason}): step it without --agents to end it")
    if workflow.roles[decision.role].map is not None:
        raise UwfError(f"the next role of thread {info.thread}, '{decision.role}', is a map: its child threads run their own agents")
    for agent in agents:
        resolved = resolve_agent(
            repo.config, workflow.name, decision.role, context.start.agents, agent,
            config_file=repo.backend.config.location, functions=repo.agents.entries,
        )
        if resolved.protocol == "human":
            raise UwfError(f"agent {agent!r} is a person: side by side is for agents that answer on their own")
        problem = cannot_start(repo, resolved)
        if problem is not None:
            raise UwfError(f"agent {agent!r} cannot run here: {problem}")
    if context.start.workspace is not None and not snapshots_on(repo, context.start):
        raise UwfError(
            f"thread {info.thread} keeps no snapshots of its files, so its forks would share one directory: "
            "agents side by side need a copy each"
        )
    return decision.role


def _race(repo: Repo, thread: str, forks: list[ThreadInfo], agents: list[str], options: StepOptions, pick: str | None) -> tuple[tuple[Candidate, ...], Candidate | None]:
    """Each agent's step in its fork, in threads of this process; with a pick, the first to
    answer cancels the rest. A cancel of the caller's (Ctrl-C, `options.cancel`) cancels all."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    cancels = [Cancel() for _ in agents]
    results: dict[int, Candidate] = {}
    winner = None
    with ThreadPoolExecutor(len(agents), thread_name_prefix="uwf-side-by-side") as pool:
        pending = {pool.submit(_try, repo, thread, fork.thread, agent, cancel, options): index
                   for index, (fork, agent, cancel) in enumerate(zip(forks, agents, cancels))}
        try:
            while pending:
                done, _ = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                if options.cancel is not None and options.cancel.is_set():
                    _cancel_all(cancels, "the step was cancelled")
                for future in done:
                    candidate = results[pending.pop(future)] = future.result()
                    if pick == "first" and winner is None and candidate.status == "ok":
                        winner = candidate
                        _cancel_all(cancels, f"agent {candidate.agent!r} answered first")
        except BaseException:  # Ctrl-C: no agent goes on without the caller
            _cancel_all(cancels, "interrupted")
            wait(pending)  # each agent stopped, its attempt recorded
            heads = repo.threads.heads()
            _archive(repo, [f.thread for f in forks if heads.get(f.thread) == f.head], forks[0].workflow, REASON_NOT_PICKED)
            raise
    return tuple(results[index] for index in range(len(agents))), winner


def _cancel_all(cancels: list[Cancel], reason: str) -> None:
    for cancel in cancels:
        if not cancel.is_set():
            cancel.set(reason)


def _try(repo: Repo, candidate_of: str, fork: str, agent: str, cancel: Cancel, options: StepOptions) -> Candidate:
    outer = options.on_output

    def on_output(line: str) -> None:
        assert outer is not None  # passed as on_output only then
        outer(f"[{agent}] {line}")

    started = time.monotonic()
    mine = replace(options, agent=agent, cancel=cancel, on_output=on_output if outer else None, candidate_of=candidate_of)
    try:
        result = perform_step(repo, fork, mine)
    except Exception as exc:  # on record as the fork's attempt already; a bug too: one candidate's, not the race's
        if isinstance(exc, StepError):
            status, error = exc.status, exc.message
        elif isinstance(exc, UwfError):
            status, error = "failed", exc.message
        else:
            status, error = "failed", f"internal error: {type(exc).__name__}: {exc}"
        return Candidate(agent, fork, status, repo.threads.heads().get(fork, ""), time.monotonic() - started, error=error)
    return Candidate(agent, fork, "ok", result.head, time.monotonic() - started, step=result.step or result.head)


def _move(repo: Repo, info: ThreadInfo, winner: Candidate) -> tuple[str, str | None]:
    """The thread's head to the winner's, archived as its fork was when that step ended it."""
    archived = repo.threads.last_archived(winner.thread) if winner.thread not in repo.threads.heads() else None
    reason = archived.reason if archived is not None else None
    try:
        repo.threads.compare_and_set(info.thread, info.head, winner.head, archive_reason=reason, workflow=info.workflow)
    except ConflictError:
        raise UwfError(
            f"thread {info.thread} moved while its agents ran: it was not moved to {winner.agent}'s step "
            f"{winner.head}, which stays in fork {winner.thread}"
        ) from None
    _bring_files(repo, info, winner.head)
    _adopt_runs(repo, winner.thread, info.thread)
    return winner.head, reason


def _adopt_runs(repo: Repo, fork: str, thread: str) -> None:
    """The fork's attempts copied into the thread's runs log: they made the steps it now holds."""
    for attempt in repo.runs.read(fork):
        repo.runs.append(replace(attempt, thread=thread, candidateOf=thread))


def _archive(repo: Repo, forks: list[str], workflow: str, reason: str) -> None:
    heads = repo.threads.heads()
    for fork in forks:
        if fork in heads:  # a fork whose step ended it is archived already, as done
            repo.threads.archive(fork, workflow, reason)


def _bring_files(repo: Repo, info: ThreadInfo, head: str) -> None:
    """The thread's own directory brought from its old head's files to the new head's."""
    from ...thread.files import files_of, thread_workspace
    from ...thread.nodes import start_of
    from ...workspace.materialize import bring

    store = repo.nodes
    workspace = thread_workspace(repo, info.thread, start_of(store, info.head)[1])
    new = files_of(store, head)
    if workspace is None or new is None:
        return
    try:
        bring(store, workspace, files_of(store, info.head), new)
    except OSError as exc:
        raise UwfError(f"thread {info.thread} moved to {head}, but its files could not be written to {workspace}: {exc.strerror or exc}") from None


def pick_step(repo: Repo, step: str, thread: str | None = None) -> Picked:
    """Move `thread` (by default the one the step's fork was a candidate for, else the one active
    thread at an earlier step of its chain) to `step`. The forks at that step are archived as
    picked; the thread's other candidates that have not moved since, as not picked."""
    chosen = resolve_node(repo, step)
    if thread_node(repo.nodes, chosen).type not in STEP_TYPES:
        raise UwfError(f"{chosen} is a thread's start, not a step: pick a step of a fork")
    heads = repo.threads.heads()
    holders = sorted(t for t, h in heads.items() if h == chosen)
    given = resolve_thread_id(repo, thread) if thread else _candidate_of(repo, holders)
    if given in holders:
        raise UwfError(f"thread {given} is at {chosen} already")
    target = _thread_before(repo, chosen, heads, holders, given)
    info = active_thread(repo, target)
    context = context_of(repo, chosen)
    done = evaluate(workflow_of(repo, context.start.workflow), context).is_end
    try:
        repo.threads.compare_and_set(target, info.head, chosen, archive_reason=REASON_DONE if done else None, workflow=info.workflow)
    except ConflictError as exc:
        raise UwfError(f"thread {target} moved meanwhile: {exc.message}") from None
    _bring_files(repo, info, chosen)
    for fork in holders:
        _adopt_runs(repo, fork, target)
    others = _unmoved_candidates(repo, target, set(holders))
    _archive(repo, holders, info.workflow, REASON_PICKED)
    _archive(repo, others, info.workflow, REASON_NOT_PICKED)
    return Picked(info.workflow, target, chosen, info.head, done, tuple(holders), tuple(others))


def _unmoved_candidates(repo: Repo, thread: str, holders: set[str]) -> list[str]:
    """The thread's other candidate forks still at their candidate step (none stepped on by hand)."""
    heads = repo.threads.heads()
    return sorted({
        attempt.thread for attempt in repo.runs.read()
        if attempt.candidateOf == thread and attempt.thread != thread and attempt.thread not in holders
        and attempt.step and heads.get(attempt.thread) == attempt.step
    })


def _candidate_of(repo: Repo, holders: list[str]) -> str | None:
    """The thread the forks at the chosen step were candidates for, as their runs say, if one."""
    found = {attempt.candidateOf for fork in holders for attempt in repo.runs.read(fork) if attempt.candidateOf}
    return found.pop() if len(found) == 1 else None


def _thread_before(repo: Repo, chosen: str, heads: dict[str, str], holders: list[str], given: str | None) -> str:
    """The thread whose head is an earlier node of `chosen`'s chain: the given one, checked, or
    the one found nearest to `chosen`."""
    store = repo.nodes
    step = read_step(store, chosen)
    at: str | None = step.prev or step.start
    while at is not None:
        owners = sorted(t for t, h in heads.items() if h == at and t not in holders)
        if given is not None and given in owners:
            return given
        if given is None and len(owners) == 1:
            return owners[0]
        if given is None and owners:
            raise UwfError(f"threads {', '.join(owners)} are all at {at}: say which to move with --thread")
        if thread_node(store, at).type in STEP_TYPES:
            step = read_step(store, at)
            at = step.prev or step.start
        else:
            at = None  # a StartNode: the chain's beginning (a resumed thread's earlier chain is done)
    if given is not None:
        raise UwfError(f"thread {given} is not at an earlier step of {chosen}: its head is {heads.get(given, '(archived)')}")
    raise UwfError(f"no active thread is at an earlier step of {chosen}: nothing to move (fork it instead)")
