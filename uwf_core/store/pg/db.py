"""Connections to a PostgreSQL root, its schema and its migrations, and the one way errors from
the server become one-line messages.

Every connection is in autocommit mode: a statement is its own transaction unless `transaction()`
groups some, and nothing holds a transaction while an agent runs (step locks and worker claims
are session-level advisory locks on connections of their own). Each thread has its own
connection (the TUI's workers and a worker's lanes run at once). Connections go through libpq
itself (`libpq.py`), not a driver: a `uwf` command on a PostgreSQL root starts as a directory's.

A host that vanishes must lose its locks within seconds whatever the server's settings: every
session asks the server for its own TCP keepalives and user timeout (startup options, no round
trip), and the client sets the same, so either side finds a dead link in ~15 s.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from ...errors import StoreUnavailableError, UwfError
from .libpq import LibpqMissing, PgError, connect, library_version

SCHEMA_VERSION = 5
CHANGES_CHANNEL = "uwf_changes"
DEAD_LINK_SECONDS = 15  # a peer silent this long is gone (keepalives 5 s + 3 x 2 s; unacknowledged data)
CLIENT_OPTIONS = {"keepalives": "1", "keepalives_idle": "5", "keepalives_interval": "2", "keepalives_count": "3", "connect_timeout": "10"}
SERVER_OPTIONS = f"-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=3 -c tcp_user_timeout={DEAD_LINK_SECONDS * 1000}"
IDLE_CHECK_SECONDS = 10.0  # a connection unused this long is asked whether it still lives before reuse

# Each migration moves the schema from the version before it; applied once, in order, recorded
# in uwf_migrations under a lock so two processes starting at once do not race.
MIGRATIONS = {
    1: """
create table uwf_meta (key text primary key, value text not null);
insert into uwf_meta (key, value) values ('changes', '0');
create table uwf_nodes (
    seq bigserial primary key,
    hash text not null unique,
    type text not null,
    data bytea not null,
    touched double precision not null
);
create index uwf_nodes_by_type on uwf_nodes (type, seq);
create table uwf_derived (key text primary key, value bytea not null);
create table uwf_heads (
    thread text primary key,
    head text not null,
    added bigserial
);
create table uwf_history (
    seq bigserial primary key,
    thread text not null,
    workflow text,
    head text not null,
    reason text not null,
    completed_at bigint
);
create index uwf_history_by_thread on uwf_history (thread, seq);
create table uwf_runs (seq bigserial primary key, thread text not null, record text not null);
create index uwf_runs_by_thread on uwf_runs (thread, seq);
create table uwf_registry (name text primary key, entry text not null);
create table uwf_config (id integer primary key check (id = 1), text text not null);
create table uwf_running (thread text primary key, info text not null);
create table uwf_queue (thread text primary key, queued_at bigint not null, worker text);
""",
    2: """
create table uwf_workspaces (thread text primary key, path text not null);
""",
    3: """
alter table uwf_history add column summary text;
""",
    4: """
alter table uwf_queue add column beat timestamptz;
alter table uwf_queue add column asking text;
""",
    5: """
create table uwf_paused (thread text primary key, since bigint not null);
""",
}

_local = threading.local()


def display(url: str) -> str:
    """The URL without its password, for messages and titles."""
    from ..location import display_location

    return display_location(url)


class Database:
    """One PostgreSQL root. Opening it connects once to check the schema (creating or migrating it)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._ready = False

    def connect(self, *, set_up: bool = True):
        """A new autocommit connection (its own session: for locks that must outlive statements)."""
        try:
            conn = connect(self.url, _options())
        except LibpqMissing as exc:
            raise UwfError(f"cannot open the PostgreSQL root {display(self.url)}: {exc}") from None
        except PgError as exc:
            if "startup parameter" in str(exc) and "options" in str(exc) and not _no_server_options.is_set():
                _no_server_options.set()  # a pooler (pgbouncer) that passes no options: the client's keepalives alone
                return self.connect(set_up=set_up)
            raise StoreUnavailableError(f"cannot reach the PostgreSQL root {display(self.url)}: {first_line(exc)}") from None
        conn.used_at = time.monotonic()
        if set_up and not self._ready:
            self._check_schema(conn)
        return conn

    def conn(self):
        """This thread's connection to this root, made on first use; a broken one is replaced."""
        cache = _local.__dict__.setdefault("connections", {})
        conn = _alive(cache.get(self.url))
        if conn is None:
            conn = cache[self.url] = self.connect()
        return conn

    def listener(self, channel: str):
        """This thread's session that LISTENs on `channel`, made on first use; a broken one is replaced."""
        cache = _local.__dict__.setdefault("listeners", {})
        conn = cache.get((self.url, channel))
        if conn is None or conn.closed or conn.broken:
            conn = cache[(self.url, channel)] = self.connect()
            with self.errors("listen to"):
                conn.execute(f"listen {channel}")
        return conn

    def borrow_session(self):
        """A connection of its own (a session for locks that outlive statements), reused from this
        thread's idle ones: a step's lock costs no new connection each time."""
        idle = _local.__dict__.setdefault("idle", {}).setdefault(self.url, [])
        while idle:
            conn = _alive(idle.pop())
            if conn is not None:
                return conn
        return self.connect()

    def return_session(self, conn) -> None:
        """Back to this thread's idle sessions (its advisory locks released by the caller first)."""
        if conn.closed or conn.broken:
            return
        idle = _local.__dict__.setdefault("idle", {}).setdefault(self.url, [])
        if len(idle) < 2:
            idle.append(conn)
        else:
            conn.close()

    def drop_connection(self) -> None:
        cache = _local.__dict__.setdefault("connections", {})
        conn = cache.pop(self.url, None)
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    def query(self, sql: str, args: tuple = (), doing: str = "read") -> list[tuple]:
        cursor = self._once_more(lambda conn: conn.execute(sql, args), doing)
        return cursor.fetchall() if cursor.description else []

    def execute(self, sql: str, args: tuple = (), doing: str = "write") -> int:
        """One statement; every single-statement write uwf makes is idempotent (an insert that
        skips a row already there, an upsert, a delete), so a lost session is retried once."""
        return self._once_more(lambda conn: conn.execute(sql, args), doing).rowcount

    def _once_more(self, action, doing: str):
        """`action` on this thread's connection; if that session turns out dead (a database restart,
        a dropped link) outside a transaction, once more on a new one."""
        with self.errors(doing):
            conn = self.conn()
            try:
                return action(conn)
            except PgError as exc:
                if not exc.operational or conn.in_transaction:
                    raise
                self.drop_connection()
            return action(self.conn())

    @contextmanager
    def transaction(self, doing: str = "write"):
        """Statements inside are one transaction on this thread's connection (yields it). A
        session found dead at BEGIN (nothing done yet) is replaced once."""
        with self.errors(doing):
            conn = self.conn()
            if conn.in_transaction:
                with conn.transaction():
                    yield conn
                return
            try:
                block = conn.transaction()
                block.__enter__()
            except PgError as exc:
                if not exc.operational:
                    raise
                self.drop_connection()
                conn = self.conn()
                block = conn.transaction()
                block.__enter__()
            try:
                yield conn
            except BaseException as exc:
                block.__exit__(type(exc), exc, exc.__traceback__)
                raise
            block.__exit__(None, None, None)

    @contextmanager
    def errors(self, doing: str):
        """libpq's errors as one line naming the root; a dropped connection is not kept."""
        try:
            yield
        except PgError as exc:
            if exc.operational:
                self.drop_connection()
                raise StoreUnavailableError(f"cannot {doing} the PostgreSQL root {display(self.url)}: {first_line(exc)}") from None
            raise UwfError(f"cannot {doing} the PostgreSQL root {display(self.url)}: {first_line(exc)}") from None

    def change(self, sql: str, args: tuple, conn=None, doing: str = "write") -> None:
        """One data-modifying statement and the bump with it, in one statement and one round trip
        (a transaction of three statements is five): `sql` runs as a WITH query."""
        statement = (
            f"with change as ({sql}), bumped as (update uwf_meta set value = (value::bigint + 1)::text where key = 'changes' returning 1)"
            f" select pg_notify('{CHANGES_CHANNEL}', '')"
        )
        with self.errors(doing):
            (conn or self.conn()).execute(statement, args)

    def bump(self, conn) -> None:
        """Tell live views and idle workers that something changed (inside the changing transaction)."""
        conn.execute("update uwf_meta set value = (value::bigint + 1)::text where key = 'changes'")
        conn.execute(f"notify {CHANGES_CHANNEL}")

    def _check_schema(self, conn) -> None:
        """One round trip when the schema is current (every command's case); migrate otherwise."""
        try:
            newest = conn.execute("select max(version) from uwf_migrations").fetchone()[0] or 0
        except PgError as exc:
            if exc.operational:
                raise StoreUnavailableError(f"cannot reach the PostgreSQL root {display(self.url)}: {first_line(exc)}") from None
            newest = 0  # a new database: no uwf_migrations yet
        if newest > SCHEMA_VERSION:
            raise UwfError(f"the PostgreSQL root {display(self.url)} has schema version {newest}, newer than this uwf reads ({SCHEMA_VERSION}): upgrade uwf")
        if newest < SCHEMA_VERSION:
            self._migrate(conn)
        self._ready = True

    def _migrate(self, conn) -> None:
        try:
            with conn.transaction():
                conn.execute("select pg_advisory_xact_lock(7567660)")  # one migrator at a time
                conn.execute("create table if not exists uwf_migrations (version integer primary key, applied_at timestamptz not null default now())")
                done = {row[0] for row in conn.execute("select version from uwf_migrations").fetchall()}
                newest = max(done, default=0)
                if newest > SCHEMA_VERSION:
                    raise UwfError(f"the PostgreSQL root {display(self.url)} has schema version {newest}, newer than this uwf reads ({SCHEMA_VERSION}): upgrade uwf")
                for version in sorted(MIGRATIONS):
                    if version not in done:
                        conn.execute(MIGRATIONS[version])
                        conn.execute("insert into uwf_migrations (version) values (%s)", (version,))
        except PgError as exc:
            raise UwfError(f"cannot set up the PostgreSQL root {display(self.url)}: {first_line(exc)}") from None


_no_server_options = threading.Event()


def _options() -> dict[str, str]:
    options = dict(CLIENT_OPTIONS)
    if library_version() >= 120000:
        options["tcp_user_timeout"] = str(DEAD_LINK_SECONDS * 1000)
    if not _no_server_options.is_set():
        options["options"] = SERVER_OPTIONS
    return options


def _alive(conn):
    """`conn` if it still works: one unused for a while (a worker's agent ran for minutes) is asked
    first, so a session the server or the network ended is replaced, not failed on."""
    if conn is None or conn.closed or conn.broken:
        return None
    now = time.monotonic()
    if now - conn.used_at > IDLE_CHECK_SECONDS:
        try:
            conn.execute("select 1")
        except PgError:
            conn.close()
            return None
    conn.used_at = now
    return conn


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
