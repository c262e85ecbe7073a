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
