"""Step locks and worker claims of a PostgreSQL root: session-level advisory locks, each on a
connection of its own, so they hold for as long as a step or a worker needs and go with the
session when its process dies or its host is lost (TCP keepalives: ~30 s). What a lock's holder
says about itself (pid, host, role, agent) is a row beside it."""

from __future__ import annotations

import json
import os
import time

from ...encoding.ids import xxh64_digest
from ...errors import LockedError
from ..records import QueuedThread, RunningStep, this_host
from .db import Database


def advisory_key(name: str) -> int:
    """A signed 64-bit lock key for a name (`step:<thread>`, `claim:<thread>`)."""
    value = xxh64_digest(b"uwf:" + name.encode())
    return value - (1 << 64) if value >= 1 << 63 else value


def _held_sql() -> str:
    """Whether some session holds the advisory lock with key %(key)s (pg_locks splits it in two)."""
    return (
        "exists (select 1 from pg_locks where locktype = 'advisory' and granted and objsubid = 1"
        " and classid = ((%(key)s::bigint >> 32) & 4294967295)::oid and objid = (%(key)s::bigint & 4294967295)::oid)"
    )


def _running(data: dict) -> RunningStep:
    return RunningStep(data["pid"], data.get("pgid"), data.get("role"), data.get("agent"), data.get("startedAt"), data.get("host"), data.get("worker"), data.get("waiting"))


class PgStepLease:
    """Held for the whole of one step of one thread, on a connection of its own."""

    def __init__(self, db: Database, thread: str) -> None:
        self.db = db
        self.thread = thread
        self.key = advisory_key(f"step:{thread}")
        self.conn = None
        self.info: dict = {}
        self.interrupted: RunningStep | None = None

    def __enter__(self) -> PgStepLease:
        conn = self.db.borrow_session()
        with self.db.errors("lock a thread of"):
            got = conn.execute("select pg_try_advisory_lock(%s)", (self.key,)).fetchone()[0]
        if not got:
            self.db.return_session(conn)
            holder = PgStepLocks(self.db).running(self.thread)
            raise LockedError(f"thread {self.thread} is already being stepped by {holder.describe() if holder else 'another process'}")
        self.conn = conn
        row = conn.execute("select info from uwf_running where thread = %s", (self.thread,)).fetchone()
        if row is not None:  # its holder's session ended while it held the lock: that step was interrupted
            try:
                self.interrupted = _running(json.loads(row[0]))
            except (ValueError, KeyError):
                self.interrupted = None
        self.update(pid=os.getpid(), startedAt=int(time.time() * 1000), host=this_host())
        return self

    def update(self, **fields) -> None:
        self.info.update(fields)
        with self.db.errors("lock a thread of"), self.conn.transaction():
            self.conn.execute(
                "insert into uwf_running (thread, info) values (%s, %s) on conflict (thread) do update set info = excluded.info",
                (self.thread, json.dumps(self.info)),
            )
            self.db.bump(self.conn)

    def __exit__(self, *exc_info) -> None:
        try:
            with self.conn.transaction():
                self.conn.execute("delete from uwf_running where thread = %s", (self.thread,))
                self.db.bump(self.conn)
            self.conn.execute("select pg_advisory_unlock(%s)", (self.key,))
        except Exception:
            self.conn.close()  # the session ends: the lock goes with it; the row tells the next step
            return
        self.db.return_session(self.conn)


class PgStepLocks:
    def __init__(self, db: Database) -> None:
        self.db = db

    def acquire(self, thread: str) -> PgStepLease:
        return PgStepLease(self.db, thread)

    def running(self, thread: str) -> RunningStep | None:
        rows = self.db.query(
            f"select info from uwf_running where thread = %(thread)s and {_held_sql()}",
            {"thread": thread, "key": advisory_key(f"step:{thread}")},
        )
        try:
            return _running(json.loads(rows[0][0])) if rows else None
        except (ValueError, KeyError):
            return None


class PgClaim:
    def __init__(self, conn, db: Database, thread: str) -> None:
        self.conn = conn
        self.db = db
        self.thread = thread

    def release(self) -> None:
        if self.conn is not None:
            try:
                with self.conn.transaction():
                    self.conn.execute("update uwf_queue set worker = null where thread = %s", (self.thread,))
                    self.db.bump(self.conn)
            except Exception:
                pass  # the session ends below and the claim with it
            self.conn.close()
            self.conn = None

    def __enter__(self) -> PgClaim:
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()


class PgWorkQueue:
    def __init__(self, db: Database) -> None:
        self.db = db

    def enqueue(self, thread: str) -> bool:
        with self.db.transaction() as conn:
            added = conn.execute(
                "insert into uwf_queue (thread, queued_at) values (%s, %s) on conflict (thread) do nothing",
                (thread, int(time.time() * 1000)),
            ).rowcount
            self.db.bump(conn)
        return bool(added)

    def dequeue(self, thread: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("delete from uwf_queue where thread = %s", (thread,))
            self.db.bump(conn)

    def entries(self) -> list[QueuedThread]:
        rows = self.db.query("select thread, queued_at, worker from uwf_queue order by queued_at, thread")
        held = set(self._held([thread for thread, _, _ in rows]))
        return [QueuedThread(thread, queued_at, worker if thread in held else None) for thread, queued_at, worker in rows]

    def _held(self, threads: list[str]) -> list[str]:
        held = []
        for thread in threads:
            if self.db.query(f"select {_held_sql()}", {"key": advisory_key(f"claim:{thread}")})[0][0]:
                held.append(thread)
        return held

    def damaged(self) -> list:
        return []

    def claim(self, worker: str, skip: set[str] | None = None) -> PgClaim | None:
        """The oldest queued thread whose claim lock is free, taken on a new session: the lock is
        the claim (it dies with the worker), the `worker` column only names its holder."""
        conn = self.db.connect()
        try:
            with self.db.errors("claim a thread of"):
                rows = conn.execute("select thread from uwf_queue order by queued_at, thread").fetchall()
                for (thread,) in rows:
                    if skip and thread in skip:
                        continue
                    if conn.execute("select pg_try_advisory_lock(%s)", (advisory_key(f"claim:{thread}"),)).fetchone()[0]:
                        with conn.transaction():
                            still = conn.execute("update uwf_queue set worker = %s where thread = %s", (worker, thread)).rowcount
                            self.db.bump(conn)
                        if still:
                            return PgClaim(conn, self.db, thread)
                        conn.execute("select pg_advisory_unlock(%s)", (advisory_key(f"claim:{thread}"),))
        except BaseException:
            conn.close()
            raise
        conn.close()
        return None
