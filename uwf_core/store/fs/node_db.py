"""`cas/nodes.sqlite`: every node of a directory root in one SQLite file, plus derived data.

One small file per node made the disk hold ~20x what the data weighs (the block size) and
cost an fsync per node; in one SQLite file (WAL, synchronous=FULL) a step's nodes are one
transaction and one fsync, and the disk holds about what they weigh (docs/explanation/benchmarks.md).
The bytes stored are the CBOR envelope the CAS hashes, zlib-compressed when that saves space (a
node of some size: file contents in workspace snapshots, prompts). A CBOR envelope begins with
0xA3 (a map of three), a zlib stream with 0x78, so each row says which it is; version 1 files
hold only the former, and are marked version 2 when this uwf first opens them for writing.

Tables: `nodes` (hash → type, when last written or freshened: gc's grace, bytes),
`derived` (rebuildable data keyed by a node hash, e.g. a head's step count; dropping it
loses nothing), `meta` (the schema version, for later migrations). A node file made since
issue 41 keeps `data` last in the row: a large node is then written through SQLite's blob I/O
without SQLite building the row in memory (a `zeroblob` not last is materialised, ~2x the node);
an older file keeps its columns as they are (every statement names them), and costs that memory.
"""

from __future__ import annotations

import os
import sqlite3
import time
from _thread import (
    _local as thread_local,  # threading.local itself, without importing threading (~1 ms)
)
from contextlib import contextmanager

from ...errors import CorruptError, UwfError
from .file_check import empty_file, file_problem, has_frames, wal_damage

DB_NAME = "nodes.sqlite"
DB_FILES = (DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm", DB_NAME + "-journal")
SCHEMA_VERSION = 2
COMPRESS_FROM = 256  # bytes: a smaller node is stored as it is
HOLD = 8 << 20  # a large node's compressed bytes kept from counting them to writing them; past it, compressed again
MAX_NODE_BYTES = 1 << 30  # what one row may inflate to (a staged row is an agent's)
BUSY_SECONDS = 30.0  # another process's write: wait this long before calling the store busy

SCHEMA = """
create table if not exists meta (key text primary key, value text not null);
create table if not exists nodes (
    seq integer primary key,
    hash text not null unique,
    type text not null,
    touched real not null,
    data blob not null
);
create index if not exists nodes_by_type on nodes (type, seq);
create table if not exists derived (key text primary key, value blob not null);
"""


class NodeDb:
    """One connection per thread (the TUI's workers read while a step writes), opened on first use.
    Reads of a root with no node file yet find nothing and create nothing."""

    def __init__(self, cas_dir: str, *, durable: bool = True) -> None:
        """`durable=False`: a scratch file (a step agent's staging file), written without fsync or
        a journal on disk; what matters is what uwf takes from it into the durable one."""
        self.path = os.path.join(cas_dir, DB_NAME)
        self.durable = durable
        self._local = thread_local()

    # -- connections ---------------------------------------------------------------------

    def _connection(self, write: bool) -> sqlite3.Connection | None:
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is not None and (not write or local.writable):
            return conn
        if not write and not os.path.exists(self.path):
            return None
        if conn is not None:
            conn.close()
            local.conn = None  # should the writable one not open (a read-only root), reads open anew
        local.conn, local.writable = self._open(write)
        local.depth = 0
        return local.conn

    def close(self) -> None:
        """Close this thread's connection (the next use opens the file again)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            conn.close()

    def _open(self, write: bool) -> tuple[sqlite3.Connection, bool]:
        if self.durable and has_frames(self.path + "-wal"):
            damage = wal_damage(self.path)
            if damage:  # nothing is written, and no connection that could checkpoint it is opened
                if write:
                    raise CorruptError(f"cannot write the node store {self.path}: damaged WAL: {damage}; run `uwf cas fsck --repair` to recover them")
                return open_read_only(self.path), False
        if self.durable and empty_file(self.path):  # set up anew, it would hide that every node is gone
            raise CorruptError(f"the node store {self.path} is empty (0 bytes): run `uwf cas fsck --repair`")
        try:
            if write:
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None)
            conn.execute("pragma synchronous=FULL" if self.durable else "pragma synchronous=OFF")  # a head is never durable before its nodes
            conn.execute("pragma wal_autocheckpoint=256")  # ~1 MB of WAL, then into the file...
            conn.execute("pragma journal_size_limit=1048576")  # ...and the WAL file cut back to 1 MB
            conn.execute("pragma secure_delete=ON")  # a deleted node's bytes are zeroed, not left in a free page
            version = self._version(conn)
            if version is None:
                self._set_up(conn)
            elif version < SCHEMA_VERSION:
                conn.execute("update meta set value = ? where key = 'version'", (str(SCHEMA_VERSION),))
            return conn, True
        except (sqlite3.Error, OSError) as exc:
            if write or not _read_only(exc) or _damaged_header(self.path):
                raise _error(exc, f"cannot open the node store {self.path}", self.path) from None
        # A read-only root (or a full disk): nothing can be written beside the node file, so it is
        # read as it stands, without the WAL's shared-memory file (what a clean close left).
        try:
            conn = sqlite3.connect(f"file:{self.path}?immutable=1", uri=True, isolation_level=None)
            self._check_version(conn)
            return conn, False
        except _NotSetUp:
            raise UwfError(f"the node store {self.path} was never set up and the root is read-only") from None
        except sqlite3.Error as exc:
            raise _error(exc, f"cannot open the node store {self.path}", self.path) from None

    def _version(self, conn: sqlite3.Connection) -> int | None:
        """The file's version; None when it was never set up."""
        try:
            return self._check_version(conn)
        except _NotSetUp:
            return None

    def _check_version(self, conn: sqlite3.Connection) -> int:
        try:
            row = conn.execute("select value from meta where key = 'version'").fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                raise _NotSetUp() from None
            raise
        if row is None:
            raise _NotSetUp()
        if int(row[0]) > SCHEMA_VERSION:
            raise UwfError(f"the node store {self.path} is version {row[0]}, newer than this uwf reads ({SCHEMA_VERSION}): upgrade uwf")
        return int(row[0])

    def _set_up(self, conn: sqlite3.Connection) -> None:
        conn.execute("pragma journal_mode=WAL" if self.durable else "pragma journal_mode=MEMORY")  # readers never wait for a writer
        conn.executescript(SCHEMA)
        conn.execute("insert or ignore into meta (key, value) values ('version', ?)", (str(SCHEMA_VERSION),))

    @contextmanager
    def batch(self, durable: bool = True):
        """Writes inside are one transaction: committed (one fsync) when the outermost batch ends,
        rolled back if it raises. Reads in this thread see them at once; others after the commit.
        `durable=False`: committed without an fsync of its own, for nodes nothing names until a
        later durable commit (a snapshot's, before its StepNode): that commit's fsync of the WAL
        makes these durable too, and a crash before it loses only nodes no head names."""
        conn = self._connection(write=True)
        local = self._local
        relaxed = local.depth == 0 and not durable and self.durable
        if relaxed:
            conn.execute("pragma synchronous=NORMAL")
        if local.depth == 0:
            try:
                self._run(conn, "begin immediate", (), "cannot write the node store")
            except BaseException:
                if relaxed:
                    conn.execute("pragma synchronous=FULL")  # later commits stay durable
                raise
        local.depth += 1
        try:
            yield
        except BaseException:
            local.depth -= 1
            if local.depth == 0:
                conn.execute("rollback")
                if relaxed:
                    conn.execute("pragma synchronous=FULL")
            raise
        local.depth -= 1
        if local.depth == 0:
            try:
                self._run(conn, "commit", (), "cannot write the node store")
            finally:
                if relaxed:
                    conn.execute("pragma synchronous=FULL")

    def _run(self, conn: sqlite3.Connection, sql: str, args: tuple, doing: str) -> sqlite3.Cursor:
        try:
            return conn.execute(sql, args)
        except sqlite3.Error as exc:
            raise _error(exc, doing, self.path) from None

    def read_query(self, sql: str, args: tuple = ()) -> list[tuple]:
        conn = self._connection(write=False)
        if conn is None:
            return []
        doing = f"cannot read the node store {self.path}"
        cursor = self._run(conn, sql, args, doing)
        try:
            return cursor.fetchall()  # a damaged page can fail here, rows into the answer
        except sqlite3.Error as exc:
            raise _error(exc, doing, self.path) from None

    def write_query(self, sql: str, args: tuple = (), doing: str = "cannot write the node store") -> int:
        conn = self._connection(write=True)
        return self._run(conn, sql, args, f"{doing} ({self.path})").rowcount

    def write_many(self, sql: str, rows: list[tuple], doing: str = "cannot write the node store") -> None:
        conn = self._connection(write=True)
        try:
            conn.executemany(sql, rows)
        except sqlite3.Error as exc:
            raise _error(exc, f"{doing} ({self.path})", self.path) from None

    # -- nodes ---------------------------------------------------------------------------

    def read(self, hash_: str) -> bytes | None:
        rows = self.read_query("select data from nodes where hash = ?", (hash_,))
        return node_data(rows[0][0]) if rows else None

    def write(self, hash_: str, type_hash: str, data: bytes) -> None:
        self.write_query(
            "insert or ignore into nodes (hash, type, data, touched) values (?, ?, ?, ?)",
            (hash_, type_hash, _packed(data), time.time()),
            f"cannot write node {hash_}",
        )

    def write_pieces(self, hash_: str, type_hash: str, pieces) -> None:
        """A large node (a big file's) whose bytes `pieces()` gives, never joined in memory: counted
        and compressed piece by piece (the compressed pieces kept up to HOLD bytes, else made once
        more), then written into the row through SQLite's blob I/O, in one transaction."""
        import zlib

        deflate = zlib.compressobj(1)
        held: list[bytes] | None = []
        raw = packed = 0
        out = b""
        for piece in _sliced(pieces()):
            raw += len(piece)
            out = deflate.compress(piece)
            packed += len(out)
            if held is not None:
                held.append(out)
                held = held if packed <= HOLD else None
        del out
        tail = deflate.flush()
        packed += len(tail)
        if held is not None:
            held.append(tail)
        compressed = packed < raw

        def body():
            if not compressed:
                yield from _sliced(pieces())
            elif held is not None:
                yield from held
            else:
                again = zlib.compressobj(1)
                for piece in _sliced(pieces()):
                    yield again.compress(piece)
                yield again.flush()

        doing = f"cannot write node {hash_}"
        with self.batch():
            conn = self._connection(write=True)
            cursor = self._run(conn, "insert or ignore into nodes (hash, type, data, touched) values (?, ?, zeroblob(?), ?)",
                               (hash_, type_hash, packed if compressed else raw, time.time()), doing)
            if cursor.rowcount == 0:
                return  # already here
            written = 0
            try:
                with conn.blobopen("nodes", "data", cursor.lastrowid) as blob:
                    for piece in body():
                        blob.write(piece)
                        written += len(piece)
            except sqlite3.Error as exc:
                raise _error(exc, f"{doing} ({self.path})", self.path) from None
            except ValueError:
                written = -1  # more than counted
            if written != (packed if compressed else raw):  # the batch rolls back: no row half written
                raise UwfError(f"{doing}: its bytes were not the same twice")

    def touched_at(self, hash_: str) -> float | None:
        rows = self.read_query("select touched from nodes where hash = ?", (hash_,))
        return rows[0][0] if rows else None

    def freshen(self, hash_: str) -> bool:
        """True when the node is here; its age restarts (unless it was touched this second:
        gc keeps anything touched after a running step began, so a write saved is safe)."""
        touched = self.touched_at(hash_)
        if touched is None:
            return False
        now = time.time()
        if touched < now - 1:
            self.write_query("update nodes set touched = ? where hash = ?", (now, hash_), f"cannot write node {hash_}")
        return True

    def hashes(self) -> list[str]:
        return [row[0] for row in self.read_query("select hash from nodes")]

    def of_type(self, type_hash: str) -> list[str]:
        return [row[0] for row in self.read_query("select hash from nodes where type = ? order by seq", (type_hash,))]

    def delete(self, hash_: str) -> None:
        self.write_query("delete from nodes where hash = ?", (hash_,), f"cannot delete node {hash_}")

    def checkpoint(self) -> None:
        """Fold the WAL into the file and cut it to nothing, so no old copy of a page stays in it
        (best effort: a reader in another process can hold it back)."""
        try:
            self._connection(write=True).execute("pragma wal_checkpoint(TRUNCATE)")
        except (sqlite3.Error, UwfError):
            pass

    def damage(self) -> str | None:
        """What is wrong with the file itself — its header, its pages — or None. Read before any
        node: a file SQLite cannot open is one problem to report, not a failure of the check."""
        if not os.path.exists(self.path):
            return None
        problem = file_problem(self.path)
        if problem:
            return f"{problem} (run `uwf cas fsck --repair`)"
        try:  # a connection of its own, read-only: nothing is set up or migrated in a damaged file
            conn = open_read_only(self.path)
            try:
                rows = conn.execute("pragma quick_check").fetchall()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            if not isinstance(_error(exc, ""), CorruptError):
                return None  # a read-only root, a busy file: not damage (reading the nodes says what it is)
            return f"SQLite cannot read it: {exc} (run `uwf cas fsck --repair`)"
        bad = check_result(rows)
        return f"damaged pages: {bad} (run `uwf cas fsck --repair`)" if bad else None

    # -- derived data --------------------------------------------------------------------

    def derived(self, key: str) -> bytes | None:
        rows = self.read_query("select value from derived where key = ?", (key,))
        return _blob(rows[0][0]) if rows else None

    def put_derived(self, key: str, value: bytes) -> None:
        self.write_query("insert or replace into derived (key, value) values (?, ?)", (key, value), "cannot write derived data")


def _blob(value: object) -> bytes:
    """A stored value as bytes, whatever a damaged row holds (text, a number): verification or
    decoding then says what is wrong with it."""
    if isinstance(value, (bytes, memoryview)):
        return bytes(value)
    return str(value).encode("utf-8", "surrogateescape")


def node_data(value: object) -> bytes:
    """A node's envelope from its row: inflated when it was stored compressed. A row that does not
    inflate is returned as it is, for verification to call corrupt."""
    data = _blob(value)
    if data[:1] != b"\x78":
        return data
    import zlib  # only for a compressed row: most of what a command reads is small

    inflate = zlib.decompressobj()
    try:
        inflated = inflate.decompress(data, MAX_NODE_BYTES)
    except zlib.error:
        return data
    return inflated if inflate.eof and not inflate.unconsumed_tail else data  # cut short or a bomb: corrupt


def _packed(data: bytes) -> bytes:
    if len(data) < COMPRESS_FROM:
        return data
    import zlib

    packed = zlib.compress(data, 1)  # the best speed, as git writes its loose objects
    return packed if len(packed) < len(data) else data


def _sliced(pieces, size: int = 1 << 20):
    """Each piece in slices of at most `size` bytes (views, not copies): what is compressed or
    written at once stays small."""
    for piece in pieces:
        view = memoryview(piece)
        for start in range(0, len(view), size):
            yield view[start:start + size]


class _NotSetUp(Exception):
    pass


def _read_only(exc: BaseException) -> bool:
    """Opening for reading failed because nothing can be written beside the node file (a read-only
    or full disk: a WAL reader needs its -shm file)."""
    text = str(exc).lower()
    return any(word in text for word in ("readonly", "read-only", "unable to open", "disk i/o")) or isinstance(exc, PermissionError)


def open_read_only(path: str, *, held: bool = False) -> sqlite3.Connection:
    """A connection that never writes the file (nothing is set up or migrated in a damaged one).
    `held`: no one writes it meanwhile (the repair holds the root), so with no WAL beside it, it is
    opened immutable and leaves no -wal or -shm file behind either."""
    uri = "file:" + path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    mode = "immutable=1" if held and not os.path.exists(path + "-wal") else "mode=ro"
    return sqlite3.connect(f"{uri}?{mode}", uri=True, isolation_level=None)


def check_result(rows: list[tuple]) -> str | None:
    """The first problem `pragma integrity_check` (or quick_check) reports, on one line; None for ok."""
    lines = [line for row in rows for line in str(row[0]).splitlines() if line != "ok" and not line.startswith("***")]
    more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
    return lines[0] + more if lines else None


def _damaged_header(path: str) -> str | None:
    from .salvage import header_problem  # only when SQLite has refused something

    return header_problem(path)


def _error(exc: BaseException, doing: str, path: str | None = None) -> UwfError:
    """One line for what SQLite (or the OS under it) said. A damaged header comes first: SQLite
    takes an unknown write version for a file it may only read, and says "readonly"."""
    text = str(exc)
    lowered = text.lower()
    damage = _damaged_header(path) if path and isinstance(exc, sqlite3.Error) else None
    if damage:
        return CorruptError(f"{doing}: the file's header is damaged ({damage}); `uwf cas fsck --repair` salvages what can still be read")
    if "disk is full" in lowered or "disk i/o" in lowered and "space" in lowered:
        return UwfError(f"{doing}: No space left on device")
    if "readonly" in lowered or "read-only" in lowered:
        return UwfError(f"{doing}: Read-only file system or no permission to write")
    if "locked" in lowered or "busy" in lowered:
        return UwfError(f"{doing}: another process held the node store for {BUSY_SECONDS:g}s (is a gc or a copy running?)")
    if "not a database" in lowered or "malformed" in lowered or "could not decode" in lowered:
        return CorruptError(f"{doing}: the file is damaged ({text}); `uwf cas fsck --repair` salvages what can still be read")
    if path and ("disk i/o" in lowered or "unable to open" in lowered):  # SQLite's words for what the OS said
        cause = _disk_state(os.path.dirname(path))
        if cause:
            return UwfError(f"{doing}: {cause}")
    return UwfError(f"{doing}: {getattr(exc, 'strerror', None) or text}")


def _disk_state(directory: str) -> str | None:
    """What SQLite's "disk I/O error" or "unable to open" most likely was: a full disk, or a
    directory it may not write (its -wal and -shm files go beside the node file)."""
    try:
        if os.statvfs(directory).f_bavail == 0:
            return "No space left on device"
    except OSError:
        return None
    if not os.access(directory, os.W_OK):
        return "Read-only file system or no permission to write"
    return None
