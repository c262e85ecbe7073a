"""The cost ledger: each step's spend (spend.py) rolled up per thread, per fork subtree, per
agent, per role and per model, with the thread's budget (budget.py). Failed attempts leave no
detail node, so their tokens are not recorded anywhere: the ledger counts them
(`failed_attempts`) but cannot add them up.
"""

from __future__ import annotations

from ..encoding.records import field, record
from ..errors import UwfError
from .budget import REASON_BUDGET, BudgetStatus, budget_status
from .context import context_of
from .lineage import chain_nodes, checked, split_family
from .model import ThreadContext, numbered
from .nodes import starts_of
from .spend import Spend, StepCost, spend_of, step_cost, total_spend

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any, Callable

    from ..repo import Repo
    from .ops import ThreadInfo


@record(frozen=True)
class ThreadCost:
    """A thread's ledger: every step of its chain, with totals and roll-ups.

    `inherited` steps (the first ones) are history it shares with the thread it was forked from;
    `own` counts the rest. `total` counts them all."""

    thread: str
    workflow: str
    workflow_name: str
    head: str
    active: bool
    reason: str | None
    steps: tuple[StepCost, ...]
    inherited: int  # how many of `steps` it shares with an older thread
    parent: str | None  # the thread it was forked from (None: it was started)
    total: Spend
    own: Spend
    by_agent: dict[str, Spend]
    by_model: dict[str, Spend]
    by_role: dict[str, Spend]
    failed_attempts: int  # attempts that failed: they record no tokens, so none are counted
    budget: BudgetStatus | None = None

    def to_json(self) -> dict[str, Any]:
        data = {
            "thread": self.thread,
            "workflow": self.workflow,
            "name": self.workflow_name,
            "head": self.head,
            "active": self.active,
            "reason": self.reason,
            "parent": self.parent,
            "inheritedSteps": self.inherited,
            "total": self.total.to_json(),
            "own": self.own.to_json(),
            "byAgent": {name: spend.to_json() for name, spend in self.by_agent.items()},
            "byModel": {name: spend.to_json() for name, spend in self.by_model.items()},
            "byRole": {name: spend.to_json() for name, spend in self.by_role.items()},
            "failedAttempts": self.failed_attempts,
            "steps": [step.to_json() for step in self.steps],
        }
        data["budget"] = self.budget.to_json() if self.budget is not None else None
        return data


@record(frozen=True)
class TreeThread:
    """One thread of a fork subtree, with what its own steps spent."""

    thread: str
    parent: str | None
    fork_at: str | None  # the node it was forked at (None for the subtree's root thread)
    own_steps: int
    own: Spend
    active: bool
    reason: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "thread": self.thread,
            "parent": self.parent,
            "forkAt": self.fork_at,
            "ownSteps": self.own_steps,
            "active": self.active,
            "reason": self.reason,
            **{"own": self.own.to_json()},
        }


@record(frozen=True)
class TreeCost:
    """A thread and every thread forked from it (and from those): each step counted once.

    `total` is what the subtree spent on its own steps; `inherited` what the root thread's
    shared history (before it was forked) had cost."""

    root: str
    threads: tuple[TreeThread, ...]
    total: Spend
    inherited: Spend
    by_agent: dict[str, Spend]
    by_model: dict[str, Spend]

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "total": self.total.to_json(),
            "inherited": self.inherited.to_json(),
            "byAgent": {name: spend.to_json() for name, spend in self.by_agent.items()},
            "byModel": {name: spend.to_json() for name, spend in self.by_model.items()},
            "threads": [item.to_json() for item in self.threads],
        }


def _roll_up(costs: list[StepCost]) -> tuple[Spend, dict[str, Spend], dict[str, Spend], dict[str, Spend]]:
    by_agent: dict[str, list[Spend]] = {}
    by_model: dict[str, list[Spend]] = {}
    by_role: dict[str, list[Spend]] = {}
    for cost in costs:
        by_agent.setdefault(cost.agent, []).append(cost.spend)
        by_role.setdefault(cost.role, []).append(cost.spend)
        for part in cost.parts:
            by_model.setdefault(part.model, []).append(spend_of((part,), steps=1))
    total = total_spend([cost.spend for cost in costs])
    return total, _totals(by_agent), _totals(by_model), _totals(by_role)


def _totals(groups: dict[str, list[Spend]]) -> dict[str, Spend]:
    return {name: total_spend(spends) for name, spends in groups.items()}


def thread_cost(repo: Repo, thread: str, *, stop: Callable[[], bool] | None = None) -> ThreadCost:
    """The ledger of one thread: each step (tokens, models, cost, reuse, time), totals, roll-ups
    per agent, model and role, what it inherited from the thread it was forked from, its budget.
    `stop`: asked as the steps are read; once true, the read ends with lineage.Stopped (a
    100,000-step ledger is seconds of work a step of the same thread makes stale)."""
    from ..workflow.ops import workflow_of
    from .ops import thread_info
    from .timeline import runs_by_step

    info = thread_info(repo, thread)
    context = context_of(repo, info.head, with_checks=True)
    for _ in checked(reversed(context.steps), stop):
        pass  # the chain read newest first, `stop` asked as it goes (iterating reads it whole before the first step)
    family = _family(repo, info, context, stop)
    records = list(repo.runs.read())  # once: each step's time, and this thread's failed attempts
    runs = runs_by_step(records)
    costs = [step_cost(repo, step, number, runs.get(step.hash)) for number, step in checked(numbered(context.steps), stop)]
    own_nodes = family.own.get(info.thread, set())
    inherited = sum(1 for step in context.steps if step.hash not in own_nodes)
    total, by_agent, by_model, by_role = _roll_up(costs)
    own, _, _, _ = _roll_up(costs[inherited:])
    failed = sum(1 for attempt in records if attempt.thread == info.thread and not attempt.ok and attempt.status != REASON_BUDGET)
    workflow = workflow_of(repo, context.start.workflow)
    return ThreadCost(
        info.thread, context.start.workflow, workflow.name, info.head, info.active, info.reason, tuple(costs), inherited,
        family.parent.get(info.thread), total, own, by_agent, by_model, by_role, failed, budget_status(repo, context, workflow),
    )


def tree_cost(repo: Repo, thread: str) -> TreeCost:
    """A fork subtree's ledger: the thread, the threads forked from it, and theirs; each step once."""
    from .ops import thread_info
    from .timeline import runs_by_step

    info = thread_info(repo, thread)
    context = context_of(repo, info.head, with_checks=True)
    family = _family(repo, info, context)
    members = [info.thread]
    for other in family.order:  # oldest first: a parent is always listed before its forks
        if other != info.thread and family.parent.get(other) in members:
            members.append(other)
    costs_by_step: dict[str, StepCost] = {}
    runs = runs_by_step(repo.runs.read())
    threads = []
    own_costs: list[StepCost] = []
    for member in members:
        member_context = context_of(repo, family.heads[member], with_checks=True)
        mine = []
        for number, step in numbered(member_context.steps):
            if step.hash in family.own.get(member, set()):
                cost = costs_by_step.get(step.hash) or step_cost(repo, step, number, runs.get(step.hash))
                costs_by_step[step.hash] = cost
                mine.append(cost)
        own_costs.extend(mine)
        spend, _, _, _ = _roll_up(mine)
        threads.append(
            TreeThread(member, family.parent.get(member), family.fork_at.get(member), len(mine), spend, family.active[member], family.reasons.get(member))
        )
    inherited_costs = [step_cost(repo, step, number, runs.get(step.hash)) for number, step in numbered(context.steps) if step.hash not in family.own.get(info.thread, set())]
    total, by_agent, by_model, _ = _roll_up(own_costs)
    inherited, _, _, _ = _roll_up(inherited_costs)
    return TreeCost(info.thread, tuple(threads), total, inherited, by_agent, by_model)


@record
class _Family:
    """The threads that share history with one thread, oldest first, and who forked from whom."""

    order: list[str] = field(default_factory=list)
    heads: dict[str, str] = field(default_factory=dict)
    active: dict[str, bool] = field(default_factory=dict)
    reasons: dict[str, str | None] = field(default_factory=dict)
    chains: dict[str, list[str]] = field(default_factory=dict)  # thread -> its nodes, StartNodes included, oldest first
    own: dict[str, set[str]] = field(default_factory=dict)  # thread -> the nodes no older thread has
    parent: dict[str, str | None] = field(default_factory=dict)
    fork_at: dict[str, str | None] = field(default_factory=dict)


def _family(repo: Repo, info: ThreadInfo, context: ThreadContext, stop: Callable[[], bool] | None = None) -> _Family:
    """Threads (active or archived) whose chain shares a StartNode with this one's, oldest first,
    and for each the nodes it has of its own and its parent (lineage.py's rule)."""
    from .ops import list_threads

    store = repo.nodes
    ours = starts_of(store, info.head)
    starts: set[str] = set()  # the StartNodes of every chain in the family
    family = _Family()
    for other in sorted(list_threads(repo, include_archived=True), key=lambda item: item.thread):
        if other.problem or not other.head:
            continue
        try:
            theirs = ours if other.thread == info.thread else starts_of(store, other.head)
            if not ours.intersection(theirs):
                continue
            chain = _nodes_of(repo, other.head, stop=stop) if other.thread != info.thread else _nodes_of(repo, info.head, context, stop)
        except UwfError:
            continue
        starts |= theirs
        family.order.append(other.thread)
        family.heads[other.thread] = other.head
        family.active[other.thread] = other.active
        family.reasons[other.thread] = other.reason
        family.chains[other.thread] = chain
    split = split_family(family.chains, starts)
    family.own, family.fork_at, family.parent = split.own, split.fork_at, split.parent
    return family


def _nodes_of(repo: Repo, head: str, context: ThreadContext | None = None, stop: Callable[[], bool] | None = None) -> list[str]:
    """A chain's nodes (lineage.py). `context`: the head's, when the caller has read it (its
    steps are not read twice)."""
    return chain_nodes(context if context is not None else context_of(repo, head, with_checks=True), stop)


