"""The stat cache, as git's index, one record per directory: the tree it became, the ignore rules
that were in force, and each entry's stat signature (size, mtime, ctime, inode)
with the node its bytes became (ctime too: a tool that puts an mtime back cannot put back the
ctime). A directory whose entries all match is its cached tree, neither read nor encoded again.

Host-local (it names inodes) and only a cache: a missing or damaged file means the next snapshot
reads every file once. JSON, never pickle: it lives where another user's agent may have written.
A file changed within RACY_NS of a snapshot is not cached: it could change again within the same
mtime tick and look unchanged (git's "racily clean" entries).
"""

from __future__ import annotations

import json
import os

from ..encoding.ids import is_cas_ref
from ..store.files import atomic_write

VERSION = 3
RACY_NS = 2_000_000_000


class DirRecord:
    """One directory as the last snapshot saw it. `entries`: name → (kind, size, mtime, ctime,
    inode, ref or link target); a subdirectory is ("dir",) and has a record of its own."""

    __slots__ = ("tree", "rules", "entries")

    def __init__(self, tree: str, rules: str, entries: dict) -> None:
        self.tree = tree
        self.rules = rules
        self.entries = entries


class StatCache:
    def __init__(self) -> None:
        self.root: str | None = None  # the tree this cache was written with
        self.dirs: dict[str, DirRecord] = {}  # by path in the workspace ("" the top, "a/b/"), as os.fsdecode gives it
        self.changed = True  # nothing to save when a snapshot found everything as cached

    @classmethod
    def load(cls, path: str) -> StatCache:
        cache = cls()
        try:
            with open(path, "rb") as handle:
                data = json.loads(handle.read())
            if data.get("version") != VERSION:
                return cache
            cache.root = data["root"] if is_cas_ref(data.get("root")) else None
            for rel, (tree, rules, entries) in data["dirs"].items():
                if is_cas_ref(tree) and isinstance(rules, str):
                    records = {name: tuple(entry) for name, entry in entries.items()}
                    if not all(entry == ("dir",) or len(entry) == 6 and isinstance(entry[5], str) for entry in records.values()):
                        return cls()
                    cache.dirs[rel] = DirRecord(tree, rules, records)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return cls()  # no cache, or not one this uwf wrote: read everything once
        cache.changed = False
        return cache

    def save(self, path: str) -> None:
        dirs = {
            rel: [record.tree, record.rules, record.entries]
            for rel, record in self.dirs.items()
        }
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            atomic_write(path, json.dumps({"version": VERSION, "root": self.root, "dirs": dirs}, separators=(",", ":")).encode(), sync=False)
        except OSError:
            pass  # a cache that cannot be written costs the next snapshot time, nothing else



def cache_path(cache_dir: str, workspace: str) -> str:
    """Where a workspace's stat cache lives on this host: the root's cache directory, by its path."""
    from ..encoding.ids import xxh64_hash

    return os.path.join(cache_dir, "snapshots", xxh64_hash(os.fsencode(os.path.realpath(workspace))) + ".json")
