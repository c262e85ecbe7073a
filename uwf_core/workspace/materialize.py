"""Files back from a tree: a checkout into an empty directory, or a workspace brought from one tree
to another (only the changed paths are touched).

Every write goes through directory file descriptors opened without following links, so a link in
the tree or planted in the directory can never send a write outside it.
"""

from __future__ import annotations

import os

from ..errors import UwfError
from ..store.cas import CasStore
from .changes import DELETED, tree_changes
from .ignore import ALWAYS, IGNORE_FILES, Rules
from .tree import Entry, read_blob, read_tree

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def checkout(store: CasStore, tree: str, directory: str, *, force: bool = False, keep: tuple[str, ...] = ()) -> int:
    """Write `tree` into `directory` (created if missing); returns the number of files written.
    A directory that is not empty is refused unless `force`, which replaces its files with the
    tree's but keeps what a snapshot leaves out (`.git`, ignored files, and the `keep` paths: a
    storage root kept inside its project): what it never kept, it does not take away. A problem
    of the directory is one line (UwfError)."""
    try:
        os.makedirs(directory, exist_ok=True)
        if os.listdir(directory) and not force:
            raise UwfError(f"{directory} is not empty (give --force to replace its files with the snapshot's)")
        fd = os.open(directory, DIR_FLAGS)
    except OSError as exc:
        raise UwfError(f"cannot write into {directory}: {exc.strerror or exc} (it must be a directory, not a link or a file)") from None
    try:
        if force:
            real = os.path.realpath(directory)
            kept = {os.path.relpath(path, real) + "/" for path in keep if path.startswith(real.rstrip("/") + "/")}
            _clear(fd, os.path.abspath(directory), "", Rules(), kept)
        return _write_tree(store, tree, fd)
    except OSError as exc:
        raise UwfError(f"cannot write the files of {tree} into {directory}: {exc.strerror or exc}") from None
    except RecursionError:
        raise UwfError(f"tree {tree} is nested too deep to write") from None
    finally:
        os.close(fd)


def _clear(fd: int, path: str, rel: str, rules: Rules, kept: set[str]) -> None:
    """Remove what a snapshot of this directory would hold; keep `.git`, ignored and kept paths."""
    names = os.listdir(fd)
    rules = rules.below(path, rel, {name for name in names if name in IGNORE_FILES})
    for name in names:
        is_dir = _is_dir(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
        if (rules.patterns or name.lower() in ALWAYS) and rules.ignored(rel, name, is_dir) or f"{rel}{name}/" in kept:
            continue
        if not is_dir:
            os.unlink(name, dir_fd=fd)
            continue
        inner = os.open(name, DIR_FLAGS, dir_fd=fd)
        try:
            _clear(inner, f"{path}/{name}", f"{rel}{name}/", rules, kept)
        finally:
            os.close(inner)
        if not os.listdir(os.path.join(path, name)):
            os.rmdir(name, dir_fd=fd)


def bring(store: CasStore, directory: str, old: str | None, new: str) -> int:
    """Bring a workspace that holds tree `old` to tree `new`; returns the number of paths changed."""
    try:
        changes = tree_changes(store, old, new, whole_dirs=True)
    except RecursionError:
        raise UwfError(f"tree {new} is nested too deep to write") from None
    fd = os.open(directory, DIR_FLAGS)
    try:
        for change in changes:
            parent, name = _parent(fd, change.path, create=change.status != DELETED)
            if parent is None:
                continue
            try:
                _remove(parent, name)
                if change.new is not None:
                    _write_entry(store, change.new, parent)
            finally:
                if parent != fd:
                    os.close(parent)
    finally:
        os.close(fd)
    return len(changes)


def _parent(fd: int, path: bytes, *, create: bool) -> tuple[int | None, bytes]:
    """An open descriptor of `path`'s directory (made where missing when `create`), and its name."""
    *dirs, name = path.split(b"/")
    current = fd
    for part in dirs:
        try:
            st = os.stat(part, dir_fd=current, follow_symlinks=False)
            if not _is_dir(st.st_mode):
                if not create:
                    return _closed(current, fd), name
                _remove(current, part)
                os.mkdir(part, 0o755, dir_fd=current)
        except FileNotFoundError:
            if not create:
                return _closed(current, fd), name
            os.mkdir(part, 0o755, dir_fd=current)
        inner = os.open(part, DIR_FLAGS, dir_fd=current)
        if current != fd:
            os.close(current)
        current = inner
    return current, name


def _closed(current: int, fd: int) -> None:
    if current != fd:
        os.close(current)
    return None


def _is_dir(mode: int) -> bool:
    import stat

    return stat.S_ISDIR(mode)


def _remove(fd: int, name: bytes) -> None:
    """Remove `name` in directory `fd`, a whole directory included; nothing there is fine."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not _is_dir(st.st_mode):
        os.unlink(name, dir_fd=fd)
        return
    inner = os.open(name, DIR_FLAGS, dir_fd=fd)
    try:
        for child in os.listdir(inner):
            _remove(inner, os.fsencode(child))
    finally:
        os.close(inner)
    os.rmdir(name, dir_fd=fd)


def _write_tree(store: CasStore, tree: str, fd: int) -> int:
    return sum(_write_entry(store, entry, fd) for entry in read_tree(store, tree))


def _write_entry(store: CasStore, entry: Entry, fd: int) -> int:
    if entry.kind == "link":
        _remove(fd, entry.name)  # what a forced checkout kept (an ignored file) gives way
        os.symlink(entry.target, entry.name, dir_fd=fd)
        return 1
    if entry.kind == "dir":
        try:
            os.mkdir(entry.name, 0o755, dir_fd=fd)
        except FileExistsError:  # a directory a forced checkout kept (it holds ignored files)
            if not _is_dir(os.stat(entry.name, dir_fd=fd, follow_symlinks=False).st_mode):
                _remove(fd, entry.name)
                os.mkdir(entry.name, 0o755, dir_fd=fd)
        inner = os.open(entry.name, DIR_FLAGS, dir_fd=fd)
        try:
            return _write_tree(store, entry.ref, inner)
        finally:
            os.close(inner)
    data = read_blob(store, entry.ref)
    mode = 0o755 if entry.kind == "exec" else 0o644
    _remove(fd, entry.name)
    out = os.open(entry.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=fd)
    try:
        with os.fdopen(out, "wb", closefd=False) as handle:
            handle.write(data)
        os.fchmod(out, mode)  # the umask does not decide whether a file is executable
    finally:
        os.close(out)
    return 1
