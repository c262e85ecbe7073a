"""Where each thread of a root came from, so a list can draw it under its parent: a candidate of
agents side by side (runs.jsonl's `candidateOf`, named by its agent), a child of a map step (the
map's results once it has ended, the ids its children get while it runs), or a fork (the rule of
thread/lineage.py: the oldest thread that has the newest node it shares).

A thread's lineage is read once: its parent is older (ULIDs sort by creation), and what an older
thread had when this one was made never changes. The reader keeps what it found and each chain's
nodes it walked, so a list read again after a step walks only that step.
"""

from __future__ import annotations

from ...encoding.records import record
from ...errors import UwfError
from ...thread.nodes import START_TYPES, start_of, thread_node
from ...thread.ops import ThreadInfo
from ...workflow.ops import workflow_of
from .map import _children_at

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ...repo import Repo
    from ...store.cas import Node

FORK, CANDIDATE, CHILD = "fork", "candidate", "child"


@record(frozen=True)
class Lineage:
    """Where a thread came from: its parent, and how (a fork, a candidate, a map's child)."""

    parent: str
    kind: str  # fork, candidate (agents side by side), child (of a map step)
    label: str | None = None  # a candidate's agent; a child's item number, from 1


class LineageReader:
    """Reads the lineage of a root's threads; keep one per root to read it again cheaply."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.found: dict[str, Lineage | None] = {}  # thread -> its lineage (None: started, not forked)
        self.walked: dict[str, tuple[str, set[str]]] = {}  # thread -> (the head walked from, its chain's nodes)
        self.map_checked: dict[str, str] = {}  # thread -> the head its map children were looked for at
        self.children: dict[str, Lineage] = {}  # child thread -> its map parent

    def read(self, infos: list[ThreadInfo]) -> dict[str, Lineage]:
        """The lineage of each thread of `infos` (all of a root's, archived ones included) that has one."""
        ordered = sorted((info for info in infos if info.head and not info.problem), key=lambda info: info.thread)
        for info in ordered:
            self._map_children(info)
        candidates = {run.thread: Lineage(run.candidateOf, CANDIDATE, run.agent) for run in self.repo.runs.read() if run.candidateOf}
        family: dict[str, list[ThreadInfo]] = {}  # a StartNode -> its threads, oldest first
        for info in ordered:
            try:
                family.setdefault(start_of(self.repo.nodes, info.head)[0], []).append(info)
            except UwfError:
                continue
        for members in family.values():
            for index, info in enumerate(members):
                if info.thread not in self.found:
                    try:
                        self.found[info.thread] = self._fork_of(info, members[:index])
                    except UwfError:
                        continue  # a chain that cannot be read (the damage banner says why): none drawn, asked again next time
        result: dict[str, Lineage] = {}
        for info in ordered:
            lineage = candidates.get(info.thread) or self.children.get(info.thread) or self.found.get(info.thread)
            if lineage is not None:
                result[info.thread] = lineage
        return result

    def _fork_of(self, info: ThreadInfo, older: list[ThreadInfo]) -> Lineage | None:
        """The oldest of the `older` threads of its StartNode that has the newest step this one
        shares; none when it shares no step, only the StartNode (started with the same workflow
        and prompt)."""
        if not older:
            return None
        sets = [(other.thread, self._nodes(other)) for other in older]
        for hash_, node in _walk(self.repo, info.head):
            having = [thread for thread, nodes in sets if hash_ in nodes]
            if having and node.type not in START_TYPES:
                return Lineage(having[0], FORK)
        return None

    def _nodes(self, info: ThreadInfo) -> set[str]:
        """Every node of a thread's chain, walked once and then only from its new head back."""
        head, nodes = self.walked.get(info.thread, (None, set()))
        if head != info.head:
            for hash_, _ in _walk(self.repo, info.head, stop=nodes):
                nodes.add(hash_)
            self.walked[info.thread] = (info.head, nodes)
        return nodes

    def _map_children(self, info: ThreadInfo) -> None:
        """The children of the map steps a thread took since it was last looked at (their
        results), and of the map it is at (the ids they get)."""
        before = self.map_checked.get(info.thread)
        if before == info.head:
            return
        self.map_checked[info.thread] = info.head
        try:
            roles = _map_roles(self.repo, info.head)
            if not roles:
                return
            for index, child in enumerate(_children_at(self.repo, info) if info.active else []):
                self.children.setdefault(child, Lineage(info.thread, CHILD, str(index + 1)))
            for _, node in _walk(self.repo, info.head, stop={before} if before else None):
                if node.type in START_TYPES or node.payload.get("role") not in roles:
                    continue
                results = self.repo.nodes.get(node.payload["output"]).payload.get("results")
                for result in results if isinstance(results, list) else []:
                    if isinstance(result, dict) and isinstance(result.get("thread"), str):
                        self.children[result["thread"]] = Lineage(info.thread, CHILD, str(int(result.get("index", 0)) + 1))
        except (UwfError, AttributeError, ValueError, TypeError):
            return  # a damaged chain or output: the damage banner says why; no lineage drawn


def _walk(repo: Repo, head: str, stop: set[str] | None = None) -> Iterator[tuple[str, Node]]:
    """(hash, node) of a chain from `head` back to its first StartNode, through those it resumes,
    until a node of `stop`."""
    store = repo.nodes
    cursor: str | None = head
    while cursor is not None and not (stop and cursor in stop):
        node = thread_node(store, cursor)
        yield cursor, node
        cursor = node.payload.get("resumes") if node.type in START_TYPES else node.payload.get("prev") or node.payload.get("start")


def _map_roles(repo: Repo, head: str) -> set[str]:
    workflow = workflow_of(repo, start_of(repo.nodes, head)[1].workflow)
    return {name for name, role in workflow.roles.items() if role.map is not None}
