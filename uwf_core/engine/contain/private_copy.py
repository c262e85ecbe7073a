"""A private copy of a directory for one agent run (design §16).

The agent sees the directory at its usual path, but what is mounted there is a copy in uwf's
scratch space: what it writes stays in the copy, and after the run uwf lists what changed and
throws the copy away. Only what the caller carries back (a refreshed login, the objects of an
agent's own commits) ever reaches the real directory. Entries too big to copy for every run, and
those the caller keeps as they are, are shown read-only in the copy instead; entries the caller
skips are not shown at all (history, transcripts, logs: the user's, not the agent's).

Changes are found by ctime, which a write, a rename or a utime() always moves and no process can
set back: an agent cannot hide a change by restoring a file's size and mtime.
"""

from __future__ import annotations

import fnmatch
import os
import stat

from ...encoding.records import record

COPY_BYTES = 64 << 20  # what one copy may take in all; an entry past it is shown read-only
COPY_FILES = 20_000


@record(frozen=True)
class Change:
    path: str  # relative to the copied directory, "/"-separated
    kind: str  # added, changed, removed


class PrivateCopy:
    """`real` as a private copy at `path`; `views` maps names inside it to what is bound there
    read-only (a real entry too big to copy, or kept as it is)."""

    def __init__(self, real: str, path: str, views: dict[str, str], skipped: list[str], seed: dict[str, tuple]) -> None:
        self.real = real
        self.path = path
        self.views = views
        self.skipped = skipped
        self.seed = seed  # relative path -> (kind, ctime_ns) as copied

    def mounts(self) -> list[tuple[str, str]]:
        """(source, place) of each read-only view, as the sandbox sees the copy at `real`."""
        return [(source, os.path.join(self.real, name)) for name, source in self.views.items()]

    def view(self, name: str, source: str) -> None:
        """Bind `source` read-only at `name` in the copy (made as a mount point here)."""
        mount_point = os.path.join(self.path, name)
        if os.path.isdir(source):
            os.makedirs(mount_point, exist_ok=True)
        else:
            open(mount_point, "ab").close()
        self.views[name] = source

    @classmethod
    def make(
        cls, real: str, scratch: str, *, skip: tuple[str, ...] = (), keep: tuple[str, ...] = (),
        fresh: tuple[str, ...] = (), budget: tuple[int, int] = (COPY_BYTES, COPY_FILES),
    ) -> PrivateCopy:
        """Copy `real` (its top-level entries) into a new directory of `scratch`. `skip`: name
        patterns not shown; `keep`: names shown read-only as they are; `fresh`: names given as
        empty directories of the agent's own."""
        os.makedirs(scratch, exist_ok=True)
        path = os.path.join(scratch, f"private-{os.urandom(6).hex()}")  # not `tempfile`: its import costs a step ~3 ms
        os.mkdir(path, 0o700)
        shown: list[str] = []  # real entries seen read-only
        skipped: list[str] = []
        left_bytes, left_files = budget
        try:
            listing = sorted(os.scandir(real), key=lambda item: item.name) if os.path.isdir(real) else []
        except OSError:
            listing = []
        for item in listing:
            name = item.name
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in skip):
                skipped.append(name)
                continue
            if name in fresh:
                os.mkdir(os.path.join(path, name), 0o700)
                continue
            if name in keep:
                shown.append(item.path)
                continue
            size, files = _measure(item, left_files)
            if size > left_bytes or files > left_files:
                shown.append(item.path)  # too big to copy for every run: seen as it is, never written
                continue
            if _copy(item, os.path.join(path, name)):
                left_bytes -= size
                left_files -= files
        copy = cls(real, path, {}, skipped, {})
        for target in shown:  # bubblewrap mounts over these: each must exist in the copy, as what it is
            copy.view(os.path.basename(target), target)
        copy.reseed()
        return copy

    def reseed(self) -> None:
        """Take the copy as it is now as what the run starts from (after the caller added to it)."""
        self.seed = _entries(self.path, exclude=set(self.views))

    def changes(self) -> list[Change]:
        """What the run added, changed or removed in the copy, in path order (the read-only
        entries cannot change)."""
        now = _entries(self.path, exclude=set(self.views))
        found = [Change(rel, "added" if rel not in self.seed else "changed") for rel, seen in now.items() if self.seed.get(rel) != seen]
        found += [Change(rel, "removed") for rel in self.seed if rel not in now]
        inside = {change.path.rsplit("/", 1)[0] for change in found if "/" in change.path}
        return sorted((change for change in found if change.path not in inside), key=lambda change: change.path)  # a directory by what is in it

    def read_changed(self, rel: str, limit: int = 1 << 20) -> bytes | None:
        """A regular file of the copy, when the run changed it (never through a link)."""
        if self.seed.get(rel) == _entry(os.path.join(self.path, rel)):
            return None
        try:
            fd = os.open(os.path.join(self.path, rel), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            data = os.read(fd, limit + 1)
            return data if len(data) <= limit else None
        finally:
            os.close(fd)

    def remove(self) -> None:
        """The copy gone, whatever the run did to its modes (a directory it made unreadable would
        keep a copy of your login otherwise) or its depth. OSError when even that fails."""
        from ...store.files import remove_tree

        remove_tree(self.path)


def _measure(item: os.DirEntry, cap: int) -> tuple[int, int]:
    """(bytes, files) of an entry, counting no further than `cap` files."""
    try:
        if not item.is_dir(follow_symlinks=False):
            return (item.stat(follow_symlinks=False).st_size, 1)
    except OSError:
        return (0, 1)
    size = files = 0
    stack = [item.path]
    while stack and files <= cap:
        try:
            with os.scandir(stack.pop()) as listing:
                for inner in listing:
                    files += 1
                    if inner.is_dir(follow_symlinks=False):
                        stack.append(inner.path)
                    else:
                        size += inner.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return size, files


def _copy(item: os.DirEntry, target: str) -> bool:
    """Links stay links (never followed); fifos, sockets and devices are left out."""
    try:
        if item.is_symlink():
            os.symlink(os.readlink(item.path), target)
        elif item.is_dir(follow_symlinks=False):
            import shutil  # here, not on every step's path: it imports bz2 and lzma

            shutil.copytree(item.path, target, symlinks=True, ignore=_special, copy_function=_copy_file)
        elif item.is_file(follow_symlinks=False):
            _copy_file(item.path, target)
        else:
            return False
    except OSError:
        return False  # unreadable: the agent does without it, as it would without the permission
    return True


def _copy_file(source: str, target: str) -> str:
    """The bytes and the mode; not the times or extended attributes (copy2's, a third of the cost)."""
    import shutil

    shutil.copyfile(source, target, follow_symlinks=False)
    shutil.copymode(source, target, follow_symlinks=False)
    return target


def _special(directory: str, names: list[str]) -> list[str]:
    left_out = []
    for name in names:
        try:
            mode = os.lstat(os.path.join(directory, name)).st_mode
        except OSError:
            left_out.append(name)
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            left_out.append(name)
    return left_out


def _entry(path: str) -> tuple | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    kind = "dir" if stat.S_ISDIR(info.st_mode) else "link" if stat.S_ISLNK(info.st_mode) else "file"
    return (kind, info.st_ctime_ns) if kind != "dir" else ("dir",)


def _entries(top: str, exclude: set[str]) -> dict[str, tuple]:
    """Every path under `top` (directories by kind alone: what they hold is listed on its own)."""
    found: dict[str, tuple] = {}
    stack = [("", top)]
    while stack:
        rel, directory = stack.pop()
        try:
            listing = list(os.scandir(directory))
        except OSError:
            continue
        for item in listing:
            if not rel and item.name in exclude:
                continue
            inner = rel + item.name
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                found[inner] = ("dir",)
                stack.append((inner + "/", item.path))
            else:
                found[inner] = ("link" if stat.S_ISLNK(info.st_mode) else "file", info.st_ctime_ns)
    return found
