"""Nodes as files: `cas/<HASH>.bin`, and the type index `cas/_index/<TYPEHASH>` (one member a line)."""

from __future__ import annotations

import os

from ...encoding.ids import HASH_LEN, is_cas_ref, is_hash
from ...errors import UwfError
from ..files import append_line, atomic_write, ensure_dir
from .root import Root

NODE_SUFFIX = ".bin"


class FsNodeStore:
    """One file per node. Nothing is read until asked for; a node's mtime is its age for gc."""

    __slots__ = ("root", "location", "_prefix")

    def __init__(self, root: Root) -> None:
        self.root = root
        self.location = root.cas_dir
        self._prefix = root.cas_dir + os.sep

    def path(self, hash_: str) -> str:
        return self._prefix + hash_ + NODE_SUFFIX

    def _index_path(self, type_hash: str) -> str:
        return os.path.join(self.root.index_dir, type_hash)

    def read(self, hash_: str) -> bytes | None:
        try:
            with open(self.path(hash_), "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise UwfError(f"cannot read node {hash_} ({self.path(hash_)}): {exc.strerror}") from None

    def write(self, hash_: str, type_hash: str, data: bytes) -> None:
        ensure_dir(self.root.cas_dir)
        atomic_write(self.path(hash_), data)
        with self.index_lock():
            append_line(self._index_path(type_hash), hash_)

    def exists(self, hash_: str) -> bool:
        return is_cas_ref(hash_) and os.path.exists(self.path(hash_))

    def freshen(self, hash_: str) -> bool:
        try:
            os.utime(self.path(hash_))
            return True
        except FileNotFoundError:
            return False
        except OSError:
            return os.path.exists(self.path(hash_))

    def _names(self) -> list[str]:
        try:
            return os.listdir(self.root.cas_dir)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise UwfError(f"cannot list the nodes in {self.root.cas_dir}: {exc.strerror}") from None

    def hashes(self) -> list[str]:
        return sorted(name[:HASH_LEN] for name in self._names() if _is_node_file(name))

    def of_type(self, type_hash: str) -> list[str]:
        try:
            with open(self._index_path(type_hash), encoding="ascii") as handle:
                return list(dict.fromkeys(handle.read().split()))
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as exc:
            raise UwfError(f"cannot read the type index {self._index_path(type_hash)}: {getattr(exc, 'strerror', None) or 'not text'} (`uwf cas reindex` rebuilds it)") from None

    def touched_at(self, hash_: str) -> float | None:
        try:
            return os.stat(self.path(hash_)).st_mtime
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise UwfError(f"cannot stat node {hash_}: {exc.strerror}") from None

    def delete(self, hash_: str) -> None:
        try:
            os.unlink(self.path(hash_))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise UwfError(f"cannot delete node {hash_}: {exc.strerror}") from None

    def index_lock(self):
        return self.root.lock("cas-index")

    def rebuild_index(self, members: dict[str, list[str]]) -> None:
        """Replace the index (callers hold index_lock, so a put meanwhile waits, never lost)."""
        ensure_dir(self.root.index_dir)
        for name in os.listdir(self.root.index_dir):
            if name not in members and not name.startswith("."):
                os.unlink(os.path.join(self.root.index_dir, name))
        for type_hash, hashes in members.items():
            atomic_write(self._index_path(type_hash), "".join(h + "\n" for h in hashes).encode("ascii"))

    def strays(self) -> list[tuple[str, bool, float]]:
        found = []
        for name in sorted(self._names()):
            if name == "_index" or _is_node_file(name):
                continue
            try:
                mtime = os.stat(os.path.join(self.root.cas_dir, name)).st_mtime
            except FileNotFoundError:
                continue
            found.append((name, name.endswith(".tmp"), mtime))
        return found

    def delete_stray(self, name: str) -> None:
        try:
            os.unlink(os.path.join(self.root.cas_dir, name))
        except FileNotFoundError:
            pass


def _is_node_file(name: str) -> bool:
    return name.endswith(NODE_SUFFIX) and len(name) == HASH_LEN + len(NODE_SUFFIX) and is_hash(name[:HASH_LEN])
