"""The nodes as a sandboxed step-protocol agent sees them: the root's node file read-only, and
what it writes going to a staging file of its own (`UWF_STAGING`, a directory uwf made for this
attempt). When the agent has answered, uwf verifies every staged node — its hash, its schema, no
key in it — and takes them all in, or none (engine/staging.py). So an agent never writes the
store itself: it cannot delete a node, forge derived data, or plant a link there."""

from __future__ import annotations

from ...encoding.ids import is_cas_ref
from ...errors import UwfError
from .node_db import NodeDb
from .nodes import FsNodeStore

STAGING_ENV = "UWF_STAGING"


class StagedNodeStore:
    """Reads see the staging file, then the root's; writes go to the staging file only."""

    __slots__ = ("main", "stage", "location")

    def __init__(self, main: FsNodeStore, stage_dir: str) -> None:
        self.main = main
        self.stage = NodeDb(stage_dir, durable=False)
        self.location = main.location

    def read(self, hash_: str) -> bytes | None:
        data = self.stage.read(hash_)
        return data if data is not None else self.main.read(hash_)

    def write(self, hash_: str, type_hash: str, data: bytes) -> None:
        self.stage.write(hash_, type_hash, data)

    def batch(self, durable: bool = True):
        return self.stage.batch()

    def exists(self, hash_: str) -> bool:
        return is_cas_ref(hash_) and (self.stage.touched_at(hash_) is not None or self.main.exists(hash_))

    def freshen(self, hash_: str) -> bool:
        """A node already stored needs no copy (its age is uwf's to renew: gc keeps what a running step may use)."""
        return self.stage.freshen(hash_) or self.main.exists(hash_)

    def touched_at(self, hash_: str) -> float | None:
        touched = self.stage.touched_at(hash_)
        return touched if touched is not None else self.main.touched_at(hash_)

    def hashes(self) -> list[str]:
        return sorted(set(self.stage.hashes()) | set(self.main.hashes()))

    def of_type(self, type_hash: str) -> list[str]:
        return list(dict.fromkeys([*self.main.of_type(type_hash), *self.stage.of_type(type_hash)]))

    def derived(self, key: str) -> bytes | None:
        value = self.stage.derived(key)
        return value if value is not None else self.main.derived(key)

    def put_derived(self, key: str, value: bytes) -> None:
        self.stage.put_derived(key, value)

    def touched_all(self) -> dict[str, float]:
        return {**self.main.touched_all(), **dict(self.stage.read_query("select hash, touched from nodes"))}

    # Whatever changes the store beyond adding nodes is not an agent's to do.

    def delete(self, hash_: str) -> None:
        _refuse("delete a node")

    def purge(self, hashes: list[str]) -> None:
        _refuse("delete nodes")

    def pack(self) -> int:
        _refuse("pack loose nodes")

    def rebuild_index(self, members: dict[str, list[str]]) -> None:
        _refuse("rebuild the type index")

    def index_lock(self):
        _refuse("lock the type index")

    def strays(self) -> list[tuple[str, bool, float]]:
        return []

    def damage(self) -> tuple[str, str] | None:
        return self.main.damage()

    def delete_stray(self, name: str) -> None:
        _refuse("delete files of the store")


def _refuse(what: str):
    raise UwfError(f"a step agent cannot {what}: it adds nodes, which uwf takes in after checking them")


# -- uwf reading what the agent staged: its file, so nothing of it is trusted ---------------------

STAGED_NODES = 100_000  # a step agent writes a handful: its step, output, detail
STAGED_BYTES = 256 << 20  # stored (compressed) bytes in all; each inflates to at most node_db.MAX_NODE_BYTES
STAGED_SECONDS = 30.0  # every query of it together
SHAPE = {  # what NodeDb makes, and nothing else: a view or a trigger would run the agent's SQL in uwf
    ("table", "meta"), ("table", "nodes"), ("table", "derived"), ("index", "nodes_by_type"),
    ("index", "sqlite_autoindex_meta_1"), ("index", "sqlite_autoindex_nodes_1"), ("index", "sqlite_autoindex_derived_1"),
}
COLUMNS = {  # the layouts NodeDb makes (a node file before issue 41 has `data` before `touched`)
    "nodes": (["seq", "hash", "type", "touched", "data"], ["seq", "hash", "type", "data", "touched"]),
    "derived": (["key", "value"],),
    "meta": (["key", "value"],),
}


def staged_nodes(stage: str) -> dict[str, bytes]:
    """The nodes an agent wrote there, in the order it wrote them; UwfError, before any is read,
    when they are more than a step writes or the file is not the shape uwf makes."""
    from .node_db import node_data

    conn = _checked(stage)
    if conn is None:
        return {}  # it staged nothing: no file
    try:
        ((count, total),) = _query(conn, "select count(*), coalesce(sum(length(data)), 0) from nodes")
        if count > STAGED_NODES or total > STAGED_BYTES:
            raise UwfError(f"it staged {count:,} nodes of {total:,} bytes, more than a step may write ({STAGED_NODES:,} nodes, {STAGED_BYTES:,} bytes)")
        nodes, inflated = {}, 0
        for hash_, data in _query(conn, "select hash, data from nodes order by seq"):
            nodes[str(hash_)] = node_data(data)
            inflated += len(nodes[str(hash_)])
            if inflated > STAGED_BYTES * 2:  # a compressed row that inflates a thousandfold
                raise UwfError(f"its nodes inflate to more than a step may write ({STAGED_BYTES * 2:,} bytes)")
        return nodes
    finally:
        conn.close()


def staged_derived(stage: str) -> dict[str, bytes]:
    """The derived data an agent wrote there (uwf takes in only what it can check)."""
    conn = _checked(stage)
    if conn is None:
        return {}
    try:
        rows = _query(conn, "select key, value from derived limit 10000")
        return {str(key): bytes(value) for key, value in rows if isinstance(value, bytes)}
    finally:
        conn.close()


def _checked(stage: str):
    """A read-only connection to the staging file, its time bounded; None when there is none."""
    import os
    import sqlite3
    import stat
    import time

    from .node_db import DB_NAME

    path = os.path.join(stage, DB_NAME)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UwfError(f"its staging file cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise UwfError("its staging file is not a regular file")
    uri = "file:" + path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
    deadline = time.monotonic() + STAGED_SECONDS
    conn.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
    try:
        shape = {(str(kind), str(name)) for kind, name in _query(conn, "select type, name from sqlite_master")}
        if not shape <= SHAPE:
            raise UwfError(f"its staging file holds {'/'.join(sorted(shape - SHAPE)[0])}, which uwf never makes")
        for table, layouts in COLUMNS.items():
            if ("table", table) in shape and [row[1] for row in _query(conn, f"pragma table_xinfo({table})")] not in layouts:
                raise UwfError(f"its staging file's {table} table is not the one uwf makes")
    except BaseException:
        conn.close()
        raise
    return conn


def _query(conn, sql: str) -> list[tuple]:
    import sqlite3

    try:
        return conn.execute(sql).fetchall()
    except sqlite3.Error as exc:
        raise UwfError(f"its staging file cannot be read: {exc}") from None
