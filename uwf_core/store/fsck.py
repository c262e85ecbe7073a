"""`uwf cas fsck`: check every node, reference and index entry of a store, and that every
thread's head (active or archived) and every registered workflow version is whole."""

from __future__ import annotations

from ..encoding.records import field, record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import UwfError
from .builtin_schemas import META_HASH
from .cas import CasStore

if TYPE_CHECKING:
    from .base import Backend


@record(frozen=True)
class FsckProblem:
    target: str
    message: str
    severity: str = "error"

    def to_dict(self) -> dict:
        return {"target": self.target, "severity": self.severity, "message": self.message}


@record
class FsckReport:
    checked: int = 0
    problems: list[FsckProblem] = field(default_factory=list)

    @property
    def errors(self) -> list[FsckProblem]:
        return [p for p in self.problems if p.severity == "error"]

    def to_dict(self) -> dict:
        return {"checked": self.checked, "ok": not self.errors, "problems": [p.to_dict() for p in self.problems]}


def fsck(store: CasStore, backend: Backend | None = None) -> FsckReport:
    """With `backend`, the threads and the registry are checked too: a head whose chain lost a node
    names its thread."""
    report = FsckReport()
    nodes = store.nodes
    for name, is_temp, _ in nodes.strays():
        message = "leftover temp file from an interrupted write (gc removes it)" if is_temp else "not a node file"
        report.problems.append(FsckProblem(name, message, "warning"))
    types: dict[str, list[str]] = {}
    for hash_ in nodes.hashes():
        report.checked += 1
        problem = _check_node(store, hash_, types)
        if problem:
            report.problems.append(FsckProblem(hash_, problem))
    report.problems.extend(_check_index(store, types))
    if backend is not None:
        report.problems.extend(_check_roots(store, backend))
        for name, _ in backend.temp_files():
            report.problems.append(FsckProblem(name, "leftover temp file of an interrupted state-file rewrite (gc removes it)", "warning"))
    return report


def fsck_root(repo) -> FsckReport:
    """`uwf cas fsck` of an opened root: its nodes, index, threads and registry."""
    return fsck(repo.nodes, repo.backend)


def _check_roots(store: CasStore, backend: Backend) -> list[FsckProblem]:
    """Every node a thread or a registered workflow needs is there: walked from each head (through
    prev, start, resumes, outputs and details) and each registry version."""
    problems = []
    roots = [(f"thread {thread}", head) for thread, head in backend.threads.heads().items()]
    roots += [(f"archived thread {record.thread} ({record.reason})", record.head) for record in backend.threads.history()]
    for entry in backend.registry.entries().values():
        roots += [(f"workflow '{entry.name}' version {version.hash}", version.hash) for version in entry.versions()]
    for what, head in roots:
        missing = _first_missing(store, head)
        if missing == head:
            problems.append(FsckProblem(what, f"its head {head} is not in the store"))
        elif missing:
            problems.append(FsckProblem(what, f"node {missing}, reachable from {head}, is not in the store"))
    return problems


def _first_missing(store: CasStore, head: str) -> str | None:
    """The first node reachable from `head` that is gone, or None when all are there."""
    seen = {head}
    pending = [head]
    while pending:
        current = pending.pop()
        if not store.has(current):
            return current
        try:
            refs = store.refs(current)
        except UwfError:
            continue  # a corrupt node is reported by the node check
        for ref in refs:
            if ref not in seen:
                seen.add(ref)
                pending.append(ref)
    return None


def _check_node(store: CasStore, hash_: str, types: dict[str, list[str]]) -> str | None:
    from .schemas import check_schema, validation_errors

    try:
        node = store.get(hash_)
    except UwfError as exc:
        return exc.message
    types.setdefault(node.type, []).append(hash_)
    if node.type == hash_:
        return None
    if not store.has(node.type):
        return f"its type {node.type} is not in the store"
    try:
        schema = store.schema(node.type)
        if node.type == META_HASH:
            check_schema(node.payload)
        else:
            errors = validation_errors(schema, node.payload, cache_key=node.type)
            if errors:
                return f"payload does not match its schema {node.type}: {errors[0]}"
        for ref in store.refs(hash_):
            if not store.has(ref):
                return f"refers to {ref}, which is not in the store"
    except UwfError as exc:
        return exc.message
    return None


def _check_index(store: CasStore, types: dict[str, list[str]]) -> list[FsckProblem]:
    problems = []
    for type_hash, members in sorted(types.items()):
        indexed = set(store.nodes.of_type(type_hash))
        missing = [h for h in members if h not in indexed]
        if missing:
            problems.append(
                FsckProblem(f"_index/{type_hash}", f"{len(missing)} node(s) of this type are not indexed; run `uwf cas reindex`", "warning")
            )
    return problems
