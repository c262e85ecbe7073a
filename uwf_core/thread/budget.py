"""A thread's budget (`maxTokens`, `maxCost`: the StartNode's own, else the workflow's), checked
against the steps since the thread's current StartNode, as maxSteps is: a fork carries the history
it shares, a resume starts afresh. The running total behind a head is kept as derived data
(`spend2:<head>`, tokens per model; prices are applied when read), so a check reads one step.
"""

from __future__ import annotations

import json

from ..encoding.records import record
from ..llm.usage import Usage
from .model import ThreadContext
from .nodes import STEP_TYPES, thread_node
from .spend import REUSE_PROTOCOL, Spend, detail_parts, priced, spend_of, step_detail, usage_recorded

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any

    from ..repo import Repo
    from ..store.cas import CasStore
    from ..workflow.model import Workflow

KEY = "spend2:"  # the running total behind a head, in derived data


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

    def to_json(self) -> dict[str, Any]:
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
    pending: list[tuple[str, dict[str, Any]]] = []
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
        base = base.after(step_detail(store, payload["detail"]))
        totals.append((hash_, base))
    if keep and totals:
        store.cache_derived([(KEY + hash_, total.to_bytes()) for hash_, total in totals])
    return base
