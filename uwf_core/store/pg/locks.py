"""Step locks and worker claims of a PostgreSQL root: session-level advisory locks, each on a
connection of its own, so they hold for as long as a step or a worker needs and go with the
session when its process dies or its host is lost. What a lock's holder says about itself (pid,
host, role, agent, the server's start) is a row beside it; what its step's agent says as it runs
is NOTIFY'd on the thread's live channel (store/pg/live.py).

A claim is also a lease: its worker beats it (every 5 s, engine/queue/worker.py) on the claim's session. A claim
not beaten for LEASE_SECONDS (by the server's clock) is lapsed, and a worker that wants the
thread ends the holder's sessions (`pg_terminate_backend`), which frees its claim and step lock
at once — so a partitioned worker loses its thread within LEASE_SECONDS plus one look, whatever
the server's keepalive settings. Its late result then meets a head that moved: compare-and-set
refuses it."""

from __future__ import annotations

import json
import os
import threading
import time

from ...encoding.ids import xxh64_digest
from ...errors import LockedError
from ..records import QueuedThread, RunningStep, process_alive, this_host
from .db import Database

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .live import LiveSender


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


LEASE_SECONDS = 20  # a claim not beaten this long may be taken over (< 30 s with one worker's look)
RESTARTED = "the database restarted"


def _running(data: dict, server_start: str | None = None) -> RunningStep:
    """A running row; read by the lease that found it stale (`server_start` given), with why its
    holder lost the lock: the mark a takeover left, a restart, or the holder's process seen alive."""
    lost = data.get("lost")
    if lost is None and server_start:
        lost = _why_lost(data, server_start)
    return RunningStep(
        data["pid"], data.get("pgid"), data.get("role"), data.get("agent"), data.get("startedAt"), data.get("host"), data.get("worker"), data.get("waiting"), lost
    )


def _why_lost(data: dict, server_start: str) -> str | None:
    """None when the holder died (its process is gone from this host)."""
    if data.get("serverStart") not in (None, server_start):
        return RESTARTED
    if data.get("host") != this_host():
        return "its session ended (the process died, or its host lost its link to the database)"
    if isinstance(data.get("pid"), int) and not process_alive(data["pid"]):
        return None  # it died (a zombie not yet reaped has died too)
    return "its session to the database ended while it ran (its link, or the server, dropped it)"


def _holders_sql() -> str:
    """The sessions (other than this one) holding the advisory lock with key %(key)s."""
    return (
        "select pid from pg_locks where locktype = 'advisory' and granted and objsubid = 1 and pid <> pg_backend_pid()"
        " and classid = ((%(key)s::bigint >> 32) & 4294967295)::oid and objid = (%(key)s::bigint & 4294967295)::oid"
    )


class PgStepLease:
    """Held for the whole of one step of one thread, on a connection of its own."""

    def __init__(self, db: Database, thread: str, worker: str | None = None) -> None:
        self.db = db
        self.thread = thread
        self.key = advisory_key(f"step:{thread}")
        self.conn = None
        self.info: dict = {"worker": worker} if worker else {}
        self.interrupted: RunningStep | None = None
        self.guard = threading.Lock()  # the step's thread and the live sender share the session
        self.sender: LiveSender | None = None

    def __enter__(self) -> PgStepLease:
        conn = self.db.borrow_session()
        with self.db.errors("lock a thread of"):
            got, server_start = conn.execute("select pg_try_advisory_lock(%s), pg_postmaster_start_time()::text", (self.key,)).fetchone()
        if not got:
            self.db.return_session(conn)
            holder = PgStepLocks(self.db).running(self.thread)
            raise LockedError(f"thread {self.thread} is already being stepped by {holder.describe() if holder else 'another process'}")
        self.conn = conn
        with self.db.errors("lock a thread of"):
            row = conn.execute("select info from uwf_running where thread = %s", (self.thread,)).fetchone()
        if row is not None:  # its holder's session ended while it held the lock: that step was interrupted
            try:
                self.interrupted = _running(json.loads(row[0]), server_start)
            except (ValueError, KeyError):
                self.interrupted = None
        self.update(pid=os.getpid(), startedAt=int(time.time() * 1000), host=this_host(), serverStart=server_start)
        return self

    def update(self, **fields) -> None:
        self.info.update(fields)
        with self.guard:
            self.db.change(
                "insert into uwf_running (thread, info) values (%s, %s) on conflict (thread) do update set info = excluded.info",
                (self.thread, json.dumps(self.info)), self.conn, "lock a thread of",
            )

    def say(self, line: str) -> None:
        if self.sender is None:
            from .live import LiveSender

            self.sender = LiveSender(self.conn, self.guard, self.thread)
        self.sender.put(line)

    def __exit__(self, *exc_info) -> None:
        if self.sender is not None:
            self.sender.close()
        try:
            with self.conn.transaction():
                self.conn.execute("delete from uwf_running where thread = %s", (self.thread,))
                self.db.bump(self.conn)
            self.conn.execute("select pg_advisory_unlock(%s)", (self.key,))
        except Exception:
            self.conn.close()  # the session had ended (a restart, a lapsed lease): the lock with it
            self._forget()
            return
        self.db.return_session(self.conn)

    def _forget(self) -> None:
        """The row of a step that ended alive, on a session of its own, if the row is still ours: a
        step that went on through a database restart is not told as a dead process's next time."""
        try:
            with self.db.transaction() as conn:
                conn.execute("delete from uwf_running where thread = %s and info = %s", (self.thread, json.dumps(self.info)))
                self.db.bump(conn)
        except Exception:
            pass  # still unreachable: the next step reads the row, and the server's start tells it


class PgStepLocks:
    def __init__(self, db: Database) -> None:
        self.db = db

    def acquire(self, thread: str, worker: str | None = None) -> PgStepLease:
        return PgStepLease(self.db, thread, worker)

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
    """A worker's claim: the advisory lock on a session of its own, beaten as a lease."""

    def __init__(self, conn, db: Database, thread: str, worker: str) -> None:
        self.conn = conn
        self.db = db
        self.thread = thread
        self.worker = worker
        self.lost = False  # the session ended or another worker took the thread over
        self.guard = threading.Lock()  # the lane releases, the heartbeat beats: one at a time

    def beat(self) -> bool:
        """Renew the lease; False (and `lost`) when the claim is gone: its session ended, or another
        worker holds the thread now. A thread dequeued meanwhile (done, killed, answered to its
        end) is not lost: its step says what became of it."""
        with self.guard:
            if self.conn is None or self.lost:
                return not self.lost
            try:
                other = self.conn.execute(
                    "with renewed as (update uwf_queue set beat = now() where thread = %s and worker = %s returning 1)"
                    " select (select count(*) from renewed) = 0 and exists (select 1 from uwf_queue where thread = %s)",
                    (self.thread, self.worker, self.thread),
                ).fetchone()[0]
            except Exception:
                other = True
            if other:
                self.lost = True
            return not self.lost

    def release(self) -> None:
        with self.guard:
            if self.conn is None:
                return
            if not self.lost:
                try:
                    with self.conn.transaction():
                        self.conn.execute("update uwf_queue set worker = null, beat = null where thread = %s and worker = %s", (self.thread, self.worker))
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
        rows = self.db.query("select thread, queued_at, worker, asking from uwf_queue order by queued_at, thread")
        held = set(self._held([row[0] for row in rows]))
        return [QueuedThread(thread, queued_at, worker if thread in held else None, asking) for thread, queued_at, worker, asking in rows]

    def _held(self, threads: list[str]) -> list[str]:
        """The threads whose claim some session holds: one query, however many are queued."""
        if not threads:
            return []
        keys = {advisory_key(f"claim:{thread}"): thread for thread in threads}
        rows = self.db.query(
            "select k from unnest(%s::bigint[]) k where exists (select 1 from pg_locks where locktype = 'advisory' and granted"
            " and objsubid = 1 and classid = ((k >> 32) & 4294967295)::oid and objid = (k & 4294967295)::oid)",
            ("{" + ",".join(map(str, keys)) + "}",),
        )
        return [keys[row[0]] for row in rows]

    def damaged(self) -> list:
        return []

    def ask(self, thread: str, head: str | None) -> None:
        """Mark a queued thread as waiting for a person at `head` (None: no longer): workers pass it
        over until its head moves."""
        with self.db.transaction() as conn:
            conn.execute("update uwf_queue set asking = %s where thread = %s", (head, thread))
            self.db.bump(conn)

    def claim(self, worker: str, skip: set[str] | None = None) -> PgClaim | None:
        """The oldest queued thread whose claim lock is free (or whose lease lapsed), taken on a new
        session: the lock is the claim (it dies with the worker), `worker` and `beat` its lease.
        A thread waiting for a person at its current head, or paused, is passed over."""
        conn = self.db.connect()
        try:
            with self.db.errors("claim a thread of"):
                rows = conn.execute(
                    "select q.thread, q.worker is not null and q.beat < now() - make_interval(secs => %s) from uwf_queue q"
                    " left join uwf_heads h on h.thread = q.thread where (q.asking is null or q.asking is distinct from h.head)"
                    " and not exists (select 1 from uwf_paused p where p.thread = q.thread)"
                    " order by q.queued_at, q.thread",
                    (LEASE_SECONDS,),
                ).fetchall()
                for thread, lapsed in rows:
                    if skip and thread in skip:
                        continue
                    key = advisory_key(f"claim:{thread}")
                    got = conn.execute("select pg_try_advisory_lock(%s)", (key,)).fetchone()[0]
                    if not got and lapsed:
                        got = self._take_over(conn, thread, key)
                    if got:
                        with conn.transaction():
                            still = conn.execute("update uwf_queue set worker = %s, beat = now() where thread = %s", (worker, thread)).rowcount
                            self.db.bump(conn)
                        if still:
                            return PgClaim(conn, self.db, thread, worker)
                        conn.execute("select pg_advisory_unlock(%s)", (key,))
        except BaseException:
            conn.close()
            raise
        conn.close()
        return None

    def _take_over(self, conn, thread: str, key: int) -> bool:
        """End the sessions of a worker whose lease lapsed (its claim and its step lock), note why on
        its running row, and take the claim once the server has let them go."""
        step = advisory_key(f"step:{thread}")
        conn.execute(
            "update uwf_running set info = (info::jsonb || jsonb_build_object('lost', %s::text))::text where thread = %s",
            (f"its worker lost the database (no heartbeat for {LEASE_SECONDS} s) and its sessions were ended", thread),
        )
        pids = [row[0] for row in conn.execute(f"{_holders_sql()} union {_holders_sql().replace('%(key)s', '%(step)s')}", {"key": key, "step": step}).fetchall()]
        for pid in pids:
            conn.execute("select pg_terminate_backend(%s::int)", (pid,))
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            if conn.execute("select pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                return True
            time.sleep(0.05)
        return False


PUBLISH_KEY = advisory_key("publish")  # shared by writers, exclusive for gc (store/base.py)


class PgPublishing:
    """A writer's shared hold, on a session of its own for as long as the command writes."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = None

    def __enter__(self) -> PgPublishing:
        conn = self.db.borrow_session()
        with self.db.errors("write to"):
            conn.execute("select pg_advisory_lock_shared(%s)", (PUBLISH_KEY,))
        self.conn = conn
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            self.conn.execute("select pg_advisory_unlock_shared(%s)", (PUBLISH_KEY,))
        except Exception:
            self.conn.close()  # the session ended: the lock with it
            return
        self.db.return_session(self.conn)


class PgSweeping:
    """gc's exclusive hold, tried for `seconds` (pg_try_advisory_lock: a writer is never made to
    queue behind gc for longer than gc waits)."""

    def __init__(self, db: Database, seconds: float) -> None:
        self.db, self.seconds = db, seconds
        self.conn = None

    def __enter__(self) -> PgSweeping:
        conn = self.db.connect()
        deadline = time.monotonic() + self.seconds
        with self.db.errors("lock the nodes of"):
            while not conn.execute("select pg_try_advisory_lock(%s)", (PUBLISH_KEY,)).fetchone()[0]:
                if time.monotonic() >= deadline:
                    conn.close()
                    raise LockedError(f"gc waited for commands writing nodes (a start, a put, an import, a fork, a copy) for {self.seconds:g} s; try again")
                time.sleep(0.05)
        self.conn = conn
        return self

    def __exit__(self, *exc_info) -> None:
        self.conn.close()  # the session's end releases the lock


class PgHeld:
    """An exclusive session lock on a name (`config`: config.yaml's read-modify-write), waited for."""

    def __init__(self, db: Database, name: str) -> None:
        self.db, self.key = db, advisory_key(name)
        self.conn = None

    def __enter__(self) -> PgHeld:
        conn = self.db.borrow_session()
        with self.db.errors("lock"):
            conn.execute("select pg_advisory_lock(%s)", (self.key,))
        self.conn = conn
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            self.conn.execute("select pg_advisory_unlock(%s)", (self.key,))
        except Exception:
            self.conn.close()
            return
        self.db.return_session(self.conn)
