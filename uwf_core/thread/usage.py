"""Token usage per step (from its detail node) and summed per thread."""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import UwfError
from ..llm.usage import Usage
from ..store.cas import CasStore
from .model import StepContext

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..repo import Repo


def step_usage(store: CasStore, step: StepContext) -> Usage:
    """The agent's usage plus the extract fallback's, as recorded in the detail node."""
    try:
        payload = store.payload(step.detail)
    except UwfError:
        return Usage()
    if not isinstance(payload, dict):
        return Usage()
    return Usage.from_json(payload.get("usage")) + Usage.from_json(payload.get("extractUsage"))


def thread_usage(store: CasStore, steps: Iterable[StepContext]) -> Usage:
    """The steps' usage summed: what the agents reported, so a step that recorded none adds nothing."""
    total = Usage()
    for step in steps:
        total = total + step_usage(store, step)
    return total


def thread_stats(repo: Repo, head: str) -> tuple[int, int, Usage]:
    """(steps, checks, usage) of the chain behind a head, for `uwf thread show`: the workflow's
    steps and uwf's checks counted apart (a step number means the same everywhere), the usage of
    both."""
    from .context import context_of
    from .model import is_check_role

    steps = context_of(repo, head, with_checks=True).steps
    checks = sum(1 for step in steps if is_check_role(step.role))
    return len(steps) - checks, checks, thread_usage(repo.nodes, steps)
