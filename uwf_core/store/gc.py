"""`uwf cas gc`: mark and sweep, with a grace period like git's prune.

Roots: threads.yaml heads, history.jsonl heads, every registry version (and
its source), the meta-schema and the built-in schemas, and the nodes that lines
set aside by a repair name. A damaged line of
threads.yaml or history.jsonl may hide a head (a hand edit that cut one
character of it): gc deletes nothing until it is fixed. Marking follows
references and each node's type. Nodes younger than the grace period are
never deleted: an agent writes its nodes before the step moves the head,
and re-putting an existing node renews its age.
"""

from __future__ import annotations

import time
from collections import deque

from ..encoding.records import field, record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import UwfError
from .builtin_schemas import BUILTIN_HASHES, META_HASH
from .cas import CasStore

if TYPE_CHECKING:
    from .base import Backend

DEFAULT_GRACE_SECONDS = 3600
SWEEP_WAIT_SECONDS = 60.0  # writers hold the sweep off this long at most (each holds it for its command)
TEMP_FILE_GRACE_SECONDS = 60  # a state file's rewrite takes milliseconds: older temp files are leftovers


@record
class GcReport:
    dry_run: bool
    reachable: int = 0
    deleted: list[str] = field(default_factory=list)
    young: list[str] = field(default_factory=list)
    temp_files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    packed: int = 0  # loose node files of an older root moved into the node file
    leftovers: list[dict] = field(default_factory=list)  # what interrupted commands left (store/leftovers.py)

    def to_dict(self) -> dict:
        return {
            "dryRun": self.dry_run,
            "packed": self.packed,
            "reachable": self.reachable,
            "deleted" if not self.dry_run else "wouldDelete": self.deleted,
            "keptYoung": self.young,
            "tempFiles": self.temp_files,
            "missing": self.missing,
            "leftovers" if not self.dry_run else "wouldRemove": self.leftovers,
        }


def gc_roots(backend: Backend) -> list[str]:
    roots = [META_HASH, *BUILTIN_HASHES.values()]
    for entry in backend.registry.entries().values():
        for version in entry.versions():
            roots.append(version.hash)
            if version.source:
                roots.append(version.source)
    roots.extend(backend.threads.heads().values())
    roots.extend(record.head for record in backend.threads.history())
    roots.extend(backend.kept_aside())
    return list(dict.fromkeys(roots))


def mark(store: CasStore, roots: list[str], marked: set[str] | None = None) -> tuple[set[str], list[str]]:
    """Everything reachable from `roots` through references and types (added to `marked` when
    given); and what was missing."""
    marked = set() if marked is None else marked
    missing: list[str] = []
    queue = deque(roots)
    while queue:
        hash_ = queue.popleft()
        if hash_ in marked:
            continue
        if not store.has(hash_):
            missing.append(hash_)
            continue
        marked.add(hash_)
        try:
            node = store.get(hash_)
            queue.append(node.type)
            queue.extend(store.refs(hash_))
        except UwfError:
            continue  # a corrupt node is kept for fsck to report, never swept as garbage
    return marked, missing


def gc(
    store: CasStore, backend: Backend, *, grace_seconds: float = DEFAULT_GRACE_SECONDS, dry_run: bool = False, workspaces: str | None = None
) -> GcReport:
    """Mark from every root, then sweep with the heads held still.

    Whatever the grace, a node written since the oldest running step began is kept: that
    step may be about to make it a head; and the sweep waits for every other writer (a start, a
    put, an import, a fork, a copy) to publish what it wrote, and holds new ones off. The sweep runs under the thread index's lock, after
    marking again from the heads as they are then, so no head can move onto a node while
    it is being deleted. What interrupted commands left (a failed fork's workspace under
    `workspaces`, scratch directories, idle lock files) goes too.
    """
    hiding = [entry for entry in backend.threads.damaged() if entry.hides]
    if hiding:  # a dry run too: it would list the hidden thread's nodes as garbage
        more = f" (and {len(hiding) - 1} more damaged line{'s' if len(hiding) > 2 else ''})" if len(hiding) > 1 else ""
        raise UwfError(
            f"gc deletes nothing while a line of the thread index cannot be read: {hiding[0].where}: {hiding[0].problem}{more}; "
            "it may hide a thread whose nodes would be deleted: fix the line, or set it aside with `uwf cas fsck --repair`"
        )
    report = GcReport(dry_run=dry_run)
    nodes = backend.nodes
    if not dry_run:
        with nodes.index_lock():
            report.packed = nodes.pack()
    marked, report.missing = mark(store, gc_roots(backend))
    if report.missing and not dry_run:
        # A head that lost a node leaves the rest of its chain unreachable: sweeping now would
        # delete what a repair (re-pointing the head, a fork) still needs.
        raise UwfError(
            f"gc deletes nothing while the root is damaged: {len(report.missing)} node{'s' if len(report.missing) > 1 else ''} "
            f"that threads or workflows need {'are' if len(report.missing) > 1 else 'is'} missing ({', '.join(report.missing[:3])}"
            f"{', ...' if len(report.missing) > 3 else ''}); `uwf cas fsck` names the threads, `--dry-run` shows what gc would delete"
        )
    from contextlib import ExitStack

    # A dry run writes nothing and holds nothing still: it works on a read-only root too.
    with ExitStack() as held:
        if not dry_run:
            held.enter_context(backend.sweeping(SWEEP_WAIT_SECONDS))  # no writer between its first node and its publish
            held.enter_context(backend.threads.exclusive())
        marked, _ = mark(store, gc_roots(backend), marked)  # heads that moved while we marked
        cutoff = min(time.time() - grace_seconds, _oldest_running_step(backend))
        touched = nodes.touched_all()
        hashes = sorted(touched)
        # A young node is a root too: what it references (an old output reused by a step
        # in progress, its schema) must outlive it, as git's prune keeps what recent objects reach.
        young = {hash_ for hash_, when in touched.items() if not _older(when, cutoff)}
        protected, _ = mark(store, [hash_ for hash_ in young if hash_ not in marked])
        report.reachable = len(marked)
        for name, is_temp, mtime in nodes.strays():
            if is_temp and mtime < cutoff:
                report.temp_files.append(name)
                if not dry_run:
                    nodes.delete_stray(name)
        from .leftovers import leftovers, remove

        for leftover in leftovers(backend, workspaces, cutoff):
            if dry_run or remove(backend, leftover):
                report.leftovers.append(leftover.to_dict())
        for name, mtime in backend.temp_files():
            if mtime < time.time() - max(grace_seconds, TEMP_FILE_GRACE_SECONDS):  # a rewrite in progress is seconds old
                report.temp_files.append(name)
                if not dry_run:
                    backend.delete_temp_file(name)
        with ExitStack() if dry_run else nodes.batch():  # one commit for the whole sweep
            for hash_ in hashes:
                if hash_ in marked:
                    continue
                if hash_ in young or hash_ in protected or not _older(nodes.touched_at(hash_), cutoff):
                    report.young.append(hash_)  # young, reached from a young node, or renewed during this gc
                    continue
                report.deleted.append(hash_)
                if not dry_run:
                    nodes.delete(hash_)
                    store.forget(hash_)
    if report.deleted and not dry_run:
        store.reindex()
    return report


def _oldest_running_step(backend: Backend) -> float:
    """When the oldest step in progress began (seconds), or +inf when none runs."""
    starts = []
    for thread in backend.threads.heads():
        running = backend.locks.running(thread)
        if running is not None:
            starts.append((running.started_at or 0) / 1000 - 1)  # a second of slack for clock granularity
    return min(starts, default=float("inf"))


def _older(touched: float | None, cutoff: float) -> bool:
    """False for a node that is gone (nothing to delete) or was touched after the cutoff."""
    return touched is not None and touched < cutoff
