"""Connections to a PostgreSQL root, its schema and its migrations, and the one way errors from
the server become one-line messages.

Every connection is in autocommit mode: a statement is its own transaction unless `transaction()`
groups some, and nothing holds a transaction while an agent runs (step locks and worker claims
are session-level advisory locks on connections of their own). Each thread has its own
connection (the TUI's workers and a worker's lanes run at once). TCP keepalives make a host that
vanished lose its locks within ~30 s.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from ...errors import StoreUnavailableError, UwfError

SCHEMA_VERSION = 3
CHANGES_CHANNEL = "uwf_changes"
KEEPALIVE = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3, "connect_timeout": 10}

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
        import psycopg

        try:
            conn = psycopg.connect(self.url, autocommit=True, **KEEPALIVE)
        except psycopg.Error as exc:
            raise StoreUnavailableError(f"cannot reach the PostgreSQL root {display(self.url)}: {first_line(exc)}") from None
        if set_up and not self._ready:
            self._migrate(conn)
        return conn

    def conn(self):
        """This thread's connection to this root, made on first use; a broken one is replaced."""
        cache = _local.__dict__.setdefault("connections", {})
        conn = cache.get(self.url)
        if conn is None or conn.closed or conn.broken:
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
            conn = idle.pop()
            if not conn.closed and not conn.broken:
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
        with self.errors(doing):
            cursor = self.conn().execute(sql, args)
            return cursor.fetchall() if cursor.description else []

    def execute(self, sql: str, args: tuple = (), doing: str = "write") -> int:
        with self.errors(doing):
            return self.conn().execute(sql, args).rowcount

    @contextmanager
    def transaction(self, doing: str = "write"):
        """Statements inside are one transaction on this thread's connection (yields it)."""
        with self.errors(doing):
            conn = self.conn()
            with conn.transaction():
                yield conn

    @contextmanager
    def errors(self, doing: str):
        """psycopg's errors as one line naming the root; a dropped connection is not kept."""
        import psycopg

        try:
            yield
        except psycopg.OperationalError as exc:
            self.drop_connection()
            raise StoreUnavailableError(f"cannot {doing} the PostgreSQL root {display(self.url)}: {first_line(exc)}") from None
        except psycopg.Error as exc:
            raise UwfError(f"cannot {doing} the PostgreSQL root {display(self.url)}: {first_line(exc)}") from None

    def bump(self, conn) -> None:
        """Tell live views and idle workers that something changed (inside the changing transaction)."""
        conn.execute("update uwf_meta set value = (value::bigint + 1)::text where key = 'changes'")
        conn.execute(f"notify {CHANGES_CHANNEL}")

    def _migrate(self, conn) -> None:
        import psycopg

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
        except psycopg.Error as exc:
            raise UwfError(f"cannot set up the PostgreSQL root {display(self.url)}: {first_line(exc)}") from None
        self._ready = True


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
