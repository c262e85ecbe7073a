"""Loose node files, `cas/<HASH>.bin` with the type index in `cas/_index/<TYPEHASH>`: how roots
stored nodes before `cas/nodes.sqlite`. Still read, so an older root opens as it is; `uwf cas gc`
moves them into the node file. Nothing new is written here."""

from __future__ import annotations

import os

from ...encoding.ids import HASH_LEN, is_cas_ref, is_hash
from ...errors import UwfError
from ..files import atomic_write, ensure_dir

NODE_SUFFIX = ".bin"
INDEX_DIR = "_index"


class LooseNodes:
    __slots__ = ("cas_dir", "index_dir", "_prefix")

    def __init__(self, cas_dir: str) -> None:
        self.cas_dir = cas_dir
        self.index_dir = os.path.join(cas_dir, INDEX_DIR)
        self._prefix = cas_dir + os.sep

    def path(self, hash_: str) -> str:
        return self._prefix + hash_ + NODE_SUFFIX

    def read(self, hash_: str) -> bytes | None:
        try:
            with open(self.path(hash_), "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise UwfError(f"cannot read node {hash_} ({self.path(hash_)}): {exc.strerror}") from None

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

    def names(self) -> list[str]:
        try:
            return os.listdir(self.cas_dir)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise UwfError(f"cannot list the nodes in {self.cas_dir}: {exc.strerror}") from None

    def any(self) -> bool:
        """Whether one loose node file is there (stops at the first: a packed cas/ holds ~3 entries)."""
        try:
            with os.scandir(self.cas_dir) as entries:
                return any(is_node_file(entry.name) for entry in entries)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise UwfError(f"cannot list the nodes in {self.cas_dir}: {exc.strerror}") from None

    def hashes(self) -> list[str]:
        return sorted(name[:HASH_LEN] for name in self.names() if is_node_file(name))

    def of_type(self, type_hash: str) -> list[str]:
        path = os.path.join(self.index_dir, type_hash)
        try:
            with open(path, encoding="ascii") as handle:
                return list(dict.fromkeys(handle.read().split()))
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as exc:
            raise UwfError(f"cannot read the type index {path}: {getattr(exc, 'strerror', None) or 'not text'} (`uwf cas reindex` rebuilds it)") from None

    def _index_is_a_link(self) -> bool:
        """A link in its place leads elsewhere: never followed (what is listed there is not ours to
        delete); the link itself goes."""
        if os.path.islink(self.index_dir):
            os.unlink(self.index_dir)
            return True
        return False

    def rebuild_index(self, members: dict[str, list[str]]) -> None:
        """The legacy index lists only loose nodes: types with none lose their file."""
        self._index_is_a_link()
        if not os.path.isdir(self.index_dir) and not members:
            return
        ensure_dir(self.index_dir)
        for name in os.listdir(self.index_dir):
            if name not in members and not name.startswith("."):
                os.unlink(os.path.join(self.index_dir, name))
        for type_hash, hashes in members.items():
            atomic_write(os.path.join(self.index_dir, type_hash), "".join(h + "\n" for h in hashes).encode("ascii"))

    def drop_index(self) -> None:
        """After packing: no loose node is left for the legacy index to list."""
        try:
            if self._index_is_a_link():
                return
            for name in os.listdir(self.index_dir):
                os.unlink(os.path.join(self.index_dir, name))
            os.rmdir(self.index_dir)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise UwfError(f"cannot remove the old type index {self.index_dir}: {exc.strerror}") from None


def is_node_file(name: str) -> bool:
    return name.endswith(NODE_SUFFIX) and len(name) == HASH_LEN + len(NODE_SUFFIX) and is_hash(name[:HASH_LEN])
