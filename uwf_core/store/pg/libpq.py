"""libpq through ctypes: the few calls uwf makes of PostgreSQL, without a driver to import.

psycopg costs ~85 ms to import, more than a whole `uwf` command on a directory root, and scripts
call `uwf` many times per step; ctypes and libpq load in ~3 ms. libpq itself does everything a
driver's C layer would: the URL and its options, ~/.pgpass, TLS, every authentication method,
keepalives. It is the system's `libpq.so.5`, else the copy psycopg-binary's wheel bundles (the
postgres extra). Each foreign call releases the GIL, so a worker's lanes wait on the server at
once. Parameters are `%s` / `%(name)s` as psycopg writes them; values come back as Python values
by their column's type.
"""

from __future__ import annotations

import ctypes
import glob
import os
import select
import time

CONNECTION_OK = 0
PGRES_COMMAND_OK, PGRES_TUPLES_OK = 1, 2
PG_DIAG_SQLSTATE, PG_DIAG_MESSAGE_PRIMARY = ord("C"), ord("M")
PQTRANS_IDLE = 0

BYTEA, INT8, FLOAT8, BOOL = 17, 20, 701, 16
_INTEGERS = frozenset((20, 21, 23, 26, 28))  # int8, int2, int4, oid, xid
_FLOATS = frozenset((700, 701))

_lib = None
_NoticeProcessor = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)
_quiet = _NoticeProcessor(lambda arg, message: None)  # the server's NOTICE/WARNING lines: not on uwf's stderr


class PgError(Exception):
    """A statement or connection that failed. `operational`: the connection is unusable (the server
    went away, the network did, or it was never reached) — a retry elsewhere may work."""

    def __init__(self, message: str, sqlstate: str | None = None, operational: bool = False) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.operational = operational


class LibpqMissing(Exception):
    """No libpq could be loaded on this host."""


class _Notify(ctypes.Structure):
    _fields_ = [("relname", ctypes.c_char_p), ("be_pid", ctypes.c_int), ("extra", ctypes.c_char_p)]


def _candidates() -> list[str]:
    found = [os.environ["UWF_LIBPQ"]] if os.environ.get("UWF_LIBPQ") else []
    found += ["libpq.so.5", "libpq.5.dylib", "libpq.dylib"]
    from importlib.util import find_spec

    try:
        spec = find_spec("psycopg_binary")  # its package is not executed: only located
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        site = os.path.dirname(os.path.dirname(spec.origin))
        found += sorted(glob.glob(os.path.join(site, "psycopg_binary.libs", "libpq*.so*")))
        found += sorted(glob.glob(os.path.join(site, "psycopg_binary", ".dylibs", "libpq*.dylib")))
    return found


def load():
    """libpq, loaded once per process (LibpqMissing when none is here)."""
    global _lib
    if _lib is not None:
        return _lib
    for name in _candidates():
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        _declare(lib)
        _lib = lib
        return lib
    raise LibpqMissing("no libpq found: install the system's libpq (apt-get install libpq5) or uwf's postgres extra (pip install -e '.[postgres]')")


def _declare(lib) -> None:
    p, c, i, u = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint
    signatures = {
        "PQconnectdbParams": (p, [ctypes.POINTER(c), ctypes.POINTER(c), i]),
        "PQstatus": (i, [p]),
        "PQerrorMessage": (c, [p]),
        "PQfinish": (None, [p]),
        "PQexec": (p, [p, c]),
        "PQexecParams": (p, [p, c, i, ctypes.POINTER(u), ctypes.POINTER(c), ctypes.POINTER(i), ctypes.POINTER(i), i]),
        "PQresultStatus": (i, [p]),
        "PQresultErrorField": (c, [p, i]),
        "PQresultErrorMessage": (c, [p]),
        "PQntuples": (i, [p]),
        "PQnfields": (i, [p]),
        "PQftype": (u, [p, i]),
        "PQgetvalue": (p, [p, i, i]),
        "PQgetlength": (i, [p, i, i]),
        "PQgetisnull": (i, [p, i, i]),
        "PQcmdTuples": (c, [p]),
        "PQclear": (None, [p]),
        "PQsocket": (i, [p]),
        "PQconsumeInput": (i, [p]),
        "PQnotifies": (ctypes.POINTER(_Notify), [p]),
        "PQfreemem": (None, [p]),
        "PQtransactionStatus": (i, [p]),
        "PQlibVersion": (i, []),
        "PQbackendPID": (i, [p]),
        "PQsetNoticeProcessor": (p, [p, _NoticeProcessor, p]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes


def connect(url: str, options: dict[str, str]) -> Connection:
    """A connection to `url`; `options` are libpq keywords the URL's own override."""
    lib = load()
    keywords = [*options, "dbname"]
    values = [*options.values(), url]
    keys = (ctypes.c_char_p * (len(keywords) + 1))(*[k.encode() for k in keywords], None)
    vals = (ctypes.c_char_p * (len(values) + 1))(*[v.encode() for v in values], None)
    handle = lib.PQconnectdbParams(keys, vals, 1)
    if not handle:
        raise PgError("out of memory connecting", operational=True)
    if lib.PQstatus(handle) != CONNECTION_OK:
        message = _text(lib.PQerrorMessage(handle))
        lib.PQfinish(handle)
        raise PgError(message, operational=True)
    lib.PQsetNoticeProcessor(handle, _quiet, None)
    return Connection(lib, handle)


def library_version() -> int:
    return load().PQlibVersion()


class Result:
    """A statement's rows (as a psycopg cursor shows them: fetchone, fetchall, rowcount, description)."""

    def __init__(self, rows: list[tuple] | None, rowcount: int) -> None:
        self.rows = rows
        self.rowcount = rowcount
        self.description = True if rows is not None else None

    def fetchone(self) -> tuple | None:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[tuple]:
        return list(self.rows or [])


class Connection:
    """One session, in autocommit: each statement commits unless inside `transaction()`."""

    def __init__(self, lib, handle) -> None:
        self.lib = lib
        self.handle = handle
        self.broken = False
        self._depth = 0
        self.used_at = time.monotonic()

    @property
    def closed(self) -> bool:
        return self.handle is None

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    @property
    def backend_pid(self) -> int:
        return self.lib.PQbackendPID(self.handle)

    def close(self) -> None:
        if self.handle is not None:
            self.lib.PQfinish(self.handle)
            self.handle = None

    def __del__(self) -> None:
        # A connection no one holds any more — a thread's own, when the thread ends (uwf-tui and
        # workers run steps in threads that come and go) — closes its session with it.
        try:
            self.close()
        except Exception:
            pass  # at interpreter exit libpq may be gone already; the OS closes the socket

    def execute(self, sql: str, args: tuple | dict = ()) -> Result:
        if self.handle is None:
            raise PgError("the connection is closed", operational=True)
        if args:
            text, values = _placeholders(sql, args)
            result = self._exec_params(text, values)
        else:
            result = self.lib.PQexec(self.handle, sql.encode())  # no arguments: sent as written, as psycopg does
        return self._result(result)

    def _exec_params(self, sql: str, values: list):
        count = len(values)
        types = (ctypes.c_uint * count)()
        data = (ctypes.c_char_p * count)()
        lengths = (ctypes.c_int * count)()
        formats = (ctypes.c_int * count)()
        for index, value in enumerate(values):
            if value is None:
                continue
            if isinstance(value, (bytes, bytearray, memoryview)):
                raw, types[index], formats[index] = bytes(value), BYTEA, 1
            elif isinstance(value, bool):
                raw, types[index] = (b"true" if value else b"false"), BOOL
            elif isinstance(value, int):
                raw, types[index] = str(value).encode(), INT8
            elif isinstance(value, float):
                raw, types[index] = repr(value).encode(), FLOAT8
            else:
                raw = str(value).encode()
            data[index], lengths[index] = raw, len(raw)
        return self.lib.PQexecParams(self.handle, sql.encode(), count, types, data, lengths, formats, 0)

    def _result(self, result) -> Result:
        lib = self.lib
        if not result:
            self._fail(None)
        try:
            status = lib.PQresultStatus(result)
            if status == PGRES_TUPLES_OK:
                return Result(_rows(lib, result), lib.PQntuples(result))
            if status == PGRES_COMMAND_OK:
                count = lib.PQcmdTuples(result)
                return Result(None, int(count) if count else -1)
            self._fail(result)
        finally:
            if result:
                lib.PQclear(result)

    def _fail(self, result) -> None:
        lib = self.lib
        sqlstate = _text(lib.PQresultErrorField(result, PG_DIAG_SQLSTATE)) if result else None
        message = _text(lib.PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY)) if result else ""
        message = message or _text(lib.PQerrorMessage(self.handle)) or "the server gave no answer"
        dead = lib.PQstatus(self.handle) != CONNECTION_OK
        operational = dead or (sqlstate or "").startswith(("08", "57P"))
        if operational:
            self.broken = True
        raise PgError(message, sqlstate, operational)

    def transaction(self) -> _Transaction:
        return _Transaction(self)

    def fileno(self) -> int:
        return self.lib.PQsocket(self.handle)

    def notifies(self, timeout: float, stop_after: int = 1):
        """(channel, payload) of each NOTIFY as it arrives, until `stop_after` came or `timeout` passed."""
        lib, seen = self.lib, 0
        deadline = time.monotonic() + timeout
        while True:
            if not lib.PQconsumeInput(self.handle):
                self.broken = True
                raise PgError(_text(lib.PQerrorMessage(self.handle)) or "the connection was lost", operational=True)
            while True:
                note = lib.PQnotifies(self.handle)
                if not note:
                    break
                channel = (note.contents.relname or b"").decode()
                payload = (note.contents.extra or b"").decode("utf-8", "replace")
                lib.PQfreemem(ctypes.cast(note, ctypes.c_void_p))
                yield channel, payload
                seen += 1
                if seen >= stop_after:
                    return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            select.select([self.fileno()], [], [], left)


class _Transaction:
    """BEGIN … COMMIT, or ROLLBACK when the block raises; nested ones are savepoints."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def __enter__(self) -> Connection:
        conn = self.conn
        conn.execute(f"savepoint uwf_{conn._depth}" if conn._depth else "begin")
        conn._depth += 1
        return conn

    def __exit__(self, kind, exc, tb) -> None:
        conn = self.conn
        conn._depth -= 1
        name = f"uwf_{conn._depth}"
        if kind is None:
            conn.execute(f"release savepoint {name}" if conn._depth else "commit")
            return
        if conn.broken or conn.closed:
            return
        try:
            conn.execute(f"rollback to savepoint {name}" if conn._depth else "rollback")
        except PgError:
            pass  # the first error is the one to report


def _placeholders(sql: str, args: tuple | dict) -> tuple[str, list]:
    """psycopg's `%s` / `%(name)s` as libpq's `$n` (a name used twice is one parameter)."""
    out, values, names = [], [], {}
    i, n = 0, len(sql)
    positional = iter(args) if not isinstance(args, dict) else None
    while i < n:
        ch = sql[i]
        if ch != "%":
            out.append(ch)
            i += 1
            continue
        nxt = sql[i + 1] if i + 1 < n else ""
        if nxt == "%":
            out.append("%")
            i += 2
        elif nxt == "s" and positional is not None:
            values.append(next(positional))
            out.append(f"${len(values)}")
            i += 2
        elif nxt == "(" and positional is None:
            end = sql.index(")s", i)
            name = sql[i + 2 : end]
            if name not in names:
                values.append(args[name])
                names[name] = len(values)
            out.append(f"${names[name]}")
            i = end + 2
        else:
            raise ValueError(f"unsupported placeholder in {sql!r}")
    return "".join(out), values


def _rows(lib, result) -> list[tuple]:
    ntuples, nfields = lib.PQntuples(result), lib.PQnfields(result)
    convert = [_converter(lib.PQftype(result, column)) for column in range(nfields)]
    getvalue, getlength, isnull, string_at = lib.PQgetvalue, lib.PQgetlength, lib.PQgetisnull, ctypes.string_at
    rows = []
    for row in range(ntuples):
        values = []
        for column in range(nfields):
            if isnull(result, row, column):
                values.append(None)
            else:
                values.append(convert[column](string_at(getvalue(result, row, column), getlength(result, row, column))))
        rows.append(tuple(values))
    return rows


def _converter(oid: int):
    if oid in _INTEGERS:
        return int
    if oid in _FLOATS:
        return float
    if oid == BOOL:
        return lambda raw: raw == b"t"
    if oid == BYTEA:
        return lambda raw: bytes.fromhex(raw[2:].decode("ascii"))
    return lambda raw: raw.decode("utf-8")


def _text(raw: bytes | None) -> str:
    return raw.decode("utf-8", "replace").strip() if raw else ""
