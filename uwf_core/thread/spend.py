"""What a step spent: tokens per model from its detail node, priced by config.yaml.

Tokens come from each step's detail node: the agent's `usage` under the model it names
(`model`, else `modelName`), and the extract fallback's `extractUsage` under `extractModel`.
Prices come from config.yaml's `prices` (per million prompt / completion tokens). A model
without a price is counted in tokens only: its cost is unknown, never guessed, and a total
that includes it has no cost (`Spend.cost` is None; `priced_cost` is the part that is known).
A step whose agent recorded no usage at all (a text agent such as `claude -p`, uwf-script)
spent an unknown amount: it is counted as `unrecorded`, and a total that includes one has no cost
either. A reused step, a person's answer and an edited output spent nothing, and say so.
"""

from __future__ import annotations

from ..encoding.records import field, record
from ..errors import UwfError
from ..llm.usage import Usage
from .model import StepContext

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any

    from ..config.model import Config
    from ..repo import Repo
    from ..store.cas import CasStore
    from ..store.records import RunRecord

UNKNOWN_MODEL = "(unknown model)"
REUSE_PROTOCOL = "reuse"  # a step whose output was reused (engine/reuse/replay.py): no agent ran
FREE_PROTOCOLS = frozenset({REUSE_PROTOCOL, "human", "edit"})  # no model ran: nothing was spent, by definition


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

    def to_json(self) -> dict[str, Any]:
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

    def to_json(self) -> dict[str, Any]:
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
        cost: float | None = price.cost(usage.prompt_tokens, usage.completion_tokens)
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

    def to_json(self) -> dict[str, Any]:
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


def step_detail(store: CasStore, hash_: str) -> object:
    try:
        return store.payload(hash_)
    except UwfError:
        return None


def step_cost(repo: Repo, step: StepContext, number: int = 0, run: RunRecord | None = None) -> StepCost:
    """What one step spent, priced with the root's config.yaml; its time from `run`, the attempt
    that wrote it (thread/timeline.runs_by_step), else from the StepNode."""
    detail = step_detail(repo.nodes, step.detail)
    config = repo.config
    parts = tuple(priced(config, names, usage) for names, usage in detail_parts(detail))
    reused_from = detail.get("reusedFrom") if isinstance(detail, dict) and detail.get("protocol") == REUSE_PROTOCOL else None
    spend = spend_of(parts, reused=1 if reused_from else 0, unrecorded=0 if usage_recorded(detail) else 1)
    started, completed = (run.startedAt, run.completedAt) if run is not None else (step.started_at, step.completed_at)
    return StepCost(step.hash, number, step.role, step.agent, parts, spend, reused_from, started, completed)


# -- a thread, and the threads forked from it ----------------------------------------------------


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


