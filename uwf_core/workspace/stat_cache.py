"""The stat cache, as git's index, one record per directory: the tree it became, the ignore rules
that were in force, and each entry's stat signature (size, mtime, ctime, inode) with the node its
bytes became (ctime too: a tool that puts an mtime back cannot put back the ctime). A directory
whose entries all match is its cached tree, neither read nor encoded again.

On disk, a directory per workspace: `root.json` (the tree the records were written with) and one
small JSON file per directory record, so a snapshot that changed one directory rewrites one
record, not the whole cache. `root.json` is cleared before records are written and set after, so
a cache cut short is never taken for the head's. Host-local (it names inodes) and only a cache: a
missing or damaged file means those files are read once more. JSON, never pickle. A file changed
within RACY_NS of a snapshot is not cached: it could change again within the same mtime tick and
look unchanged (git's "racily clean" entries).
"""

from __future__ import annotations

import json
import os

from ..encoding.ids import is_cas_ref, xxh64_hash
from ..store.files import atomic_write

VERSION = 5
RACY_NS = 2_000_000_000
ROOT_FILE = "root.json"


class DirRecord:
    """One directory as the last snapshot saw it. `entries`: name → (kind, size, mtime, ctime,
    inode, ref or link target); a subdirectory is ("dir", its tree) and has a record of its own,
    which is used for the parent only when it gives that same tree."""

    __slots__ = ("tree", "rules", "entries")

    def __init__(self, tree: str, rules: str, entries: dict) -> None:
        self.tree = tree
        self.rules = rules
        self.entries = entries


class StatCache:
    """Records by path in the workspace ("" the top, "a/b/" below), as os.fsdecode gives it;
    read from disk on first use."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self.root: str | None = None  # the tree the records on disk were written with
        self._records: dict[str, DirRecord | None] = {}
        self._changed: set[str] = set()

    @classmethod
    def load(cls, path: str) -> StatCache:
        cache = cls(path)
        try:
            with open(os.path.join(path, ROOT_FILE), "rb") as handle:
                data = json.loads(handle.read())
            if data.get("version") == VERSION and is_cas_ref(data.get("root")):
                cache.root = data["root"]
        except (OSError, ValueError, AttributeError):
            pass  # no cache, or not one this uwf wrote: what is read is checked, or read again
        return cache

    def get(self, rel: str) -> DirRecord | None:
        if rel not in self._records:
            self._records[rel] = self._read(rel) if self.path else None
        return self._records[rel]

    def _read(self, rel: str) -> DirRecord | None:
        try:
            with open(self._file(rel), "rb") as handle:
                saved_rel, tree, rules, entries = json.loads(handle.read())
            records = {name: tuple(entry) for name, entry in entries.items()}
        except (OSError, ValueError, TypeError, AttributeError):
            return None
        if saved_rel != rel or not is_cas_ref(tree) or not isinstance(rules, str):
            return None
        if not all(len(entry) == 6 and isinstance(entry[5], str) or entry[0] == "dir" and len(entry) == 2 for entry in records.values()):
            return None
        return DirRecord(tree, rules, records)

    def put(self, rel: str, record: DirRecord, changed: bool) -> None:
        self._records[rel] = record
        if changed:
            self._changed.add(rel)

    def save(self, root: str, visited: set[str]) -> None:
        """Write the changed records, then `root`; remove the records of directories it did not
        visit (gone, or ignored now)."""
        if self.path is None or (not self._changed and root == self.root):
            return
        try:
            os.makedirs(self.path, exist_ok=True)
            if self._changed:
                self._write_root(None)
            for rel in self._changed:
                record = self._records[rel]
                data = [rel, record.tree, record.rules, record.entries]
                atomic_write(self._file(rel), json.dumps(data, separators=(",", ":")).encode(), sync=False)
            self._write_root(root)
            self._prune(visited)  # a record of a directory this snapshot did not see is never trusted later
        except OSError:
            pass  # a cache that cannot be written costs a later snapshot time, nothing else

    def _write_root(self, root: str | None) -> None:
        data = json.dumps({"version": VERSION, "root": root}).encode()
        atomic_write(os.path.join(self.path, ROOT_FILE), data, sync=False)

    def _prune(self, visited: set[str]) -> None:
        names = os.listdir(self.path)
        live = {os.path.basename(self._file(rel)) for rel in visited} | {ROOT_FILE}
        for name in names:
            if name not in live:
                try:
                    os.unlink(os.path.join(self.path, name))
                except OSError:
                    pass

    def _file(self, rel: str) -> str:
        return os.path.join(self.path, xxh64_hash(os.fsencode(rel)) + ".json")


def cache_path(cache_dir: str, workspace: str) -> str:
    """Where a workspace's stat cache lives on this host: the root's cache directory, by its path."""
    return os.path.join(cache_dir, "snapshots", xxh64_hash(os.fsencode(os.path.realpath(workspace))))
