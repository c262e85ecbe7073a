"""`uwf cas gc`: mark and sweep, with a grace period like git's prune.

Roots: threads.yaml heads, history.jsonl heads, every registry version (and
its source), the meta-schema and the built-in schemas. Marking follows
references and each node's type. Nodes younger than the grace period are
never deleted: an agent writes its nodes before the step moves the head,
and re-putting an existing node renews its age.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass, field

from ..encoding.ids import HASH_LEN, is_hash
from ..errors import UwfError
from .builtin_schemas import BUILTIN_HASHES, META_HASH
from .cas import NODE_SUFFIX, CasStore
from .fs import registry
from .fs.threads import load_threads, read_history

DEFAULT_GRACE_SECONDS = 3600


@dataclass
class GcReport:
    dry_run: bool
    reachable: int = 0
    deleted: list[str] = field(default_factory=list)
    young: list[str] = field(default_factory=list)
    temp_files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "dryRun": self.dry_run,
            "reachable": self.reachable,
            "deleted" if not self.dry_run else "wouldDelete": self.deleted,
            "keptYoung": self.young,
            "tempFiles": self.temp_files,
            "missing": self.missing,
        }


def gc_roots(store: CasStore) -> list[str]:
    root = store.root
    roots = [META_HASH, *BUILTIN_HASHES.values()]
    for entry in registry.load_registry(root).values():
        for version in (entry.current, *entry.history):
            roots.append(version.hash)
            if version.source:
                roots.append(version.source)
    roots.extend(load_threads(root).values())
    roots.extend(record.get("head") for record in read_history(root) if is_hash(record.get("head")))
    return list(dict.fromkeys(roots))


def mark(store: CasStore, roots: list[str]) -> tuple[set[str], list[str]]:
    """Everything reachable from `roots` through references and types; and what was missing."""
    marked: set[str] = set()
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


def gc(store: CasStore, *, grace_seconds: float = DEFAULT_GRACE_SECONDS, dry_run: bool = False) -> GcReport:
    report = GcReport(dry_run=dry_run)
    cutoff = time.time() - grace_seconds
    try:
        names = sorted(os.listdir(store.root.cas_dir))
    except FileNotFoundError:
        return report
    # A young node is a root too: what it references (an old output reused by a step
    # in progress, its schema) must outlive it, as git's prune keeps what recent objects reach.
    young_nodes = [
        name[:HASH_LEN]
        for name in names
        if name.endswith(NODE_SUFFIX) and is_hash(name[:HASH_LEN]) and not _older(os.path.join(store.root.cas_dir, name), cutoff)
    ]
    marked, report.missing = mark(store, gc_roots(store))
    report.reachable = len(marked)
    young = set(young_nodes)
    protected, _ = mark(store, [hash_ for hash_ in young_nodes if hash_ not in marked])
    for name in names:
        path = os.path.join(store.root.cas_dir, name)
        if name.endswith(".tmp"):
            if _older(path, cutoff):
                report.temp_files.append(name)
                if not dry_run:
                    _unlink(path)
            continue
        hash_ = name[:HASH_LEN]
        if not (name.endswith(NODE_SUFFIX) and is_hash(hash_)) or hash_ in marked:
            continue
        if hash_ in young or hash_ in protected:
            report.young.append(hash_)  # young, or reached from a young node
            continue
        if not _older(path, cutoff):  # re-put during this gc: renewed, so kept
            report.young.append(hash_)
            continue
        report.deleted.append(hash_)
        if not dry_run:
            _unlink(path)
    if report.deleted and not dry_run:
        store.reindex()
    return report


def _older(path: str, cutoff: float) -> bool:
    try:
        return os.stat(path).st_mtime < cutoff
    except FileNotFoundError:
        return False


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
