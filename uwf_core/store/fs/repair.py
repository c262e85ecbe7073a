"""`uwf cas fsck --repair` on a directory root: a damaged `cas/nodes.sqlite` rebuilt from every
row that can still be read.

A file SQLite opens and finds whole (header, `pragma integrity_check`) is left as it is. Otherwise
rows come from SQLite as far as it reads them and from every page salvage.py parses, the file's and
the WAL's; each is verified by its hash as the CAS verifies a read, so nothing damaged gets in and
nothing readable is left out. The verified nodes are written to a new file through NodeDb (its
schema and version), in the order they were first written; the damaged file and its -wal/-shm are
renamed `nodes.sqlite.damaged-<UTC time>` beside it, and the new file takes its place.

Meanwhile no command writes nodes (the lock gc sweeps under), no head moves (the index lock), gc and reindex wait (the type index's lock), no workflow
is registered (the registry's) and no step runs: each thread's step lock is tried once, and a step
in progress makes the repair refuse, since its nodes would go to the file being set aside. It
refuses too while another process has the file open (see `_refuse_if_open`). Derived data is not
carried over: it is rebuilt as it is needed.
"""

from __future__ import annotations

import errno
import fcntl
import os
import sqlite3
import time
from contextlib import contextmanager

from ...errors import LockedError, UwfError
from ..records import SET_ASIDE, RepairReport
from .node_db import DB_FILES, DB_NAME, NodeDb, check_result, file_problem, node_data, open_read_only
from .root import PUBLISH_LOCK, Root
from .salvage import node_rows


def repair_node_file(root: Root, db: NodeDb) -> RepairReport:
    """Rebuild the node file at `db.path` if it is damaged (the caller then reports what was lost)."""
    path = db.path
    with _held(root):
        problem = damage_of(path)
        if problem is None:
            return RepairReport(damaged=False)
        db.close()  # this process reads the new file from here on
        _refuse_if_open(path)
        scratch = _scratch_dir(root)
        try:
            recovered, rejected = _rebuild(path, scratch)
            _refuse_if_open(path)
            set_aside = _swap(path, os.path.join(scratch, DB_NAME))
        except OSError as exc:
            raise UwfError(f"cannot repair the node store {path}: {exc.strerror}; it was left as it was") from None
        finally:
            _remove_tree(scratch)
    return RepairReport(True, problem, recovered, rejected, set_aside)


def damage_of(path: str) -> str | None:
    """What is wrong with the file (its header, or what SQLite's integrity check says), or None."""
    if not os.path.lexists(path):
        return None
    whole = file_problem(path)
    if whole:
        return whole
    try:
        conn = open_read_only(path, held=True)
        try:
            bad = check_result(conn.execute("pragma integrity_check").fetchall())
            misnamed = None if bad else _misnamed_row(conn)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return f"SQLite cannot read it: {exc}"
    if bad:
        return f"damaged pages: {bad}"
    return f"damaged rows: {misnamed}" if misnamed else None


def _misnamed_row(conn: sqlite3.Connection) -> str | None:
    """A row whose bytes are not the node its hash column names (a flipped byte in either, which
    SQLite's own check cannot see): what it is, or None when every row is its node."""
    for hash_, data in conn.execute("select cast(hash as blob), data from nodes"):
        stated = bytes(hash_).decode("ascii", "replace")
        try:
            name = _content_name(node_data(data))
        except UwfError:
            return f"row {stated} holds no node"
        if name != stated:
            return f"row {stated} holds node {name}"
    return None


# -- the rebuild ---------------------------------------------------------------------------------


def _rebuild(path: str, scratch: str) -> tuple[int, int]:
    """Write every verified node found into a new node file in `scratch`: (nodes, rows refused)."""
    from ..cas import _verified_node  # the CAS's own check of a read

    new = NodeDb(scratch)
    written: set[str] = set()
    rejected = 0
    with new.batch():
        for seq, _, _, data, touched in _candidates(path):
            try:
                envelope = node_data(data)
                hash_ = _content_name(envelope)  # not the row's hash column, which can be damaged too
                if hash_ in written:
                    continue
                node = _verified_node(hash_, envelope)
            except UwfError:
                rejected += 1
                continue
            row = (hash_, node.type, data, touched)
            # The old seq keeps the order of first writes (a type's members are listed in it);
            # a seq two copies claim goes to the later one's end.
            if not new.write_query("insert or ignore into nodes (seq, hash, type, data, touched) values (?, ?, ?, ?, ?)", (seq, *row)):
                new.write_query("insert into nodes (hash, type, data, touched) values (?, ?, ?, ?)", row)
            written.add(hash_)
    new.checkpoint()
    new.close()
    return len(written), rejected


def _content_name(envelope: bytes) -> str:
    """A node's name from its own bytes, as the CAS names it: a row whose hash text lost a byte is
    still recovered, under the name its content has."""
    from ...encoding.cbor import decode_envelope
    from ...encoding.ids import is_cas_ref, xxh64_hash

    decoded, payload_bytes = decode_envelope(envelope)
    type_hash = decoded.get("type") if isinstance(decoded, dict) else None
    if not is_cas_ref(type_hash):
        raise UwfError("not a node envelope")
    own = xxh64_hash(payload_bytes)
    return own if own == type_hash else xxh64_hash(type_hash.encode("ascii") + payload_bytes)


def _candidates(path: str):
    """(seq, hash, type, data, touched) of each row: what SQLite still reads first (the rows it
    reads are the newest), then what salvage.py finds on the pages."""
    yield from _sqlite_rows(path)
    yield from node_rows(path)


def _sqlite_rows(path: str):
    try:
        conn = open_read_only(path, held=True)
    except sqlite3.Error:
        return
    try:
        cursor = conn.execute("select seq, cast(hash as blob), cast(type as blob), data, touched from nodes order by seq")
        while True:
            row = cursor.fetchone()  # one at a time: a damaged page ends the scan, not what came before
            if row is None:
                return
            seq, hash_, type_, data, touched = row  # hash and type as bytes: a damaged byte there ends no scan
            if isinstance(data, (bytes, str)):
                yield seq, bytes(hash_ or b"").decode("ascii", "replace"), bytes(type_ or b"").decode("ascii", "replace"), data if isinstance(data, bytes) else data.encode(), _time(touched)
    except sqlite3.Error:
        return
    finally:
        conn.close()


def _time(touched: object) -> float:
    return float(touched) if isinstance(touched, (int, float)) else time.time()


def _swap(path: str, new: str) -> list[str]:
    """Rename the damaged file (and its -wal, -shm) aside, then move the new one in: the WAL goes
    before the new file arrives, or SQLite would replay the old file's frames into it. A rename
    that fails puts back what was moved."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = f"{path}{SET_ASIDE}{stamp}"
    count = 2
    while any(os.path.lexists(aside + suffix) for suffix in ("", "-wal", "-shm")):
        aside, count = f"{path}{SET_ASIDE}{stamp}-{count}", count + 1
    moved: list[tuple[str, str]] = []
    try:
        for name in DB_FILES:
            suffix = name[len(DB_NAME) :]
            if os.path.lexists(path + suffix):
                os.rename(path + suffix, aside + suffix)
                moved.append((path + suffix, aside + suffix))
        _move_in(new, path)
    except OSError:
        for source, target in reversed(moved):
            try:
                os.rename(target, source)
            except OSError:
                pass
        raise
    fd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(fd)  # the renames are durable before anyone is told
    finally:
        os.close(fd)
    return [os.path.basename(target) for _, target in moved]


def _move_in(new: str, path: str) -> None:
    try:
        os.replace(new, path)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        import shutil  # the scratch space is on another file system

        shutil.copyfile(new, path + ".repair.tmp")
        os.replace(path + ".repair.tmp", path)


def _scratch_dir(root: Root) -> str:
    import tempfile

    try:
        os.makedirs(root.join("tmp"), exist_ok=True)
        return tempfile.mkdtemp(prefix="repair-", dir=root.join("tmp"))
    except OSError as exc:
        raise UwfError(f"cannot repair the node store: cannot create a scratch directory in {root.join('tmp')}: {exc.strerror}") from None


def _remove_tree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


# -- holding the root still ----------------------------------------------------------------------

SHARED_FIRST, SHARED_SIZE = 0x40000000 + 2, 510  # SQLite's shared-lock bytes (os_unix.c)


def _refuse_if_open(path: str) -> None:
    """Refuse while another process has the file open (the workbench, a worker): a connection in WAL
    mode holds a read lock on SQLite's shared-lock bytes for as long as it is open, and one left on
    the old file would, when it closes, delete the new file's WAL and shared memory by their names.
    (Our own process's locks never conflict with this probe; it holds no connection here.)"""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return  # not a file that can be opened: no one else has it open as a database either
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, SHARED_SIZE, SHARED_FIRST)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            raise LockedError(f"the node file {path} is open in another process (the workbench, a worker?): close it, then repair") from None
    finally:
        os.close(fd)  # drops the probe's lock


@contextmanager
def _held(root: Root):
    from ..files import PatientLock

    publish = PatientLock(root.lock(PUBLISH_LOCK, wait=False), 60, "the repair waited for commands writing nodes")
    with publish, root.lock("cas-index"), root.lock("index"), root.lock("registry"):
        held: list[int] = []
        try:
            for thread in _threads(root):
                held.append(_step_lock(root, thread))
            yield
        finally:
            for fd in held:
                os.close(fd)  # closing drops the flock


def _threads(root: Root) -> list[str]:
    """Every active thread, and every thread with a step lock file (heads are read under the index
    lock, so no thread is added meanwhile)."""
    from .threads import FsThreadIndex

    threads = set(FsThreadIndex(root).heads())
    try:
        names = os.listdir(root.locks_dir)
    except OSError:
        names = []
    threads.update(name[len("thread-") : -len(".lock")] for name in names if name.startswith("thread-") and name.endswith(".lock"))
    return sorted(threads)


def _step_lock(root: Root, thread: str) -> int:
    """Take a thread's step lock without a word written to it: what a step that died holding it
    left there is how the next step learns of the interrupted attempt."""
    from .locks import FsStepLocks

    path = os.path.join(root.locks_dir, f"thread-{thread}.lock")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise UwfError(f"cannot lock {path}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise UwfError(f"cannot lock {path}: {exc.strerror}") from None
        running = FsStepLocks(root).running(thread)
        who = running.describe() if running else "another process"
        raise LockedError(f"thread {thread} is being stepped by {who}: repair the node file when no step runs") from None
    return fd
