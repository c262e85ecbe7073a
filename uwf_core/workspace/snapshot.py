"""A snapshot of a workspace: its files into the CAS as trees, as cheaply as git's index allows.

The stat index (stat_cache.py) remembers each file's size, mtimes and inode with the node its bytes
became, and each directory's signature of them all: a directory whose stats still give it is its
recorded tree, and a file whose stat still matches is not read again. Trees and files the previous snapshot
of this thread stored are known to be there (its head names them, so gc keeps them), and are not
even looked up. Everything a snapshot writes is one batch: it lands whole or not at all.
"""

from __future__ import annotations

import os

from ..encoding.records import field, record
from ..errors import UwfError
from ..store.cas import CasStore
from .ignore import Rules
from .stat_cache import StatCache
from .tree import ensure_schemas
from .walker import Limits as Limits  # re-exported: thread/files.py and others import it from here
from .walker import OverCap, Tracked, Walker, redacted, shown, size_text


class SnapshotError(UwfError):
    """A workspace that cannot be snapshot within its limits."""


@record
class Snapshot:
    tree: str
    files: int = 0
    bytes: int = 0
    read: int = 0  # files whose bytes were read (the rest came from the stat cache)
    notes: list[str] = field(default_factory=list)
    hidden_new: list[str] = field(default_factory=list)  # new paths made since `since_ns` that ignore rules left out


def take_snapshot(
    store: CasStore,
    workspace: str,
    *,
    limits: Limits = Limits(),
    cache_path: str | None = None,
    index: StatCache | None = None,
    save: bool = True,
    trusted: str | None = None,
    redactions: tuple[tuple[bytes, bytes], ...] = (),
    exclude: tuple[str, ...] = (),
    since_ns: int = 0,
) -> Snapshot:
    """Snapshot `workspace`. `trusted`: a tree the thread's head names (its nodes are there).
    `redactions`: (secret, replacement) pairs; a file holding a secret is stored with it
    replaced, as everything uwf stores is (config/env.Secrets), and a note says so. `exclude`:
    absolute paths left out as if ignored (a storage root kept inside its project). `since_ns`:
    list in `hidden_new` what ignore rules left out that was made since then (a step's own).
    `index`: the stat index already read (a step's snapshots share one), else read from
    `cache_path`; `save`: write it when it changed (the snapshot before a step leaves that to the
    one after)."""
    ensure_schemas(store)
    cache = index if index is not None else StatCache.load(cache_path) if cache_path else StatCache()
    walker = _walker(store, limits, cache, trusted, redactions, since_ns, workspace, exclude)
    root = os.path.abspath(workspace)
    try:
        # One transaction: an over-cap snapshot leaves nothing behind. No fsync of its own: no
        # head names these nodes until the StepNode's (or StartNode's) durable commit, whose fsync
        # of the log takes these with it.
        with store.nodes.batch(durable=False):
            try:
                tree = _walk(walker, root, limits, redactions, store, trusted)
            except OverCap:
                if not cache.records:
                    raise
                cache = StatCache(cache.path)  # counted from a damaged index, perhaps: a failure only if the files say so
                walker = _walker(store, limits, cache, trusted, redactions, since_ns, workspace, exclude)
                tree = _walk(walker, root, limits, redactions, store, trusted)
    except OSError as exc:
        raise SnapshotError(f"the workspace {workspace} cannot be read: {exc.strerror or exc}") from None
    except OverCap:
        largest = sorted(walker.sizes, key=lambda item: -item[0])[:3]
        named = ", ".join(f"{shown(rel + name)} ({size_text(size)})" for size, rel, name in largest)
        raise SnapshotError(
            f"the workspace {workspace} holds more than {size_text(limits.max_total_bytes)} (workspace.maxSnapshotBytes); "
            f"the largest files: {named}"
        ) from None
    cache.settle(tree, walker.visited, save=save)
    if index is not None and cache is not index:
        index.adopt(cache)  # the step's snapshot after this one goes on from the index made afresh
    notes = [_redacted_text(note, redactions) for note in walker.notes]  # a path's name may hold a key
    return Snapshot(tree, walker.count, walker.total, walker.read, notes, walker.hidden_new)


def _walk(walker: Walker, root: str, limits: Limits, redactions, store: CasStore, trusted: str | None) -> str:
    fd = walker.open_directory(root, None, "")
    try:
        return walker.directory(root, "", Rules(fingerprint=_settings_fingerprint(limits, redactions)), Tracked(store, trusted), fd=fd)
    finally:
        if fd is not None:
            os.close(fd)


def _walker(store: CasStore, limits: Limits, cache: StatCache, trusted: str | None, redactions, since_ns: int, workspace: str,
            exclude: tuple[str, ...]) -> Walker:
    walker = Walker(store, limits, cache, trust=trusted is not None and cache.root == trusted)
    walker.redactions = redactions
    walker.since_ns = since_ns
    real = os.path.realpath(workspace)
    walker.exclude = {os.path.relpath(path, real) + "/" for path in exclude if path.startswith(real.rstrip("/") + "/")}
    return walker


def _redacted_text(text: str, redactions: tuple[tuple[bytes, bytes], ...]) -> str:
    if not redactions:
        return text
    data = text.encode("utf-8", "surrogateescape")
    return os.fsdecode(redacted(data, redactions)) if any(secret in data for secret, _ in redactions) else text


def _settings_fingerprint(limits: Limits, redactions: tuple[tuple[bytes, bytes], ...]) -> str:
    """What else decides a file's node: a cache record made under other limits or other keys to
    redact is not used (a key added to .env is looked for in every file again)."""
    from ..encoding.ids import xxh64_hash

    return xxh64_hash(b"\0".join([str(limits.max_file_bytes).encode(), *(secret for secret, _ in redactions)]))
