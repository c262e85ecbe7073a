"""Where a workspace holds git repositories, found by a walk that a cache keeps cheap.

A repository entry is a `.git` of any kind (dotgit) or a directory that is itself a git directory
(bare: HEAD beside objects/, refs/ or commondir). The walk enters neither, follows no link, and
records each directory's ctime before it lists it: an entry made, removed or renamed in a
directory moves its ctime, and no process can set a ctime back. So a walk taken again lists only
the directories whose ctime moved, and walks whole what is new in them; one saved after a run
(`<cache>/git-walk/`, host-local, uwf's alone) makes the next run's survey a stat per directory.
Each run leaves a marker beside it (`.pending.<pid>`) until its check after the run is done: a
marker whose process is gone is a run uwf never saw to its end, which the next survey checks.
A ctime too recent to be sure of (the kernel stamps with a coarse clock) is recorded as unknown.
The walk does not enter what it is told to pass by (`prune`): uwf's scratch directory, which the
sandbox hides from the agent, holds other runs' private copies of .git, which are no findings —
but it does walk what the run may write there (`keep`: a step agent's staging directory).
"""

from __future__ import annotations

import json
import os
import stat
import time

from ....encoding.records import field, record

MAX_DEPTH = 1024  # levels below the workspace; a deeper directory is said, not walked
MAX_DIRS = 1_000_000
MARKS = frozenset({"HEAD", "objects", "refs", "commondir"})  # HEAD beside any other: a git directory
RACY_NS = 100_000_000  # a ctime this close to the walk is not trusted to mark the listing
FORMAT = 1


class UncheckableWorkspace(Exception):
    """A workspace uwf cannot walk to the end (deeper than MAX_DEPTH, more than MAX_DIRS, unreadable)."""


@record(frozen=True)
class Found:
    path: str
    kind: str  # dotgit or bare
    identity: tuple  # (st_dev, st_ino): a repository moved keeps it


@record
class Walk:
    """The workspace's directories (path -> ctime, 0 when unknown) and the repository entries
    found in each directory's listing (a bare one is found in its own)."""

    workspace: str
    skip: str | None  # the main .git: its private copy is the sandbox's, and it is no finding
    dirs: dict
    found: dict  # listing directory -> [Found]
    pending: tuple[str, ...] = ()  # the markers of runs whose check after them never came (their uwf was killed)
    changed: bool = False  # not as saved: a refresh listed a directory again, or it was never saved
    unchecked: list = field(default_factory=list)  # what the last walk could not list (too deep, too many, unreadable)
    prune: tuple = ()  # directories not entered: the agent cannot write them (hidden in its sandbox)
    keep: tuple = ()  # directories inside a pruned one that the run can write: walked all the same
    keys: tuple = ()  # values never written to the cache: a walk with a path that holds one is not kept

    def entries(self) -> list[Found]:
        return [item for items in self.found.values() for item in items]


def walk(workspace: str, skip: str | None, prune: tuple[str, ...] = (), keep: tuple[str, ...] = ()) -> Walk:
    taken = Walk(workspace, skip, {}, {}, changed=True, prune=prune, keep=keep)
    _scan(taken, [workspace], fresh=True)
    return taken


def load(cache: str, workspace: str, skip: str | None, prune: tuple[str, ...] = (), keep: tuple[str, ...] = ()) -> Walk | None:
    """The walk saved for this workspace, or None (none, another's, or not one uwf wrote)."""
    taken = _load(cache, workspace, skip, prune)
    if taken is not None:
        taken.keep = keep  # this run's: listed by the next refresh; another run's is not this one's to check
        for pruned in prune:
            for path in [path for path in taken.dirs if path.startswith(pruned + "/")]:
                del taken.dirs[path]
            for path in [path for path in taken.found if path.startswith(pruned + "/")]:
                del taken.found[path]
    return taken


def refresh(taken: Walk) -> list[Found]:
    """The directories whose ctime moved listed again, what is new in them walked whole; the
    repository entries found in them (the rest are as they were)."""
    changed, gone = [], []
    for path, ctime in taken.dirs.items():
        now = _ctime(path)
        if now is None:
            gone.append(path)
        elif now != ctime or not ctime:
            changed.append(path)
    changed += [path for path in taken.keep if path not in taken.dirs and os.path.isdir(path)]
    for path in gone:
        del taken.dirs[path]
        taken.found.pop(path, None)
    for path in changed:
        taken.found.pop(path, None)
    taken.changed = taken.changed or bool(changed or gone)
    return _scan(taken, changed, fresh=False)


def save(taken: Walk, cache: str, pending: bool) -> None:
    """The walk for the next run's survey (atomically: a step beside this one may read it), when
    it is not as saved; `pending` before a run (a marker beside it), so that a run whose check
    never came is checked by the next one against the walk as that run found it."""
    from ....store.files import atomic_write

    marker = f"{cache}.pending.{os.getpid()}"  # one per run: runs in one workspace at once each keep theirs
    try:
        for stale in taken.pending:  # the runs that died before this walk was loaded: checked against it by now
            if os.path.exists(stale):
                os.unlink(stale)
        taken.pending = ()
        # While another run here is in flight (or died unchecked since), the walk saved is the one
        # it will be checked against: this run's, which may hold what that run made, must not replace it.
        others = _other_markers(cache, marker)
        if (taken.changed or not os.path.exists(cache)) and not others:
            dirs, found = _without_keys(taken)
            found = {path: [[item.path, item.kind, list(item.identity)] for item in items] for path, items in found.items()}
            data = {"format": FORMAT, "workspace": taken.workspace, "skip": taken.skip, "prune": list(taken.prune),
                    "dirs": dirs, "found": found}
            atomic_write(cache, json.dumps(data, separators=(",", ":")).encode(), mode=0o600, sync=False)
            taken.changed = False
        if pending:
            open(marker, "wb").close()
        elif os.path.exists(marker):
            os.unlink(marker)
    except OSError:
        pass  # only a cache: the next survey walks the workspace whole


def _without_keys(taken: Walk) -> tuple[dict, dict]:
    """The walk as it may be written: a directory whose path holds a key's value is left out, and
    its parent kept with its ctime unknown, so the next refresh lists the parent again and walks
    the directory whole, as new (slower there, and no key on the disk)."""
    if not taken.keys:
        return taken.dirs, taken.found

    def holds(path: str) -> bool:
        return any(key in os.fsencode(path) for key in taken.keys)

    dirs = {path: ctime for path, ctime in taken.dirs.items() if not holds(path)}
    found = {path: items for path, items in taken.found.items() if not holds(path) and not any(holds(item.path) for item in items)}

    def unknown(path: str) -> None:  # the nearest directory kept: listed again by the next refresh
        while path not in dirs and path != os.path.dirname(path):
            path = os.path.dirname(path)
        if path in dirs:
            dirs[path] = 0

    for path in taken.dirs:
        if path not in dirs:
            unknown(os.path.dirname(path))
    for path in taken.found:
        if path not in found:
            unknown(path)
    return dirs, found


def _dead_markers(cache: str) -> list[str]:
    """The pending markers of runs whose uwf is gone (killed before its check): the cache is
    host-local, so a marker's pid is this host's."""
    directory, name = os.path.split(cache)
    dead = []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    for entry in names:
        pid = entry.removeprefix(name + ".pending.")
        if entry.startswith(name + ".pending.") and pid.isdigit() and not _alive(int(pid)):
            dead.append(os.path.join(directory, entry))
    return dead


def _other_markers(cache: str, own: str) -> list[str]:
    """The pending markers of the other runs in this workspace: in flight, or dead and not yet checked."""
    directory, name = os.path.split(cache)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return [os.path.join(directory, entry) for entry in names
            if entry.startswith(name + ".pending.") and os.path.join(directory, entry) != own]


def _alive(pid: int) -> bool:
    from ....store.records import process_alive

    return process_alive(pid)


def forget(taken: Walk, path: str) -> None:
    """A directory uwf changed itself (an entry renamed aside): listed again next time."""
    if path in taken.dirs:
        taken.dirs[path] = 0
        taken.changed = True


def _load(cache: str, workspace: str, skip: str | None, prune: tuple[str, ...]) -> Walk | None:
    try:
        with open(cache, "rb") as handle:
            data = json.loads(handle.read())
        if (data.get("format") != FORMAT or data.get("workspace") != workspace or data.get("skip") != skip
                or data.get("prune", []) != list(prune)):
            return None
        found = {path: [Found(item[0], item[1], tuple(item[2])) for item in items] for path, items in data["found"].items()}
        dirs = {str(path): int(ctime) for path, ctime in data["dirs"].items()}
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None  # none, or not one uwf wrote: walked afresh
    if workspace not in dirs:
        return None
    return Walk(workspace, skip, dirs, found, tuple(_dead_markers(cache)), prune=prune)


def _scan(taken: Walk, tops: list[str], fresh: bool) -> list[Found]:
    """List `tops`, and walk whole every directory below them that the walk does not know. What
    cannot be listed is said in `taken.unchecked` and the walk goes on: what it finds elsewhere is
    found all the same."""
    new: list[Found] = []
    taken.unchecked = []
    base = taken.workspace.count("/")
    stack = list(tops)
    racy_after = time.time_ns() - RACY_NS
    walked = 0
    while stack:
        directory = stack.pop()
        walked += 1
        if walked > MAX_DIRS:
            taken.unchecked.append(f"it holds more than {MAX_DIRS:,} directories")
            break
        listed = _list(directory)
        if listed is None:
            taken.dirs.pop(directory, None)
            continue
        if isinstance(listed, str):
            taken.unchecked.append(listed)
            continue
        ctime, entries = listed
        taken.dirs[directory] = ctime if ctime < racy_after else 0
        marks = [entry.name for entry in entries if entry.name in MARKS]
        if "HEAD" in marks and len(marks) > 1 and directory != taken.skip:
            item = Found(directory, "bare", _identity(directory))
            taken.found[directory] = [item]
            new.append(item)
            if not fresh:
                _prune_below(taken, directory)  # a directory that became a git directory is not entered
            continue
        items = []
        for entry in entries:
            if entry.name.lower() == ".git":
                if entry.path != taken.skip:
                    items.append(Found(entry.path, "dotgit", _identity(entry.path)))
            elif entry.path in taken.prune:
                stack += [path for path in taken.keep if os.path.dirname(path) == entry.path and (fresh or path not in taken.dirs)]
            elif entry.is_dir(follow_symlinks=False) and (fresh or entry.path not in taken.dirs):
                if entry.path.count("/") - base > MAX_DEPTH:
                    taken.unchecked.append(f"{entry.path[:120]}… is deeper than {MAX_DEPTH} levels")
                    continue
                stack.append(entry.path)
        if items:
            taken.found[directory] = items
            new += items
    return new


def _list(directory: str):
    """(ctime, entries) of a directory; None when it is gone; a string saying why it cannot be
    listed. One the user owns but cannot read (an agent's chmod 000) is opened for the listing
    and given its mode back; one of another user's, the agent cannot write either."""
    try:
        info = os.lstat(directory)  # before the listing: a change after it moves the ctime again
        with os.scandir(directory) as listing:
            return info.st_ctime_ns, list(listing)
    except FileNotFoundError:
        return None
    except PermissionError:
        if info.st_uid != os.geteuid():
            return (info.st_ctime_ns, [])
        try:
            os.chmod(directory, info.st_mode | 0o500)
            try:
                with os.scandir(directory) as listing:
                    entries = list(listing)
            finally:
                os.chmod(directory, info.st_mode & 0o7777)
        except OSError as exc:
            return f"{directory[:120]} cannot be read ({exc.strerror or exc})"
        return os.lstat(directory).st_ctime_ns, entries
    except OSError as exc:
        return f"{directory[:120]} cannot be read ({exc.strerror or exc})"


def _prune_below(taken: Walk, directory: str) -> None:
    prefix = directory.rstrip("/") + "/"
    for path in [path for path in taken.dirs if path.startswith(prefix)]:
        del taken.dirs[path]
    for path in [path for path in taken.found if path.startswith(prefix)]:
        del taken.found[path]


def _identity(path: str) -> tuple:
    """What tells one repository entry from another made in its place: its inode — and for a
    link, which no read-only mount pins, also its target and ctime (a link made anew on a freed
    inode number has another ctime)."""
    try:
        info = os.lstat(path)
    except OSError:
        return (path,)
    if stat.S_ISLNK(info.st_mode):
        try:
            return (info.st_dev, info.st_ino, info.st_ctime_ns, os.readlink(path))
        except OSError:
            return (path,)
    return (info.st_dev, info.st_ino)


def empty_dot_gits(taken: Walk) -> list[str]:
    """The `.git` directories that hold nothing (no repository yet: a placeholder, a `git init`
    to come): filled in place, they keep their inode, so each is looked at again by name."""
    empty = []
    for item in taken.entries():
        if item.kind == "dotgit" and os.path.isdir(item.path) and not os.path.islink(item.path):
            try:
                if not os.listdir(item.path):
                    empty.append(item.path)
            except OSError:
                continue
    return empty


def _ctime(path: str) -> int | None:
    try:
        return os.lstat(path).st_ctime_ns
    except OSError:
        return None
