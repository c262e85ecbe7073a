"""Nodes in uwf_nodes (the same bytes under the same hashes as a directory root's), and derived
data in uwf_derived. A batch is one transaction on this thread's connection."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from ...encoding.ids import is_cas_ref
from .db import Database, display


class PgNodeStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.location = display(db.url)
        self._local = threading.local()

    def read(self, hash_: str) -> bytes | None:
        rows = self.db.query("select data from uwf_nodes where hash = %s", (hash_,), "read a node of")
        return bytes(rows[0][0]) if rows else None

    def write(self, hash_: str, type_hash: str, data: bytes) -> None:
        self.db.execute(
            "insert into uwf_nodes (hash, type, data, touched) values (%s, %s, %s, %s) on conflict (hash) do nothing",
            (hash_, type_hash, data, time.time()),
            f"write node {hash_} to",
        )

    @contextmanager
    def batch(self, durable: bool = True):  # a PostgreSQL commit is durable either way
        depth = getattr(self._local, "depth", 0)
        if depth:
            self._local.depth = depth + 1
            try:
                yield
            finally:
                self._local.depth = depth
            return
        with self.db.transaction("write"):
            self._local.depth = 1
            try:
                yield
            finally:
                self._local.depth = 0

    def exists(self, hash_: str) -> bool:
        return is_cas_ref(hash_) and bool(self.db.query("select 1 from uwf_nodes where hash = %s", (hash_,)))

    def freshen(self, hash_: str) -> bool:
        touched = self.touched_at(hash_)
        if touched is None:
            return False
        now = time.time()
        if touched < now - 1:  # touched this second already: gc keeps it anyway (see store/gc.py)
            self.db.execute("update uwf_nodes set touched = %s where hash = %s", (now, hash_))
        return True

    def hashes(self) -> list[str]:
        return sorted(row[0] for row in self.db.query("select hash from uwf_nodes"))

    def of_type(self, type_hash: str) -> list[str]:
        return [row[0] for row in self.db.query("select hash from uwf_nodes where type = %s order by seq", (type_hash,))]

    def touched_at(self, hash_: str) -> float | None:
        rows = self.db.query("select touched from uwf_nodes where hash = %s", (hash_,))
        return rows[0][0] if rows else None

    def touched_all(self) -> dict[str, float]:
        return dict(self.db.query("select hash, touched from uwf_nodes"))

    def delete(self, hash_: str) -> None:
        self.db.execute("delete from uwf_nodes where hash = %s", (hash_,), f"delete node {hash_} from")

    def purge(self, hashes: list[str]) -> None:
        """Deleted rows stay in the table's pages until PostgreSQL vacuums them (autovacuum)."""
        with self.batch():
            for hash_ in hashes:
                self.delete(hash_)

    def rebuild_index(self, members: dict[str, list[str]]) -> None:
        """Nothing to rebuild: the type is a column of each node's row."""

    def index_lock(self):
        return self.db_lock("cas-index")

    @contextmanager
    def db_lock(self, name: str):
        """A lock across every host (a transaction-scoped advisory lock held on a connection of its own)."""
        from .locks import advisory_key

        conn = self.db.connect()
        try:
            with self.db.errors("lock"):
                conn.execute("select pg_advisory_lock(%s)", (advisory_key(name),))
            yield
        finally:
            conn.close()  # closing the session releases the lock

    def pack(self) -> int:
        return 0  # nothing is kept apart

    def derived(self, key: str) -> bytes | None:
        rows = self.db.query("select value from uwf_derived where key = %s", (key,))
        return bytes(rows[0][0]) if rows else None

    def put_derived(self, key: str, value: bytes) -> None:
        self.db.execute(
            "insert into uwf_derived (key, value) values (%s, %s) on conflict (key) do update set value = excluded.value", (key, value)
        )

    def strays(self) -> list[tuple[str, bool, float]]:
        return []

    def damage(self) -> tuple[str, str] | None:
        return None  # PostgreSQL checks its own pages; what uwf can find is in the nodes

    def delete_stray(self, name: str) -> None:
        from ...errors import UwfError

        raise UwfError(f"{name!r} is not a stray of a PostgreSQL root (it has none)")
