"""Who forked from whom, by content alone: forks share nodes (they are content-addressed), so a
node belongs to the oldest thread that has it (ULIDs sort by creation) and a fork owns the steps
after the newest node it shares. The ledger rolls spend up by this rule and the workbench's list
draws forks under their parents by it: one rule, so both tell the same story.

A thread that shares only a StartNode with an older one was started with the same workflow and
prompt, not forked: it has no parent.
"""

from __future__ import annotations

from ..encoding.records import field, record
from ..errors import UwfError
from .model import StepContext, ThreadContext

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Callable, Iterable, Iterator, TypeVar

    T = TypeVar("T")


class Stopped(UwfError):
    """A long read (a 100,000-step ledger is seconds) given up because its `stop` said so."""


def checked(items: Iterable[T], stop: Callable[[], bool] | None) -> Iterator[T]:
    """`items`, raising Stopped once `stop()` is true (asked every 256 items)."""
    for index, item in enumerate(items):
        if stop is not None and not index & 255 and stop():
            raise Stopped("stopped")
        yield item


@record
class Split:
    """A family's threads split by the rule: each one's own nodes, fork point and parent."""

    own: dict[str, set[str]] = field(default_factory=dict)  # thread -> the nodes no older thread has
    fork_at: dict[str, str | None] = field(default_factory=dict)  # thread -> the newest node it shares
    parent: dict[str, str | None] = field(default_factory=dict)


def split_family(chains: dict[str, list[str]], starts: set[str]) -> Split:
    """`chains`: thread -> its nodes oldest first (StartNodes included), the threads oldest first;
    `starts`: every StartNode among them."""
    split = Split()
    seen: dict[str, str] = {}  # node -> the oldest thread that has it
    for thread, chain in chains.items():
        own = {node for node in chain if node not in seen}
        shared_steps = [node for node in chain if node not in own and node not in starts]
        fork_point = shared_steps[-1] if shared_steps else None
        split.own[thread] = own
        split.fork_at[thread] = fork_point
        split.parent[thread] = seen.get(fork_point) if fork_point else None
        for node in chain:
            seen.setdefault(node, thread)
    return split


def chain_nodes(context: ThreadContext, stop: Callable[[], bool] | None = None, steps: Iterable[StepContext] | None = None) -> list[str]:
    """A chain's nodes, oldest first, its StartNodes included (the node a fork was made at can be
    one): of `steps` (default the context's, which must hold uwf's checks, `with_checks=True`: a
    fork can be made at one)."""
    nodes: list[str] = []
    current_start: str | None = None
    for step in checked(context.steps if steps is None else steps, stop):
        if step.start != current_start:
            current_start = step.start
            nodes.append(step.start)
        nodes.append(step.hash)
    if context.start_hash != current_start:
        nodes.append(context.start_hash)
    return nodes
