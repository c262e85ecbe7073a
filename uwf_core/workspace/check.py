"""`uwf cas fsck` for snapshots: every tree readable as a directory (names that stay inside it,
each once) whose entries point at what their kind says: a file at file bytes, a directory at a tree."""

from __future__ import annotations

from ..errors import UwfError
from ..store.builtin_schemas import BYTES_HASH, TREE_HASH
from ..store.cas import CasStore
from .tree import CONTENT_HASH, read_tree, show_path


def tree_problems(store: CasStore) -> list[tuple[str, str]]:
    """(tree hash, what is wrong with it) for every tree in the store."""
    problems = []
    for hash_ in store.of_type(TREE_HASH):
        try:
            for entry in read_tree(store, hash_):
                wanted = (TREE_HASH,) if entry.kind == "dir" else (CONTENT_HASH, BYTES_HASH) if entry.is_file else ()
                if wanted and store.has(entry.ref) and store.get(entry.ref).type not in wanted:
                    problems.append((hash_, f"entry {show_path(entry.name)} ({entry.kind}) points at {entry.ref}, which is not a {'tree' if entry.kind == 'dir' else 'file'}"))
        except UwfError as exc:
            problems.append((hash_, exc.message))
    return problems
