"""What changed between two trees: paths added, modified, deleted, with sizes and hashes.

Subtrees with the same hash are skipped whole, so the changes of one step in a large workspace
cost a read of the directories on the changed paths only.
"""

from __future__ import annotations

import base64

from ..encoding.records import record
from ..store.cas import CasStore
from .tree import Entry, flatten, read_tree, show_path

ADDED, MODIFIED, DELETED = "added", "modified", "deleted"


@record(frozen=True)
class Change:
    path: bytes
    status: str  # added, modified, deleted
    old: Entry | None
    new: Entry | None

    def to_json(self) -> dict:
        data = {"path": show_path(self.path), "status": self.status}
        try:
            exact = self.path.decode("utf-8") == data["path"]
        except UnicodeDecodeError:
            exact = False
        if not exact:  # "path" shows \xNN escapes (undecodable bytes, control characters); these are the bytes
            data["pathBase64"] = base64.b64encode(self.path).decode("ascii")
        for side, entry in (("old", self.old), ("new", self.new)):
            if entry is not None:
                data[side] = {"kind": entry.kind, "hash": entry.ref, "size": entry.size}
                if entry.target is not None:
                    data[side]["target"] = show_path(entry.target)
        return data


def tree_changes(store: CasStore, old: str | None, new: str | None, prefix: bytes = b"", *, whole_dirs: bool = False) -> list[Change]:
    """Changes from tree `old` to tree `new` (None: no files), sorted by path. `whole_dirs`: a
    directory on one side only is one change of its own (what restoring needs), not its files."""
    if old == new:
        return []
    before = {entry.name: entry for entry in read_tree(store, old)} if old else {}
    after = {entry.name: entry for entry in read_tree(store, new)} if new else {}
    found: list[Change] = []
    for name in sorted(before.keys() | after.keys()):
        a, b = before.get(name), after.get(name)
        path = prefix + name
        if a == b:
            continue
        a_dir = a is not None and a.kind == "dir"
        b_dir = b is not None and b.kind == "dir"
        if whole_dirs and (a_dir != b_dir or a is None or b is None):
            found.append(Change(path, ADDED if a is None else DELETED if b is None else MODIFIED, a, b))
        elif a_dir or b_dir:
            found.extend(tree_changes(store, a.ref if a_dir else None, b.ref if b_dir else None, path + b"/", whole_dirs=whole_dirs))
            if a is not None and not a_dir:
                found.append(Change(path, DELETED, a, None))
            if b is not None and not b_dir:
                found.append(Change(path, ADDED, None, b))
            if (a is None or b is None) and not _has_files(store, (a or b)):
                found.append(Change(path, ADDED if a is None else DELETED, a, b))  # an empty directory
        elif a is None:
            found.append(Change(path, ADDED, None, b))
        elif b is None:
            found.append(Change(path, DELETED, a, None))
        else:
            found.append(Change(path, MODIFIED, a, b))
    return sorted(found, key=lambda change: change.path)


def _has_files(store: CasStore, entry: Entry) -> bool:
    return bool(flatten(store, entry.ref))


def unified(store: CasStore, change: Change, context: int = 3) -> list[str]:
    """A change as a unified diff (text), or one line of sizes (bytes, links, kinds)."""
    import difflib

    from .tree import read_blob

    path = show_path(change.path)
    texts = []
    for entry in (change.old, change.new):
        if entry is None:
            texts.append("")
        elif not entry.is_file:
            texts.append(None)
        else:
            try:
                texts.append(read_blob(store, entry.ref).decode("utf-8"))
            except UnicodeDecodeError:
                texts.append(None)
    if None in texts:
        return [f"{change.status} {path}: {_describe(change.old)} -> {_describe(change.new)}"]
    old_name = f"a/{path}" if change.old is not None else "/dev/null"
    new_name = f"b/{path}" if change.new is not None else "/dev/null"
    lines = difflib.unified_diff(texts[0].splitlines(), texts[1].splitlines(), old_name, new_name, lineterm="", n=context)
    shown = list(lines)
    if not shown and change.old is not None and change.new is not None and change.old.kind != change.new.kind:
        return [f"mode {path}: {change.old.kind} -> {change.new.kind}"]
    return shown


def _describe(entry: Entry | None) -> str:
    if entry is None:
        return "nothing"
    if entry.kind == "link":
        return f"link to {show_path(entry.target)}"
    if entry.kind == "dir":
        return "an empty directory"
    return f"{entry.kind} of {entry.size} bytes"
