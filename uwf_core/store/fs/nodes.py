"""The nodes of a directory root: `cas/nodes.sqlite` (node_db.py), plus the loose
`cas/<HASH>.bin` files older roots hold (loose.py), read until `uwf cas gc` packs them.

A loose file is looked at before the node file: packing writes the node file first and
removes the loose file after, so a reader that misses the loose file finds the node."""

from __future__ import annotations

import os

from ...encoding.ids import is_cas_ref
from ...errors import UwfError
from .loose import INDEX_DIR, LooseNodes, is_node_file
from .node_db import DB_FILES, NodeDb
from .root import Root


class FsNodeStore:
    __slots__ = ("root", "location", "db", "loose", "_has_loose")

    def __init__(self, root: Root) -> None:
        self.root = root
        self.location = root.cas_dir
        self.db = NodeDb(root.cas_dir)
        self.loose = LooseNodes(root.cas_dir)
        self._has_loose: bool | None = None

    @property
    def has_loose(self) -> bool:
        """Whether this root still holds loose node files (looked at once: nothing writes new ones,
        so a root without them saves a failed open per node read)."""
        if self._has_loose is None:
            self._has_loose = self.loose.any()
        return self._has_loose

    def read(self, hash_: str) -> bytes | None:
        data = self.loose.read(hash_) if self.has_loose else None
        return data if data is not None else self.db.read(hash_)

    def write(self, hash_: str, type_hash: str, data: bytes) -> None:
        self.db.write(hash_, type_hash, data)

    def write_pieces(self, hash_: str, type_hash: str, pieces) -> None:
        self.db.write_pieces(hash_, type_hash, pieces)

    def batch(self, durable: bool = True):
        return self.db.batch(durable)

    def exists(self, hash_: str) -> bool:
        return is_cas_ref(hash_) and ((self.has_loose and self.loose.exists(hash_)) or self.db.touched_at(hash_) is not None)

    def freshen(self, hash_: str) -> bool:
        return (self.has_loose and self.loose.freshen(hash_)) or self.db.freshen(hash_)

    def hashes(self) -> list[str]:
        return sorted(set(self.db.hashes()) | set(self.loose.hashes()))

    def of_type(self, type_hash: str) -> list[str]:
        return list(dict.fromkeys([*self.loose.of_type(type_hash), *self.db.of_type(type_hash)]))

    def touched_at(self, hash_: str) -> float | None:
        touched = self.loose.touched_at(hash_) if self.has_loose else None
        return touched if touched is not None else self.db.touched_at(hash_)

    def touched_all(self) -> dict[str, float]:
        touched = dict(self.db.read_query("select hash, touched from nodes"))
        for hash_ in self.loose.hashes():
            when = self.loose.touched_at(hash_)
            if when is not None:
                touched[hash_] = when
        return touched

    def delete(self, hash_: str) -> None:
        self.db.delete(hash_)
        self.loose.delete(hash_)

    def purge(self, hashes: list[str]) -> None:
        with self.batch():
            for hash_ in hashes:
                self.delete(hash_)
        self.db.checkpoint()

    def derived(self, key: str) -> bytes | None:
        return self.db.derived(key)

    def put_derived(self, key: str, value: bytes) -> None:
        self.db.put_derived(key, value)

    def index_lock(self):
        return self.root.lock("cas-index")

    def rebuild_index(self, members: dict[str, list[str]]) -> None:
        """The node file indexes itself (a type column); only loose nodes need the old index."""
        loose = set(self.loose.hashes())
        self.loose.rebuild_index({type_hash: [h for h in hashes if h in loose] for type_hash, hashes in members.items() if loose.intersection(hashes)})

    def pack(self) -> int:
        """Move loose nodes into the node file (callers hold index_lock); returns how many.
        A loose file that is no node envelope stays where it is, for fsck to report."""
        from ...encoding.cbor import decode_envelope
        from ...errors import CorruptError

        moved = []
        with self.db.batch():
            for hash_ in self.loose.hashes():
                data = self.loose.read(hash_)
                try:
                    envelope, _ = decode_envelope(data or b"")
                except CorruptError:
                    continue
                type_hash = envelope.get("type") if isinstance(envelope, dict) else None
                if not is_cas_ref(type_hash):
                    continue
                self.db.write_query(
                    "insert or ignore into nodes (hash, type, data, touched) values (?, ?, ?, ?)",
                    (hash_, type_hash, data, self.loose.touched_at(hash_) or 0.0),
                    f"cannot pack node {hash_}",
                )
                moved.append(hash_)
        for hash_ in moved:
            self.loose.delete(hash_)
        if not self.loose.hashes():
            self.loose.drop_index()
        return len(moved)

    def damage(self) -> tuple[str, str] | None:
        problem = self.db.damage()
        return (self.db.path, problem) if problem else None

    def strays(self) -> list[tuple[str, bool, float]]:
        found = []
        for name in sorted(self.loose.names()):
            if name == INDEX_DIR or name in DB_FILES or is_node_file(name):
                continue
            try:
                mtime = os.stat(os.path.join(self.root.cas_dir, name)).st_mtime
            except FileNotFoundError:
                continue
            found.append((name, name.endswith(".tmp"), mtime))
        return found

    def delete_stray(self, name: str) -> None:
        if os.sep in name or name in DB_FILES:
            raise UwfError(f"{name!r} is not a stray file of {self.root.cas_dir}")
        try:
            os.unlink(os.path.join(self.root.cas_dir, name))
        except FileNotFoundError:
            pass
