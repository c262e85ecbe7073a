"""`uwf cas fsck`: check every node, reference and index entry of a store, and that every
thread's head (active or archived) and every registered workflow version is whole."""

from __future__ import annotations

from ..encoding.records import field, record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import CorruptError, UwfError
from .builtin_schemas import META_HASH
from .cas import CasStore
from .records import SET_ASIDE, RepairReport

if TYPE_CHECKING:
    from typing import Any

    from ..repo import Repo
    from .base import Backend


@record(frozen=True)
class FsckProblem:
    target: str
    message: str
    severity: str = "error"

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "severity": self.severity, "message": self.message}


@record
class FsckReport:
    """What fsck found: only `errors` fail it; warnings (leftover files, unreadable log lines) are shown."""

    checked: int = 0
    problems: list[FsckProblem] = field(default_factory=list)
    readable: bool = True  # False: the node file could not be read at all (its problem says so)

    @property
    def errors(self) -> list[FsckProblem]:
        return [p for p in self.problems if p.severity == "error"]

    def to_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "ok": not self.errors, "problems": [p.to_dict() for p in self.problems]}


def fsck(store: CasStore, backend: Backend | None = None, workspaces: str | None = None) -> FsckReport:
    """With `backend`, the threads and the registry are checked too: a head whose chain lost a node
    names its thread."""
    report = FsckReport()
    nodes = store.nodes
    for name, is_temp, _ in nodes.strays():
        report.problems.append(FsckProblem(name, _stray_message(name, is_temp), "warning"))
    if backend is not None:
        report.problems.extend(_check_state_lines(backend))
        report.problems.extend(_leftovers(backend, workspaces))
    damage = nodes.damage()
    if damage:
        report.problems.append(FsckProblem(*damage))
    types: dict[str, list[str]] = {}
    try:
        for hash_ in nodes.hashes():
            report.checked += 1
            problem = _check_node(store, hash_, types)
            if problem:
                report.problems.append(FsckProblem(hash_, problem))
        report.problems.extend(_check_index(store, types))
    except UwfError as exc:
        if not damage and not isinstance(exc, CorruptError):
            raise  # not damage of the store (a database that went away): one line, as any command
        if not damage:  # damage the header and the quick check did not see, met while reading
            report.problems.append(FsckProblem("node store", f"{exc.message} (run `uwf cas fsck --repair`)"))
        report.readable = False  # nothing more can be checked: the one problem names --repair
        return report
    if backend is not None:
        report.problems.extend(_check_roots(store, backend))
        for name, _ in backend.temp_files():
            report.problems.append(FsckProblem(name, "leftover temp file of an interrupted state-file rewrite (gc removes it)", "warning"))
    return report


def _check_state_lines(backend: Backend) -> list[FsckProblem]:
    """Lines of the state files that cannot be read: a hidden thread is an error, a lost attempt
    record or queue entry a warning."""
    problems = [FsckProblem(entry.where, entry.detail, "error" if entry.hides else "warning") for entry in backend.threads.damaged()]
    for entry in [*backend.runs.damaged(), *backend.queue.damaged()]:
        problems.append(FsckProblem(entry.where, entry.detail, "warning"))
    return problems


def _leftovers(backend: Backend, workspaces: str | None) -> list[FsckProblem]:
    """Leftovers older than gc's default grace (a younger one may be a command at work), and the
    files a repair set aside."""
    import time

    from .gc import DEFAULT_GRACE_SECONDS
    from .leftovers import leftovers

    try:
        found = leftovers(backend, workspaces, time.time() - DEFAULT_GRACE_SECONDS)
    except UwfError:
        found = []  # a damaged thread index: its own problem is listed
    problems = [FsckProblem(item.path, f"{item.what} (gc removes it)", "warning") for item in found]
    aside = "lines set aside from a state file (gc keeps the nodes they name; delete it once nothing more is wanted from it)"
    return problems + [FsckProblem(name, aside, "warning") for name in backend.set_aside()]


def _stray_message(name: str, is_temp: bool) -> str:
    if is_temp:
        return "leftover temp file from an interrupted write (gc removes it)"
    if SET_ASIDE in name:
        return "the damaged node file `uwf cas fsck --repair` set aside (delete it once nothing more is wanted from it)"
    return "not a node file"


def fsck_root(repo: Repo) -> FsckReport:
    """`uwf cas fsck` of an opened root: its nodes, index, threads and registry."""
    return fsck(repo.nodes, repo.backend)


def _labelled_roots(backend: Backend, sources: bool = False) -> list[tuple[str, str]]:
    """(what, hash) for each thread's head, active or archived, and each registry version (and
    with `sources`, each version's source, which gc keeps too)."""
    roots = [(f"thread {thread}", head) for thread, head in backend.threads.heads().items()]
    roots += [(f"archived thread {record.thread} ({record.reason})", record.head) for record in backend.threads.history()]
    for entry in backend.registry.entries().values():
        for version in entry.versions():
            roots.append((f"workflow '{entry.name}' version {version.hash}", version.hash))
            if sources and version.source:
                roots.append((f"workflow '{entry.name}' version {version.hash}", version.source))
    if sources:  # a damaged line names what its hidden thread may need
        for damaged in backend.threads.damaged():
            roots += [(f"the damaged line {damaged.where}", hash_) for hash_ in _hashes_in(damaged.text)]
    return roots


def _hashes_in(text: str) -> list[str]:
    """The hash-shaped words of a line (a damaged one: what its thread may need)."""
    from ..encoding.ids import is_hash

    words = "".join(char if char.isalnum() else " " for char in text).split()
    return [word.upper() for word in words if is_hash(word.upper())]


def _check_roots(store: CasStore, backend: Backend) -> list[FsckProblem]:
    """Every node a thread or a registered workflow needs is there: walked from each head (through
    prev, start, resumes, outputs and details) and each registry version."""
    problems = []
    for what, head in _labelled_roots(backend):
        broken, problem = _first_broken(store, head)
        if broken == head:
            problems.append(FsckProblem(what, f"its head {head} {problem}"))
        elif broken:
            problems.append(FsckProblem(what, f"node {broken}, reachable from {head}, {problem}"))
    return problems


def _first_broken(store: CasStore, head: str) -> tuple[str | None, str]:
    """The first node reachable from `head` that is gone or corrupt (so the thread needing it is
    named, not only the node), with what is wrong; (None, "") when all are whole."""
    seen = {head}
    pending = [head]
    while pending:
        current = pending.pop()
        if not store.has(current):
            return current, "is not in the store"
        try:
            refs = store.refs(current)
        except UwfError as exc:
            return current, f"is corrupt ({exc.message}); fork the thread from an earlier step, or restore the root"
        for ref in refs:
            if ref not in seen:
                seen.add(ref)
                pending.append(ref)
    return None, ""


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


# -- `uwf cas fsck --repair` -------------------------------------------------------------------


def repair_root(repo: Repo) -> RepairReport:
    """`uwf cas fsck --repair`: the state files' unreadable lines set aside; the backend rebuilds
    its damaged node file from what can still be read (a healthy one is left as it is); then what
    is gone that something needs, by thread."""
    state = repo.backend.repair_state()  # first: gc and the step's reads need whole state files
    report = repo.backend.repair_nodes()
    report.state_set_aside = state
    if report.damaged:
        report.lost = lost_nodes(CasStore(repo.backend.nodes), repo.backend)
    return report


def lost_nodes(store: CasStore, backend: Backend) -> dict[str, list[str]]:
    """Every node that a thread, a workflow or a stored node needs and the store lacks, with what
    needs it: the threads and workflows that reach it, else the nodes that refer to it."""
    roots = _labelled_roots(backend, sources=True)
    parents: dict[str, list[str]] = {}
    missing: list[str] = []
    seen: set[str] = set()
    pending = [*store.all_hashes(), *(head for _, head in roots)]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        if not store.has(current):
            missing.append(current)
            continue
        children = []
        try:
            children.append(store.get(current).type)
            children += store.refs(current)  # refs need the type's schema: that one is missing first
        except UwfError:
            pass  # a corrupt node, or one whose schema is gone: fsck names it
        for child in children:
            if child != current:
                parents.setdefault(child, []).append(current)
                pending.append(child)
    labels: dict[str, list[str]] = {}
    for what, head in roots:
        labels.setdefault(head, []).append(what)
    return {hash_: _needed_by(hash_, parents, labels) for hash_ in sorted(missing)}


def _needed_by(hash_: str, parents: dict[str, list[str]], labels: dict[str, list[str]]) -> list[str]:
    """The roots that reach `hash_` (walking references backwards); the nodes that refer to it when
    no root does (a chain whose later steps were lost with it)."""
    found: list[str] = []
    seen = {hash_}
    pending = [hash_]
    while pending:
        current = pending.pop()
        found.extend(labels.get(current, ()))
        for parent in parents.get(current, ()):
            if parent not in seen:
                seen.add(parent)
                pending.append(parent)
    return sorted(set(found)) or [f"node {parent}" for parent in sorted(set(parents.get(hash_, ())))]
