"""The walk behind a snapshot (snapshot.py): one directory at a time, through its own handle,
its recorded tree when the stat index's signature still holds, else entry by entry, only changed
files read. Paths are str as os.fsdecode makes them (a name that is not UTF-8 keeps its bytes as
surrogates); they become bytes only in the trees written."""

from __future__ import annotations

import errno
import os
import stat
import time
from array import array

from ..encoding.records import record, replace
from ..errors import UwfError
from ..store.builtin_schemas import TREE_HASH
from ..store.cas import CasStore
from .ignore import ALWAYS, IGNORE_FILES, Rules
from .stat_cache import RACY_NS, DirRecord, StatCache
from .tree import Entry, put_blob, show_path, tree_payload

MB = 1 << 20


@record(frozen=True)
class Limits:
    max_file_bytes: int = 50 * MB  # a larger file is left out, with a note naming it
    max_total_bytes: int = 1024 * MB  # a larger snapshot fails, naming the largest files


def size_text(size: int) -> str:
    """A size as a person reads it: 512 bytes, 12.3 KB, 4.0 MB, 1.5 GB."""
    for unit, factor in (("GB", 1 << 30), ("MB", MB), ("KB", 1 << 10)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size} byte{'s' if size != 1 else ''}"


KIND_BITS = stat.S_IFMT(0o170000) | stat.S_IXUSR
KIND_OF = {stat.S_IFREG: "file", stat.S_IFREG | stat.S_IXUSR: "exec", stat.S_IFLNK: "link", stat.S_IFLNK | stat.S_IXUSR: "link"}


MAX_DEPTH = 256  # directories below the workspace; deeper is left out with a note


class OverCap(Exception):
    """More bytes than Limits.max_total_bytes: the walk stops where it is."""


class Walker:
    """One walk: what it counted (for the cap and its message), said, visited (the index keeps
    only those records) and found left out by the ignore rules since `since_ns`."""

    def __init__(self, store: CasStore, limits: Limits, cache: StatCache, trust: bool) -> None:
        self.store = store
        self.limits = limits
        self.cache = cache
        self.trust = trust  # the cache's nodes are the head's: there, without looking
        self.visited: set[str] = set()
        self.racy_after = time.time_ns() - RACY_NS  # a file changed since may change again unseen
        self.notes: list[str] = []
        self.sizes: list[tuple[int, str, str]] = []  # (size, directory, name): the largest are named when over the cap
        self.total = self.count = self.read = 0
        self.redactions: tuple[tuple[bytes, bytes], ...] = ()
        self.exclude: set[str] = set()  # directories left out, by their path in the workspace ("a/b/")
        self.since_ns = 0  # with it: new entries the ignore rules leave out, made since then, are listed
        self.hidden_new: list[str] = []

    def directory(self, path: str, rel: str, rules: Rules, tracked: Tracked, ignored: bool = False, fd: int | None = None) -> str:
        """The tree of one directory: its recorded tree when its listing and stats give the
        recorded signature (the common case: nothing compared entry by entry), else each entry as
        the index saw it or read afresh.

        As git does, ignore rules never untrack: an entry the previous snapshot holds in this
        directory (`tracked`) is kept whatever the rules say now; only new entries are filtered.
        Inside a directory kept that way although its rules ignore it (`ignored`), every new entry
        is left out, as git leaves out what it never enters.

        `fd`: the directory, opened (None: it could not be, and was said). Everything in it is
        listed, stat'ed, read and entered through it, never by its path again: a directory
        swapped for a link while the snapshot runs (another thread's agent in one workspace)
        leads nowhere outside."""
        listing = self._listing(fd)
        rules = rules.below(path, rel, {item.name for item in listing if item.name in IGNORE_FILES})
        self.visited.add(rel)
        cached = self.cache.get(rel)
        if cached is not None and cached.rules != rules.fingerprint:
            cached = None
        known: dict[str, str] = {}  # subdirectories' trees the signature's path has found
        if cached is not None and self.trust and cached.signature is not None:
            tree = self._as_recorded(path, rel, listing, rules, tracked, ignored, cached, known, fd)
            if tree is not None:
                return tree
        before = (cached.entries if cached is not None else None) or {}
        if cached is not None and cached.entries is None:
            cached = None  # a record whose entries cannot be read: the directory is read afresh
        return self._compared(path, rel, listing, rules, tracked, ignored, cached, before, known, fd)

    def _as_recorded(self, path: str, rel: str, listing: list[os.DirEntry], rules: Rules, tracked: Tracked, ignored: bool,
                     cached: DirRecord, known: dict[str, str], fd: int | None) -> str | None:
        """The recorded tree, when the listing gives the recorded signature and every subdirectory
        its recorded tree; None otherwise (the subdirectories' trees found are left in `known`)."""
        if _signature(listing) != cached.signature:
            return None
        same = True
        for name, recorded in cached.dirs.items():
            inner = rel + name + "/"
            if inner in self.exclude or inner.count("/") > MAX_DEPTH:
                return None
            below = ignored or bool(rules.patterns) and rules.ignored(rel, name, True)  # one its rules ignore takes in nothing new
            tree = self._subdirectory(fd, path, name, inner, rules, tracked.below(name), below)
            if tree is None:
                return None  # gone or changed meanwhile: the entry-by-entry pass says so
            known[name] = tree
            same = same and tree == recorded
        if not same or rel == "" and cached.tree != self.cache.root:  # the whole tree unchanged is the tree the index was written with
            return None
        self.count += cached.files
        self.total += cached.bytes
        self.sizes.extend((size, rel, name) for size, name in cached.largest)
        if self.total > self.limits.max_total_bytes:
            raise OverCap()
        return cached.tree

    def _compared(self, path: str, rel: str, listing: list[os.DirEntry], rules: Rules, tracked: Tracked, ignored: bool,
                  cached: DirRecord | None, before: dict, known: dict[str, str], fd: int | None) -> str:
        """The tree of a directory that changed, entry by entry: a file whose stat is as recorded
        is not read; its record and signature made again (no signature while a file in it is
        racy or left out with a note: compared entry by entry next time too)."""
        rows: list[tuple] = []  # (name, kind, ref, size, target)
        seen: dict[str, tuple] = {}
        complete, racy = True, False  # every entry settled and kept: the directory gets a signature
        trust = self.trust
        for item in listing:
            name = item.name
            old = before.get(name)
            is_dir = item.is_dir(follow_symlinks=False)
            left_out = False
            if old is None or (old[0] == "dir") != is_dir or not trust:  # new, or the index is not this thread's: the rules decide
                if name.lower() in ALWAYS:
                    continue
                left_out = ignored or bool(rules.patterns) and rules.ignored(rel, name, is_dir)
                if left_out and not tracked.holds(name, is_dir):
                    if self.since_ns and _ctime(item) >= self.since_ns and len(self.hidden_new) < 100:
                        self.hidden_new.append(rel + name + ("/" if is_dir else ""))  # made by the step, and no record would say so
                    continue
            elif is_dir:  # tracked: kept, but a directory its rules ignore now takes in nothing new
                left_out = ignored or bool(rules.patterns) and rules.ignored(rel, name, True)
            if old is not None and not is_dir and old[0] != "dir":  # the common case, inline: as cached?
                try:
                    info = item.stat(follow_symlinks=False)
                except OSError:
                    info = None
                if (
                    info is not None and old[1] == info.st_size and old[2] == info.st_mtime_ns and old[3] == info.st_ctime_ns
                    and old[4] == info.st_ino and KIND_OF.get(info.st_mode & KIND_BITS) == old[0]
                    and (trust or old[0] == "link" or self.store.nodes.exists(old[5]))
                ):
                    seen[name] = old
                    if old[0] == "link":
                        rows.append((name, "link", None, None, old[5]))
                    else:
                        rows.append((name, old[0], old[5], old[1], None))
                        self.count += 1
                        self.total += old[1]
                        self.sizes.append((old[1], rel, name))
                    continue
            if is_dir:
                inner = rel + name + "/"
                if inner in self.exclude:
                    continue
                if inner.count("/") > MAX_DEPTH:
                    self.notes.append(f"{shown(inner)} is deeper than {MAX_DEPTH} directories; left out")
                    complete = False
                    continue
                tree = known[name] if name in known else self._subdirectory(fd, path, name, inner, rules, tracked.below(name), left_out or ignored)
                if tree is None:
                    complete = False
                    continue
                rows.append((name, "dir", tree, None, None))
                seen[name] = ("dir", tree)  # the parent's record names the child's tree: a record of either alone is never trusted
                continue
            row, record = self.leaf(item, rel, old, fd)
            if row is None:
                complete = False
                continue
            rows.append(row)
            if record is not None:
                seen[name] = record
            else:
                complete, racy = False, True  # read again next time
        if self.total > self.limits.max_total_bytes:
            raise OverCap()
        if self.redactions:  # a name or link target holding a key is never written to the index
            kept = {name: entry for name, entry in seen.items() if not self._holds_key(name, entry)}
            if len(kept) != len(seen):
                seen, complete, racy = kept, False, True  # rows the record does not hold, as a racy file's
        if (
            cached is not None and cached.signature is not None and not racy and seen == before
            and (self.trust or self.store.nodes.exists(cached.tree))
        ):  # the recorded tree holds exactly the recorded entries
            tree = cached.tree
        else:
            tree = self.store.put_built(TREE_HASH, tree_payload(self.entries(rel, rows)))
        signature = _signature(listing) if complete else None
        changed = cached is None or (tree, seen, signature) != (cached.tree, before, cached.signature)
        files = [(row[3], row[0]) for row in rows if row[1] in ("file", "exec")]
        record = DirRecord(tree, rules.fingerprint, seen, signature=signature, files=len(files), bytes_=sum(size for size, _ in files),
                           largest=[list(item) for item in sorted(files, reverse=True)[:3] if item[1] in seen],
                           dirs={row[0]: row[2] for row in rows if row[1] == "dir" and row[0] in seen})
        if self.redactions and self._holds_key(rel):
            self.cache.drop(rel)  # its record, written before the key was one, goes too
        else:
            self.cache.put(rel, record, changed)
        return tree

    def _holds_key(self, name: str, entry: tuple | None = None) -> bool:
        texts = [name] if entry is None or entry[0] != "link" else [name, entry[5]]
        return any(secret in os.fsencode(text) for text in texts for secret, _ in self.redactions)

    def entries(self, rel: str, rows: list[tuple]) -> list[Entry]:
        """A directory's rows as tree entries; a name or a link's target that holds a key's value is
        stored redacted, as a file's bytes are, and said (a name made unique if the redaction meets
        another)."""
        entries = [_entry(*row) for row in rows]
        if not self.redactions:
            return entries
        taken = {entry.name for entry in entries}
        for index, entry in enumerate(entries):
            name, target = redacted(entry.name, self.redactions), redacted(entry.target, self.redactions)
            if name == entry.name and target == entry.target:
                continue
            if name != entry.name:
                unique, number = name, 1
                while unique in taken:
                    number += 1
                    unique = name + b"~%d" % number
                taken.add(unique)
                name = unique
            self.notes.append(f"{shown(rel)}{show_path(name)}: its {'name' if name != entry.name else 'link target'} held a key: stored redacted")
            entries[index] = replace(entry, name=name, target=target)
        return entries

    def _listing(self, fd: int | None) -> list[os.DirEntry]:
        if fd is None:
            return []
        try:
            return list(os.scandir(fd))
        except OSError:
            return []  # opened, then unreadable: gone meanwhile (said by the listing of what holds it)

    def open_directory(self, name: str, dir_fd: int | None, rel: str) -> int | None:
        """A directory opened without following a link (the workspace itself: `dir_fd` None, as
        named); None, said, when it is gone or no longer a directory."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | (os.O_NOFOLLOW if dir_fd is not None else 0)
        try:
            return os.open(name, flags, dir_fd=dir_fd)
        except FileNotFoundError:
            self.notes.append(f"{shown(rel) or '.'} vanished during the snapshot; {'left out' if rel else 'kept as an empty directory'}")
        except (NotADirectoryError, OSError) as exc:
            why = "is no longer a directory (changed during the snapshot)" if exc.errno in (errno.ENOTDIR, errno.ELOOP) else f"cannot be read ({exc.strerror})"
            self.notes.append(f"{shown(rel) or '.'} {why}; {'left out' if rel else 'kept as an empty directory'}")
        return None

    def _subdirectory(self, fd: int | None, path: str, name: str, inner: str, rules: Rules, tracked: Tracked, ignored: bool) -> str | None:
        child = self.open_directory(name, fd, inner) if fd is not None else None
        if child is None:
            return None
        try:
            return self.directory(os.path.join(path, name), inner, rules, tracked, ignored, child)
        finally:
            os.close(child)

    def leaf(self, item: os.DirEntry, rel: str, old: tuple | None, fd: int | None) -> tuple[tuple | None, tuple | None]:
        """A file's or link's row, and its cache record: `old` itself when the stat still matches
        it (nothing read), None while the file is racy."""
        name = item.name
        try:
            info = item.stat(follow_symlinks=False)
        except FileNotFoundError:
            self.notes.append(f"{shown(rel + name)} vanished during the snapshot; left out")
            return None, None
        except OSError as exc:
            self.notes.append(f"{shown(rel + name)} cannot be read ({exc.strerror}); left out")
            return None, None
        mode = info.st_mode
        if stat.S_ISREG(mode):
            kind = "exec" if mode & stat.S_IXUSR else "file"
        elif stat.S_ISLNK(mode):
            kind = "link"
        else:
            self.notes.append(f"{shown(rel + name)} is not a file, directory or link; left out")
            return None, None
        size = info.st_size
        settled = max(info.st_mtime_ns, info.st_ctime_ns) < self.racy_after
        signature = (info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        if kind == "link":
            try:
                target = os.fsdecode(os.readlink(name, dir_fd=fd))
            except OSError:
                self.notes.append(f"{shown(rel + name)} vanished during the snapshot; left out")
                return None, None
            return (name, kind, None, None, target), ("link", size, *signature, target) if settled else None
        if size > self.limits.max_file_bytes:
            self.notes.append(
                f"{shown(rel + name)} ({size_text(size)}) is over workspace.maxFileBytes ({size_text(self.limits.max_file_bytes)}); left out"
            )
            return None, None
        read = self.read_file(name, rel + name, fd)
        if read is None:
            return None, None
        ref, size = read
        return self._counted(rel, name, kind, ref, size), (kind, size, *signature, ref) if settled else None

    def _counted(self, rel: str, name: str, kind: str, ref: str, size: int) -> tuple:
        self.count += 1
        self.total += size
        self.sizes.append((size, rel, name))
        if self.total > self.limits.max_total_bytes:
            raise OverCap()  # stop here: a workspace of the whole disk is not read to the end
        return (name, kind, ref, size, None)

    def read_file(self, name: str, rel: str, fd: int | None) -> tuple[str, int] | None:
        try:
            with open(os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd), "rb") as handle:
                data = handle.read(self.limits.max_file_bytes + 1)
        except FileNotFoundError:
            self.notes.append(f"{shown(rel)} vanished during the snapshot; left out")
            return None
        except OSError as exc:
            self.notes.append(f"{shown(rel)} cannot be read ({exc.strerror}); left out")
            return None
        if len(data) > self.limits.max_file_bytes:
            self.notes.append(f"{shown(rel)} grew over workspace.maxFileBytes during the snapshot; left out")
            return None
        held = [replacement for secret, replacement in self.redactions if secret in data]
        if held:
            for secret, replacement in self.redactions:
                data = data.replace(secret, replacement)
            names = ", ".join(item.decode()[10:-1] for item in held)
            self.notes.append(f"{shown(rel)} holds the value of {names}: stored redacted")
        self.read += 1
        return put_blob(self.store, data), len(data)


class Tracked:
    """What the previous snapshot holds in one directory. Nothing is read until an ignore rule
    would leave an entry out: then this directory's tree, found through its parents' (the common
    snapshot never reads a tree back)."""

    __slots__ = ("store", "_tree", "parent", "name", "_entries")

    def __init__(self, store: CasStore, tree: str | None, parent: Tracked | None = None, name: str = "") -> None:
        self.store = store
        self._tree = tree
        self.parent = parent
        self.name = name
        self._entries: dict[str, Entry] | None = None

    def below(self, name: str) -> Tracked:
        return Tracked(self.store, None, self, name)

    def holds(self, name: str, is_dir: bool) -> bool:
        entry = self._read().get(name)
        return entry is not None and (entry.kind == "dir") == is_dir

    def _read(self) -> dict[str, Entry]:
        if self._entries is None:
            self._entries = {}
            tree = self._tree
            if self.parent is not None:
                entry = self.parent._read().get(self.name)
                tree = entry.ref if entry is not None and entry.kind == "dir" else None
            if tree is not None:
                from .tree import read_tree

                try:
                    self._entries = {os.fsdecode(entry.name): entry for entry in read_tree(self.store, tree)}
                except UwfError:
                    pass  # a previous tree that cannot be read tracks nothing
        return self._entries


def _signature(listing: list[os.DirEntry]) -> str | None:
    """Every entry's name and stat (a directory's name alone: its own record is checked) in one
    digest, packed without formatting a number; None when an entry cannot be looked at. In the
    listing's order: an unchanged directory lists in the same order (one listed otherwise is
    only compared entry by entry, as a changed one is)."""
    import xxhash

    names: list[str] = []
    numbers: list[int] = []  # per entry: -1 for a directory, else mode, size, mtime, ctime, inode
    try:
        for item in listing:
            names.append(item.name)
            if item.is_dir(follow_symlinks=False):
                numbers.append(-1)
            else:
                info = item.stat(follow_symlinks=False)
                numbers += (info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
    except OSError:
        return None
    try:
        packed = array("q", numbers).tobytes()
    except OverflowError:  # an inode number past 2**63 (some network file systems)
        packed = repr(numbers).encode()
    return xxhash.xxh3_128_hexdigest("\0".join(names).encode("utf-8", "surrogateescape") + b"\0\0" + packed)


def _ctime(item: os.DirEntry) -> int:
    try:
        return item.stat(follow_symlinks=False).st_ctime_ns
    except OSError:
        return 0


def redacted(value: bytes | None, redactions: tuple[tuple[bytes, bytes], ...]) -> bytes | None:
    if value is None:
        return None
    for secret, replacement in redactions:
        value = value.replace(secret, replacement)
    return value


def _entry(name: str, kind: str, ref: str | None, size: int | None, target: str | None) -> Entry:
    return Entry(os.fsencode(name), kind, ref, size, None if target is None else os.fsencode(target))


def shown(path: str) -> str:
    return show_path(os.fsencode(path))
