"""uwf's own libpq binding (store/pg/libpq.py) against a real PostgreSQL: parameters and values
both ways, transactions and savepoints, errors as one line (and which mean the session is gone),
notifications, a session the server ends."""

from __future__ import annotations

import threading
import time

import pytest

from uwf_core.errors import StoreUnavailableError, UwfError
from uwf_core.store.pg.db import Database
from uwf_core.store.pg.libpq import PgError, _placeholders, connect


def test_placeholders_become_numbered_parameters():
    assert _placeholders("select %s, %s", (1, "a")) == ("select $1, $2", [1, "a"])
    assert _placeholders("select %(k)s where x = %(k)s and y = %(j)s", {"k": 5, "j": 6}) == ("select $1 where x = $1 and y = $2", [5, 6])
    assert _placeholders("select '100%%', %s", ("x",)) == ("select '100%', $1", ["x"])
    with pytest.raises(ValueError):
        _placeholders("select %d", (1,))


def test_values_round_trip_by_their_types(pg_url):
    conn = connect(pg_url, {})
    try:
        blob = bytes(range(256)) * 3
        row = conn.execute(
            "select %s::bytea, %s::bigint, %s::float8, %s::bool, %s::text, %s::text, %s::int, 'é ✓'",
            (blob, -(2**62), 1.5, True, "it's 100% ok", None, 7),
        ).fetchone()
        assert row == (blob, -(2**62), 1.5, True, "it's 100% ok", None, 7, "é ✓")
        assert conn.execute("select 1 where false", ()).fetchall() == []
        assert conn.execute("create temp table t (k text primary key, v bytea)").description is None
        assert conn.execute("insert into t values (%s, %s), (%s, %s)", ("a", b"", "b", b"\x00")).rowcount == 2
        assert conn.execute("select v from t order by k", ()).fetchall() == [(b"",), (b"\x00",)]
    finally:
        conn.close()
    assert conn.closed


def test_transactions_commit_roll_back_and_nest_as_savepoints(pg_url):
    conn = connect(pg_url, {})
    try:
        conn.execute("create temp table t (n int)")
        with conn.transaction():
            conn.execute("insert into t values (%s)", (1,))
            with pytest.raises(RuntimeError):
                with conn.transaction():
                    conn.execute("insert into t values (%s)", (2,))
                    raise RuntimeError("inner")
            assert conn.in_transaction
        assert not conn.in_transaction
        with pytest.raises(PgError) as failed:
            with conn.transaction():
                conn.execute("insert into t values (%s)", (3,))
                conn.execute("insert into t values (%s)", ("not a number",))
        assert failed.value.sqlstate == "22P02" and not failed.value.operational
        assert [row[0] for row in conn.execute("select n from t order by n", ()).fetchall()] == [1]
    finally:
        conn.close()


def test_errors_are_one_line_and_say_whether_the_session_is_gone(pg_url):
    db = Database(pg_url)
    with pytest.raises(UwfError) as bad:
        db.query("select * from no_such_table")
    assert not isinstance(bad.value, StoreUnavailableError)
    assert bad.value.message.startswith("cannot read the PostgreSQL root") and "no_such_table" in bad.value.message
    assert "\n" not in bad.value.message
    with pytest.raises(StoreUnavailableError) as away:
        Database(pg_url.replace("port=", "port=1")).query("select 1")
    assert away.value.message.startswith("cannot reach the PostgreSQL root") and "\n" not in away.value.message


def test_a_session_the_server_ended_is_replaced_before_the_next_statement(pg_url):
    db = Database(pg_url)
    first = db.query("select pg_backend_pid()")[0][0]
    ender = connect(pg_url, {})
    try:
        ender.execute("select pg_terminate_backend(%s::int)", (first,))
    finally:
        ender.close()
    time.sleep(0.2)
    assert db.query("select pg_backend_pid()")[0][0] != first  # once more on a new session, no error
    with db.transaction() as conn:  # and a transaction's BEGIN likewise
        conn.execute("select 1")


def test_notifications_arrive_and_a_wait_ends_at_its_timeout(pg_url):
    listener = connect(pg_url, {})
    talker = connect(pg_url, {})
    try:
        listener.execute("listen uwf_test")
        started = time.monotonic()
        assert list(listener.notifies(timeout=0.3)) == []
        assert 0.25 < time.monotonic() - started < 2
        threading.Timer(0.2, lambda: talker.execute("notify uwf_test")).start()
        assert list(listener.notifies(timeout=10)) == [("uwf_test", "")]
    finally:
        time.sleep(0.3)
        listener.close()
        talker.close()


def test_a_threads_connections_close_when_the_thread_ends(pg_url):
    """uwf-tui and a worker step in threads that come and go; each thread's connection (and its idle
    lock sessions) must end with it, or a workbench left open fills the server's connections."""
    import gc

    db = Database(pg_url)

    def work() -> None:
        db.query("select 1")
        db.return_session(db.borrow_session())

    for _ in range(20):
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    gc.collect()
    sessions = db.query("select count(*) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()")[0][0]
    assert sessions == 0, f"{sessions} sessions of ended threads are still open"
