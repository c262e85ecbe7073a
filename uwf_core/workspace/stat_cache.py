"""The stat index, as git's index: one file per workspace, read once per step and written once.

One record per directory: the tree it became, the ignore rules in force, a signature of every
entry's stat (kind, size, mtime, ctime, inode: ctime too, since a tool that puts an mtime back
cannot put back the ctime), and each file's stat with the node its bytes became. A directory
whose listing and stats give the recorded signature, and whose subdirectories give their recorded
trees, is its recorded tree: nothing in it is compared entry by entry, read or encoded again.

On disk: a first line naming the tree the records were written with, then one line per directory,
`[rel, tree, rules, signature, files, bytes, largest, subdirectories]` in JSON, a tab, and the
entries in JSON, which are parsed only for a directory that changed. The file is replaced whole
(one atomic write), so a record never mixes two snapshots. Host-local (it names inodes) and only
a cache: a missing or damaged file or line means those files are read once more. JSON, never
pickle. A directory holding a file changed within RACY_NS of a snapshot gets no signature: the
file could change again within the same mtime tick and look unchanged (git's "racily clean").
"""

from __future__ import annotations

import json
import os

from ..encoding.ids import is_cas_ref, xxh64_hash
from ..errors import UwfError
from ..store.files import atomic_write

VERSION = 6
RACY_NS = 2_000_000_000
SUFFIX = ".index"


class DirRecord:
    """One directory as the last snapshot saw it. `entries`: name → (kind, size, mtime, ctime,
    inode, ref or link target), a subdirectory ("dir", its tree); parsed on first use. `signature`:
    None when some entry was not settled (the directory is compared entry by entry next time).
    `files`, `bytes`, `largest`: the files directly in it, their bytes, the three largest
    [(size, name)]. `dirs`: the subdirectories walked, name → tree."""

    __slots__ = ("tree", "rules", "signature", "files", "bytes", "largest", "dirs", "_entries", "_raw", "_line")

    def __init__(self, tree: str, rules: str, entries: dict | None, *, signature: str | None = None, files: int = 0,
                 bytes_: int = 0, largest: list | None = None, dirs: dict | None = None) -> None:
        self.tree = tree
        self.rules = rules
        self.signature = signature
        self.files = files
        self.bytes = bytes_
        self.largest = largest or []
        self.dirs = dirs or {}
        self._entries = entries
        self._raw: bytes | None = None  # a line's entries, parsed on first use
        self._line: bytes | None = None  # the line it was read from: written back as it was

    @property
    def entries(self) -> dict | None:
        """None when the line's entries cannot be read (the directory is read afresh)."""
        if self._entries is None and self._raw is not None:
            self._entries = _parse_entries(self._raw)
            self._raw = None if self._entries is not None else self._raw
        return self._entries

    def line(self, rel: str) -> bytes:
        """Its line in the index: as it was read, or made (a record a snapshot made has its entries)."""
        if self._line is not None:
            return self._line
        head = [rel, self.tree, self.rules, self.signature, self.files, self.bytes, self.largest, self.dirs]
        return json.dumps(head, separators=(",", ":")).encode() + b"\t" + json.dumps(self._entries, separators=(",", ":")).encode()


def _parse_entries(raw: bytes) -> dict | None:
    try:
        entries = {name: tuple(entry) for name, entry in json.loads(raw).items()}
    except (ValueError, TypeError, AttributeError, RecursionError):
        return None
    for entry in entries.values():
        if not (len(entry) == 6 and isinstance(entry[5], str) or len(entry) == 2 and entry[0] == "dir" and isinstance(entry[1], str)):
            return None
    return entries


def _parse_head(head: bytes) -> tuple[str, DirRecord] | None:
    try:
        rel, tree, rules, signature, files, size, largest, dirs = json.loads(head)
    except (ValueError, TypeError, RecursionError):
        return None
    if not (isinstance(rel, str) and is_cas_ref(tree) and isinstance(rules, str) and (signature is None or isinstance(signature, str))):
        return None
    if not (type(files) is int and type(size) is int and files >= 0 and size >= 0 and isinstance(largest, list) and isinstance(dirs, dict)):
        return None
    if not all(isinstance(name, str) and _a_name(name) and is_cas_ref(ref) for name, ref in dirs.items()):
        return None
    if not all(isinstance(item, list) and len(item) == 2 and type(item[0]) is int and isinstance(item[1], str) for item in largest):
        return None
    return rel, DirRecord(tree, rules, None, signature=signature, files=files, bytes_=size, largest=largest, dirs=dirs)


def _a_name(name: str) -> bool:
    """A name a directory can hold: never a way out of it."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\0" not in name


class StatCache:
    """Records by path in the workspace ("" the top, "a/b/" below), as os.fsdecode gives it.
    One object lives through a step: the snapshot before the agent and the one after share it."""

    reads = 0  # index files read in this process: a step reads its workspace's once (tests count it)

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self.root: str | None = None  # the tree the records were written with
        self._records: dict[str, DirRecord] = {}
        self._changed = False

    @classmethod
    def load(cls, path: str) -> StatCache:
        cache = cls(path)
        StatCache.reads += 1
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return cache  # no index yet: every file is read once
        lines = data.split(b"\n")
        try:
            first = json.loads(lines[0])
            if first.get("version") != VERSION or not is_cas_ref(first.get("root")):
                return cache
        except (ValueError, AttributeError, RecursionError):
            return cache  # not one this uwf wrote
        cache.root = first["root"]
        for line in lines[1:]:
            head, tab, raw = line.partition(b"\t")
            parsed = _parse_head(head) if tab else None
            if parsed is not None:
                parsed[1]._raw, parsed[1]._line = raw, line
                cache._records[parsed[0]] = parsed[1]
        return cache

    @property
    def records(self) -> int:
        return len(self._records)

    def get(self, rel: str) -> DirRecord | None:
        return self._records.get(rel)

    def drop(self, rel: str) -> None:
        if self._records.pop(rel, None) is not None:
            self._changed = True

    def adopt(self, other: StatCache) -> None:
        """Take `other`'s records and root: a snapshot that had to start afresh hands its index on."""
        self.root, self._records, self._changed = other.root, other._records, other._changed

    def put(self, rel: str, record: DirRecord, changed: bool) -> None:
        self._records[rel] = record
        self._changed = self._changed or changed

    def settle(self, root: str, visited: set[str], *, save: bool = True) -> None:
        """The records of this snapshot, with `root`: those of directories it did not visit (gone,
        or ignored now) dropped, and the file written (`save`) when anything changed."""
        stale = [rel for rel in self._records if rel not in visited]
        changed = self._changed or root != self.root or bool(stale)
        for rel in stale:
            del self._records[rel]
        self.root = root
        if not save or self.path is None or not changed:
            self._changed = self._changed or changed  # kept in memory: written by the snapshot that saves
            return
        lines = [json.dumps({"version": VERSION, "root": root}).encode()]
        lines += [record.line(rel) for rel, record in self._records.items()]
        try:
            atomic_write(self.path, b"\n".join(lines), sync=False)
            self._changed = False
        except (OSError, UwfError):
            pass  # an index that cannot be written costs a later snapshot time, nothing else
        _drop_old_format(self.path)


def _drop_old_format(path: str) -> None:
    """The directory of one JSON file per directory that uwf wrote before the index (VERSION 5),
    beside the index at cache_path's place (an index named otherwise has none)."""
    if not path.endswith(SUFFIX) or os.path.basename(os.path.dirname(path)) != "snapshots":
        return
    old = path[: -len(SUFFIX)]
    if os.path.isdir(old) and os.path.isfile(os.path.join(old, "root.json")):
        from ..store.files import remove_tree

        try:
            remove_tree(old)
        except OSError:
            pass


def cache_path(cache_dir: str, workspace: str) -> str:
    """Where a workspace's stat index lives on this host: the root's cache directory, by its path."""
    return os.path.join(cache_dir, "snapshots", xxh64_hash(os.fsencode(os.path.realpath(workspace))) + SUFFIX)
