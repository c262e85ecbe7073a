"""Reach into a directory root's node file (`cas/nodes.sqlite`) the way damage, a careless hand
or an older uwf would: tests only. The engine never reads the file except through its store."""

from __future__ import annotations

import os
import sqlite3
import zlib
from contextlib import closing
from pathlib import Path

DB_NAME = "nodes.sqlite"


def db_path(root_dir) -> Path:
    return Path(root_dir) / "cas" / DB_NAME


def _query(root_dir, sql: str, args: tuple = ()) -> list[tuple]:
    with closing(sqlite3.connect(db_path(root_dir), isolation_level=None, timeout=30)) as conn:
        return conn.execute(sql, args).fetchall()


def stored(data) -> bytes:
    """A node's envelope from its row (rows of some size are stored zlib-compressed)."""
    data = bytes(data)
    return zlib.decompress(data) if data[:1] == b"\x78" else data


def node_bytes(root_dir, hash_: str) -> bytes | None:
    rows = _query(root_dir, "select data from nodes where hash = ?", (hash_,))
    return stored(rows[0][0]) if rows else None


def set_node_bytes(root_dir, hash_: str, data: bytes) -> None:
    """Replace a node's stored bytes (the hash it is stored under stays): corruption."""
    assert _query(root_dir, "select 1 from nodes where hash = ?", (hash_,)), f"no node {hash_}"
    _query(root_dir, "update nodes set data = ? where hash = ?", (data, hash_))


def delete_node(root_dir, hash_: str) -> None:
    _query(root_dir, "delete from nodes where hash = ?", (hash_,))


def set_touched(root_dir, hash_: str, when: float) -> None:
    _query(root_dir, "update nodes set touched = ? where hash = ?", (when, hash_))


def touched(root_dir, hash_: str) -> float | None:
    rows = _query(root_dir, "select touched from nodes where hash = ?", (hash_,))
    return rows[0][0] if rows else None


def hashes(root_dir) -> list[str]:
    return [row[0] for row in _query(root_dir, "select hash from nodes order by seq")] if db_path(root_dir).exists() else []


def unpack(root_dir) -> list[str]:
    """Turn the root into one an older uwf wrote: every node a loose `cas/<HASH>.bin` file, the
    type index in `cas/_index/<TYPE>`, no node file. Returns the hashes moved."""
    cas = Path(root_dir) / "cas"
    rows = _query(root_dir, "select hash, type, data from nodes order by seq")
    (cas / "_index").mkdir(exist_ok=True)
    for hash_, type_hash, data in rows:
        (cas / f"{hash_}.bin").write_bytes(stored(data))
        with open(cas / "_index" / type_hash, "a") as index:
            index.write(hash_ + "\n")
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = cas / (DB_NAME + suffix)
        if path.exists():
            os.unlink(path)
    return [row[0] for row in rows]


def logical_dump(root_dir) -> dict[str, bytes]:
    """The node file as what it holds (hash, type, bytes), not as pages: two equal dumps mean the
    same nodes, whatever SQLite did with its pages, its WAL or its shared memory meanwhile."""
    if not db_path(root_dir).exists():
        return {}
    rows = _query(root_dir, "select hash, type, data from nodes")
    return {f"cas/{DB_NAME}#{hash_}": type_hash.encode() + b":" + bytes(data) for hash_, type_hash, data in rows}
