"""The cost ledger: tokens and cost per step, rolled up per thread, per fork subtree, per agent,
per role and per model; and a thread's budget.

Tokens come from each step's detail node: the agent's `usage` under the model it names
(`model`, else `modelName`), and the extract fallback's `extractUsage` under `extractModel`.
Prices come from config.yaml's `prices` (per million prompt / completion tokens). A model
without a price is counted in tokens only: its cost is unknown, never guessed, and a total
that includes it has no cost (`Spend.cost` is None; `priced_cost` is the part that is known).
A step whose agent recorded no usage at all (a text agent such as `claude -p`, uwf-script)
spent an unknown amount: it is counted as `unrecorded`, and a total that includes one has no cost
either. A reused step, a person's answer and an edited output spent nothing, and say so. Failed
attempts leave no detail node, so their tokens are not recorded anywhere: the ledger counts them
(`failed_attempts`) but cannot add them up.

A budget (`maxTokens`, `maxCost`: the StartNode's own, else the workflow's) is checked against
the steps since the thread's current StartNode, as maxSteps is: a fork carries the history it
shares, a resume starts afresh. The running total behind a head is kept as derived data
(`spend1:<head>`, tokens per model; prices are applied when read), so a check reads one step.
"""

from __future__ import annotations

import json

from ..encoding.records import field, record
from ..errors import UwfError
from ..llm.usage import Usage
from .context import context_of
from .model import StepContext, ThreadContext, numbered
from .nodes import STEP_TYPES, starts_of, thread_node

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from ..config.model import Config
    from ..repo import Repo
    from ..store.cas import CasStore
    from ..store.records import RunRecord
    from ..workflow.model import Workflow
    from .ops import ThreadInfo

UNKNOWN_MODEL = "(unknown model)"
REUSE_PROTOCOL = "reuse"  # a step whose output was reused (engine/reuse.py): no agent ran
FREE_PROTOCOLS = frozenset({REUSE_PROTOCOL, "human", "edit"})  # no model ran: nothing was spent, by definition
KEY = "spend2:"


def tokens_of(usage: Usage) -> int:
    """A usage's tokens: its total, else prompt + completion (some providers send no total)."""
    return usage.total_tokens or usage.prompt_tokens + usage.completion_tokens


@record(frozen=True)
class ModelSpend:
    """What one model spent in one step (or in a sum of steps)."""

    model: str  # the name the detail recorded (a config alias, or the provider's name); UNKNOWN_MODEL if none
    usage: Usage
    cost: float | None  # None: the model has no price in config.yaml (and spent tokens)
    names: tuple[str, ...] = ()  # every name the detail gave it (alias, provider's name): what prices look up

    def to_json(self) -> dict:
        return {"model": self.model, **self.usage.to_json(), "cost": self.cost}


@record(frozen=True)
class Spend:
    """Tokens and cost of some steps. `cost` is None when some tokens have no price."""

    steps: int = 0
    reused: int = 0  # steps that reused an earlier output (spent nothing)
    usage: Usage = field(default_factory=Usage)
    priced_cost: float = 0.0  # the cost of the tokens that have a price
    unpriced_tokens: int = 0
    unpriced_models: tuple[str, ...] = ()
    unrecorded: int = 0  # steps whose agent recorded no usage: what they spent is unknown

    @property
    def tokens(self) -> int:
        """The tokens recorded (steps in `unrecorded` are not in it)."""
        return tokens_of(self.usage)

    @property
    def cost(self) -> float | None:
        """The cost, when it is known whole: None if some tokens have no price or some step recorded none."""
        return None if self.unpriced_tokens or self.unrecorded else self.priced_cost

    def __add__(self, other: Spend) -> Spend:
        return Spend(
            self.steps + other.steps,
            self.reused + other.reused,
            self.usage + other.usage,
            self.priced_cost + other.priced_cost,
            self.unpriced_tokens + other.unpriced_tokens,
            tuple(dict.fromkeys([*self.unpriced_models, *other.unpriced_models])),
            self.unrecorded + other.unrecorded,
        )

    def to_json(self) -> dict:
        return {
            "steps": self.steps,
            "reusedSteps": self.reused,
            "tokens": self.tokens,
            **self.usage.to_json(),
            "cost": _money(self.cost),
            "pricedCost": _money(self.priced_cost),
            "unpricedTokens": self.unpriced_tokens,
            "unpricedModels": list(self.unpriced_models),
            "unrecordedSteps": self.unrecorded,
        }


def _money(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def spend_of(parts: tuple[ModelSpend, ...], *, steps: int = 1, reused: int = 0, unrecorded: int = 0) -> Spend:
    usage = Usage()
    priced = 0.0
    unpriced = 0
    unpriced_models: list[str] = []
    for part in parts:
        usage = usage + part.usage
        if part.cost is not None:
            priced += part.cost
        elif tokens_of(part.usage):
            unpriced += tokens_of(part.usage)
            unpriced_models.append(part.model)
    return Spend(steps, reused, usage, priced, unpriced, tuple(dict.fromkeys(unpriced_models)), unrecorded)


def priced(config: Config, names: tuple[str, ...], usage: Usage) -> ModelSpend:
    """One model's usage with its cost (None when no name has a price and tokens were spent)."""
    model = names[0] if names else UNKNOWN_MODEL
    price = config.price_of(*names) if names else None
    if price is not None:
        cost = price.cost(usage.prompt_tokens, usage.completion_tokens)
    else:
        cost = None if tokens_of(usage) else 0.0
    return ModelSpend(model, usage, cost, names)


def _names(*values: object) -> tuple[str, ...]:
    return tuple(dict.fromkeys(value for value in values if isinstance(value, str) and value))


def usage_recorded(detail: object) -> bool:
    """Whether a step's detail says what its agent spent: a `usage`, or a protocol that runs no model."""
    return isinstance(detail, dict) and ("usage" in detail or detail.get("protocol") in FREE_PROTOCOLS)


def detail_parts(detail: object) -> tuple[tuple[tuple[str, ...], Usage], ...]:
    """(model names, usage) of what a step's detail records: the agent's, then the extractor's."""
    if not isinstance(detail, dict) or detail.get("protocol") == REUSE_PROTOCOL:
        return ()
    parts = []
    if detail.get("protocol") == "map":  # a map step: its children's tokens, rolled up per model
        for group in detail.get("childUsage") or ():
            if isinstance(group, dict) and isinstance(group.get("models"), list):
                parts.append((_names(*group["models"]), Usage.from_json(group.get("usage"))))
        return tuple(parts)
    agent = Usage.from_json(detail.get("usage"))
    if agent.requests or tokens_of(agent):
        parts.append((_names(detail.get("model"), detail.get("modelName")), agent))
    extract = Usage.from_json(detail.get("extractUsage"))
    if extract.requests or tokens_of(extract):
        parts.append((_names(detail.get("extractModel")), extract))
    return tuple(parts)


# -- one step ----------------------------------------------------------------------------------


@record(frozen=True)
class StepCost:
    """One step (one successful attempt) in the ledger."""

    step: str
    number: int  # its position in the thread, from 1
    role: str
    agent: str
    parts: tuple[ModelSpend, ...]
    spend: Spend
    reused_from: str | None = None  # the step whose output it reused (it spent nothing)
    started_at: int | None = None
    completed_at: int | None = None

    @property
    def recorded(self) -> bool:
        """Whether the agent recorded what it spent (else `spend` holds only what the extractor did)."""
        return not self.spend.unrecorded

    @property
    def duration_ms(self) -> int | None:
        if self.started_at is None or self.completed_at is None:
            return None
        return max(0, self.completed_at - self.started_at)

    def to_json(self) -> dict:
        data = {
            "step": self.step,
            "number": self.number,
            "role": self.role,
            "agent": self.agent,
            "tokens": self.spend.tokens if self.recorded else None,
            **self.spend.usage.to_json(),
            "cost": _money(self.spend.cost),
            "usageRecorded": self.recorded,
            "models": [part.to_json() for part in self.parts],
            "durationMs": self.duration_ms,
        }
        if self.reused_from:
            data["reusedFrom"] = self.reused_from
        return data


def _detail(store: CasStore, hash_: str) -> object:
    try:
        return store.payload(hash_)
    except UwfError:
        return None


def step_cost(repo: Repo, step: StepContext, number: int = 0, run: RunRecord | None = None) -> StepCost:
    """What one step spent, priced with the root's config.yaml; its time from `run`, the attempt
    that wrote it (thread/timeline.runs_by_step), else from the StepNode."""
    detail = _detail(repo.nodes, step.detail)
    config = repo.config
    parts = tuple(priced(config, names, usage) for names, usage in detail_parts(detail))
    reused_from = detail.get("reusedFrom") if isinstance(detail, dict) and detail.get("protocol") == REUSE_PROTOCOL else None
    spend = spend_of(parts, reused=1 if reused_from else 0, unrecorded=0 if usage_recorded(detail) else 1)
    started, completed = (run.startedAt, run.completedAt) if run is not None else (step.started_at, step.completed_at)
    return StepCost(step.hash, number, step.role, step.agent, parts, spend, reused_from, started, completed)


# -- a thread, and the threads forked from it ----------------------------------------------------


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

    def to_json(self) -> dict:
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

    def to_json(self) -> dict:
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

    def to_json(self) -> dict:
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


def total_spend(spends: list[Spend]) -> Spend:
    """The sum of `spends`, added in order as `+` would (the same floats), without a record for
    each partial sum: those were most of a 10,000-step ledger's time."""
    steps = reused = prompt = completion = total = requests = unpriced = unrecorded = 0
    priced_cost = 0.0
    models: dict[str, None] = {}
    for spend in spends:
        usage = spend.usage
        steps += spend.steps
        reused += spend.reused
        prompt += usage.prompt_tokens
        completion += usage.completion_tokens
        total += usage.total_tokens
        requests += usage.requests
        priced_cost += spend.priced_cost
        unpriced += spend.unpriced_tokens
        models.update(dict.fromkeys(spend.unpriced_models))
        unrecorded += spend.unrecorded
    return Spend(steps, reused, Usage(prompt, completion, total, requests), priced_cost, unpriced, tuple(models), unrecorded)


def thread_cost(repo: Repo, thread: str) -> ThreadCost:
    """The ledger of one thread: each step (tokens, models, cost, reuse, time), totals, roll-ups
    per agent, model and role, what it inherited from the thread it was forked from, its budget."""
    from ..workflow.ops import workflow_of
    from .ops import thread_info
    from .timeline import runs_by_step

    info = thread_info(repo, thread)
    context = context_of(repo, info.head, with_checks=True)
    family = _family(repo, info, context)
    records = list(repo.runs.read())  # once: each step's time, and this thread's failed attempts
    runs = runs_by_step(records)
    costs = [step_cost(repo, step, number, runs.get(step.hash)) for number, step in numbered(context.steps)]
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


def _family(repo: Repo, info: ThreadInfo, context: ThreadContext) -> _Family:
    """Threads (active or archived) whose chain shares a StartNode with this one's, and for each
    the nodes it has of its own: a node belongs to the oldest thread (by id: ULIDs sort by creation)
    that has it, so a fork owns the steps after the node it was forked at. A thread that shares
    only StartNodes with older ones was started with the same workflow and prompt (nodes are
    content-addressed), not forked: it has no parent."""
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
            chain = _nodes_of(repo, other.head) if other.thread != info.thread else _nodes_of(repo, info.head, context)
        except UwfError:
            continue
        starts |= theirs
        family.order.append(other.thread)
        family.heads[other.thread] = other.head
        family.active[other.thread] = other.active
        family.reasons[other.thread] = other.reason
        family.chains[other.thread] = chain
    seen: dict[str, str] = {}  # node -> the oldest thread that has it
    for thread in family.order:
        chain = family.chains[thread]
        own = {node for node in chain if node not in seen}
        family.own[thread] = own
        shared_steps = [node for node in chain if node not in own and node not in starts]
        fork_point = shared_steps[-1] if shared_steps else None
        family.fork_at[thread] = fork_point
        family.parent[thread] = seen.get(fork_point) if fork_point else None
        for node in chain:
            seen.setdefault(node, thread)
    return family


def _nodes_of(repo: Repo, head: str, context: ThreadContext | None = None) -> list[str]:
    """A chain's nodes, oldest first, its StartNodes included (the node a fork was made at can be
    one). `context`: the head's, when the caller has read it (its steps are not read twice)."""
    context = context if context is not None else context_of(repo, head, with_checks=True)
    nodes: list[str] = []
    current_start: str | None = None
    for step in context.steps:
        if step.start != current_start:
            current_start = step.start
            nodes.append(step.start)
        nodes.append(step.hash)
    if context.start_hash != current_start:
        nodes.append(context.start_hash)
    return nodes


# -- budgets -------------------------------------------------------------------------------------


REASON_BUDGET = "budget"


@record(frozen=True)
class BudgetStatus:
    """A thread's budget and what the steps since its current StartNode used of it."""

    max_tokens: int | None
    max_cost: float | None
    source: str  # where the limits come from: "thread" (thread start --max-*), "workflow", or both
    used: Spend

    @property
    def exceeded(self) -> str | None:
        """Why no further step may run (one line), or None while the budget lasts."""
        if self.max_tokens is not None and self.used.tokens >= self.max_tokens:
            return f"its steps used {self.used.tokens:,} tokens of its maxTokens {self.max_tokens:,}"
        if self.max_cost is not None and self.used.priced_cost >= self.max_cost:
            return f"its steps cost {self.used.priced_cost:.4f} of its maxCost {_number(self.max_cost)}"
        return None

    @property
    def unpriced(self) -> str | None:
        """Why a maxCost cannot be checked: tokens of models with no price (one line), or None."""
        if self.max_cost is None or not self.used.unpriced_tokens:
            return None
        models = ", ".join(self.used.unpriced_models)
        return (
            f"it has maxCost {_number(self.max_cost)}, but {self.used.unpriced_tokens:,} of its tokens were spent by "
            f"{models}, which config.yaml's prices do not list: add a price (prices: {{MODEL: {{input: N, output: N}}}}) "
            f"so the budget can be checked"
        )

    @property
    def unrecorded(self) -> str | None:
        """Steps since the start whose agent recorded no usage: the budget cannot count them (one line)."""
        count = self.used.unrecorded
        if not count:
            return None
        return f"{count} step{'s' if count != 1 else ''} since the start recorded no token usage: the budget cannot count {'them' if count != 1 else 'it'}"

    def to_json(self) -> dict:
        return {
            "maxTokens": self.max_tokens,
            "maxCost": self.max_cost,
            "source": self.source,
            "used": self.used.to_json(),
            "exceeded": self.exceeded,
            "uncounted": self.unrecorded,
        }


def _number(value: float) -> str:
    return f"{value:g}"


def budget_limits(start_max_tokens: int | None, start_max_cost: float | None, workflow: Workflow) -> tuple[int | None, float | None, str] | None:
    """(maxTokens, maxCost, source): the StartNode's limits over the workflow's, each on its own."""
    max_tokens = start_max_tokens if start_max_tokens is not None else workflow.max_tokens
    max_cost = start_max_cost if start_max_cost is not None else workflow.max_cost
    if max_tokens is None and max_cost is None:
        return None
    sources = []
    if start_max_tokens is not None or start_max_cost is not None:
        sources.append("thread")
    if (start_max_tokens is None and workflow.max_tokens is not None) or (start_max_cost is None and workflow.max_cost is not None):
        sources.append("workflow")
    return max_tokens, max_cost, "+".join(sources)


def budget_status(repo: Repo, context: ThreadContext, workflow: Workflow, *, keep: bool = False) -> BudgetStatus | None:
    """The thread's budget and what it used since its current StartNode; None without a budget.
    `keep` stores the running total it computed (derived data), so the next check reads one step."""
    limits = budget_limits(context.start.max_tokens, context.start.max_cost, workflow)
    if limits is None:
        return None
    max_tokens, max_cost, source = limits
    used = spend_since_start(repo, context.head, keep=keep)
    return BudgetStatus(max_tokens, max_cost, source, used)


def spend_since_start(repo: Repo, head: str, *, keep: bool = False) -> Spend:
    """What the steps since the current StartNode behind `head` spent, priced now."""
    record = _running_total(repo.nodes, head, keep=keep)
    config = repo.config
    parts = tuple(priced(config, tuple(names), usage) for names, usage in record.parts)
    return spend_of(parts, steps=record.steps, reused=record.reused, unrecorded=record.unrecorded)


@record(frozen=True)
class _RunningTotal:
    steps: int
    reused: int
    unrecorded: int
    parts: tuple[tuple[tuple[str, ...], Usage], ...]  # (model names, usage), summed per names

    def after(self, detail: object) -> _RunningTotal:
        sums = {names: usage for names, usage in self.parts}
        for names, usage in detail_parts(detail):
            sums[names] = sums.get(names, Usage()) + usage
        reused = isinstance(detail, dict) and detail.get("protocol") == REUSE_PROTOCOL
        unrecorded = 0 if usage_recorded(detail) else 1
        return _RunningTotal(self.steps + 1, self.reused + (1 if reused else 0), self.unrecorded + unrecorded, tuple(sums.items()))

    def to_bytes(self) -> bytes:
        data = {
            "steps": self.steps,
            "reused": self.reused,
            "unrecorded": self.unrecorded,
            "parts": [[list(names), usage.to_json()] for names, usage in self.parts],
        }
        return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> _RunningTotal | None:
        try:
            data = json.loads(raw)
            parts = tuple((tuple(str(name) for name in names), Usage.from_json(usage)) for names, usage in data["parts"])
            return cls(int(data["steps"]), int(data["reused"]), int(data["unrecorded"]), parts)
        except (ValueError, KeyError, TypeError):
            return None


def _running_total(store: CasStore, head: str, *, keep: bool) -> _RunningTotal:
    """The running total behind `head`: from the nearest kept one (or the StartNode), forward."""
    pending: list[tuple[str, dict]] = []
    cursor: str | None = head
    base: _RunningTotal | None = None
    while cursor is not None:
        raw = store.nodes.derived(KEY + cursor)
        base = _RunningTotal.from_bytes(raw) if raw is not None else None
        if base is not None:
            break
        node = thread_node(store, cursor)
        if node.type not in STEP_TYPES:
            base = _RunningTotal(0, 0, 0, ())  # a StartNode: nothing spent since it
            break
        pending.append((cursor, node.payload))
        cursor = node.payload.get("prev") or node.payload["start"]
    if base is None:
        base = _RunningTotal(0, 0, 0, ())
    totals = []
    for hash_, payload in reversed(pending):
        base = base.after(_detail(store, payload["detail"]))
        totals.append((hash_, base))
    if keep and totals:
        store.cache_derived([(KEY + hash_, total.to_bytes()) for hash_, total in totals])
    return base
