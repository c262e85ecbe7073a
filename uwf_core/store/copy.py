"""`uwf root copy SRC DST`: a whole root to another place or backend, every hash kept.

Nodes are read and verified at the source and written as the same bytes under the same hashes;
heads, the archive, the runs log, the registry (versions and times) and config.yaml's text follow.
Safe to run again: what the destination already holds is skipped, and what it holds differently
(another head for a thread, another version history for a workflow) is refused by name rather
than overwritten. The destination is checked with fsck at the end. Secrets are never copied:
each host keeps its own .env.
"""

from __future__ import annotations

import sys

from ..encoding.records import record
from ..errors import UwfError

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any

    from rich.progress import Progress, TaskID

    from .base import Backend

BATCH = 500  # nodes per transaction


@record(frozen=True)
class CopyReport:
    nodes: int  # copied now
    nodes_there: int  # already at the destination
    threads: int
    archived: int
    runs: int
    workflows: int
    config: str  # "copied", "same", "kept" (the destination had its own) or "none"
    checked: int  # nodes fsck checked at the destination
    problems: list[dict[str, Any]]  # fsck's, as FsckProblem.to_dict gives them

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes, "nodesThere": self.nodes_there, "threads": self.threads, "archived": self.archived, "runs": self.runs,
            "workflows": self.workflows, "config": self.config, "fsck": {"checked": self.checked, "ok": not self.problems, "problems": self.problems},
        }


def copy_root(source: str, destination: str, *, progress: bool = False) -> CopyReport:
    """A whole root to another place or backend; what differs is refused, never overwritten, so
    it is safe to run again."""
    import os

    from .fs.backend import FsBackend
    from .open import open_backend

    source_backend = open_backend(source)
    if isinstance(source_backend, FsBackend) and not os.path.isdir(source_backend.location):
        raise UwfError(f"there is no root at {source}: nothing to copy")  # a typo copies nothing, said
    src, dst = _Root(source_backend), _Root(open_backend(destination))
    if src.backend.location == dst.backend.location:
        raise UwfError("the source and the destination are the same root")
    hiding = [entry for entry in src.backend.threads.damaged() if entry.hides]
    if hiding:  # the copy would leave that thread behind, silently: the source may then be deleted
        more = f" (and {len(hiding) - 1} more)" if len(hiding) > 1 else ""
        raise UwfError(f"the source's thread index has a line that cannot be read: {hiding[0].where}: {hiding[0].problem}{more}; fix or delete it, nothing was copied")
    show = _Progress(progress)
    with dst.backend.publishing():  # the destination's gc sweeps no node copied before its thread or name
        copied, there = _copy_nodes(src, dst, show)
        workflows = _copy_registry(src, dst)
        threads, archived = _copy_threads(src, dst)
        runs = _copy_runs(src, dst)
        config = _copy_config(src, dst)
    show.done()
    from .fsck import fsck

    report = fsck(dst.nodes, dst.backend)
    problems = [problem.to_dict() for problem in report.errors]
    if problems:
        raise UwfError(f"copied, but fsck of the destination found {len(problems)} problem(s): {problems[0]['target']}: {problems[0]['message']}")
    return CopyReport(copied, there, threads, archived, runs, workflows, config, report.checked, problems)


def _copy_nodes(src: _Root, dst: _Root, show: _Progress) -> tuple[int, int]:
    wanted = src.backend.nodes.hashes()
    present = set(dst.backend.nodes.hashes())
    todo = [hash_ for hash_ in wanted if hash_ not in present]
    show.start("nodes", len(todo))
    for start in range(0, len(todo), BATCH):
        with dst.backend.nodes.batch():
            for hash_ in todo[start : start + BATCH]:
                node = src.nodes.get(hash_)  # verified: a corrupt node stops the copy, naming it
                data = src.backend.nodes.read(hash_)
                assert data is not None  # get() has just read it
                dst.backend.nodes.write(hash_, node.type, data)
        show.advance(min(BATCH, len(todo) - start))
    return len(todo), len(wanted) - len(todo)


def _copy_registry(src: _Root, dst: _Root) -> int:
    theirs = dst.registry.entries()
    copied = 0
    for name, entry in src.registry.entries().items():
        if name in theirs:
            if [v.hash for v in theirs[name].versions()] != [v.hash for v in entry.versions()]:
                raise UwfError(f"the destination already has workflow '{name}' with other versions; nothing of it was changed")
            continue  # the same versions (registered at other times): nothing to copy
        dst.registry.restore(entry)
        copied += 1
    return copied


def _copy_threads(src: _Root, dst: _Root) -> tuple[int, int]:
    own = dst.threads.workspaces()
    for thread, path in src.threads.workspaces().items():  # before the heads: a fork is never listed without its directory
        if own.get(thread) != path:
            dst.threads.set_workspace(thread, path)
    heads = dst.threads.heads()
    archived_there = {(r.thread, r.head, r.reason, r.completed_at) for r in dst.threads.history()}
    threads = 0
    for thread, head in src.threads.heads().items():
        if thread in heads:
            if heads[thread] != head:
                raise UwfError(f"the destination already has thread {thread} at another head ({heads[thread]}, here {head})")
            continue
        dst.threads.add(thread, head)
        threads += 1
    archived = 0
    for item in src.threads.history():
        if (item.thread, item.head, item.reason, item.completed_at) not in archived_there:
            dst.threads.restore_archived(item)
            archived += 1
    return threads, archived


def _copy_runs(src: _Root, dst: _Root) -> int:
    there = {record.to_json() for record in dst.runs.read()}
    copied = 0
    for item in src.runs.read():
        if item.to_json() not in there:
            dst.runs.append(item)
            copied += 1
    return copied


def _copy_config(src: _Root, dst: _Root) -> str:
    text, theirs = src.backend.config.read(), dst.backend.config.read()
    if text is None:
        return "none"
    if theirs == text:
        return "same"
    if theirs:
        return "kept"
    dst.backend.config.write(text)
    return "copied"


class _Root:
    """A backend and the CAS over it (what a copy needs of an opened root)."""

    def __init__(self, backend: Backend) -> None:
        from .cas import CasStore

        self.backend = backend
        self.nodes = CasStore(backend.nodes)
        self.threads, self.registry, self.runs = backend.threads, backend.registry, backend.runs


class _Progress:
    """A progress line on stderr while nodes are copied (only on a terminal)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.bar: Progress | None = None
        self.task: TaskID  # set with bar

    def start(self, what: str, total: int) -> None:
        if not self.enabled or not total:
            return
        from rich.progress import Progress

        self.bar = Progress(transient=True)
        self.bar.start()
        self.task = self.bar.add_task(f"copying {total:,} {what}", total=total)

    def advance(self, count: int) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, count)

    def done(self) -> None:
        if self.bar is not None:
            self.bar.stop()
