"""The storage contract: what every backend must do, whatever holds the root.

Parametrised over backends (harlequin's adapter tests are the model): a new
backend joins BACKENDS and must pass every test here unchanged. The engine
above talks only to store.base's interface, so passing this suite is what
lets a backend run threads.
"""

from __future__ import annotations

import threading

import pytest

from uwf_core.errors import ConflictError, LockedError, NotFoundError
from uwf_core.store.cas import CasStore
from uwf_core.store.records import OutsideWrites, RunRecord

HASH_A, HASH_B, HASH_C = "0000000000001", "0000000000002", "0000000000003"
THREAD_1, THREAD_2 = "01K5N00001ABCDEFGHJKMNPQR0", "01K5N00002ABCDEFGHJKMNPQR1"


def _fs_backend(tmp_path):
    from uwf_core.store.fs.backend import FsBackend

    return FsBackend(str(tmp_path / "root"))


def _pg_backend(request, tmp_path):
    from uwf_core.store.open import open_backend

    return open_backend(request.getfixturevalue("pg_url"))


BACKENDS = {"fs": lambda request, tmp_path: _fs_backend(tmp_path), "pg": _pg_backend}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request, tmp_path):
    return BACKENDS[request.param](request, tmp_path)


# -- nodes -------------------------------------------------------------------------------


def test_nodes_round_trip_bytes_and_index_by_type(backend):
    nodes = backend.nodes
    assert nodes.read(HASH_A) is None and not nodes.exists(HASH_A)
    nodes.write(HASH_A, HASH_C, b"\x01\x02")
    nodes.write(HASH_B, HASH_C, b"\x03")
    assert nodes.read(HASH_A) == b"\x01\x02"
    assert nodes.exists(HASH_A) and nodes.exists(HASH_B)
    assert nodes.hashes() == [HASH_A, HASH_B]
    assert nodes.of_type(HASH_C) == [HASH_A, HASH_B]
    assert nodes.of_type(HASH_A) == []


def test_writing_a_node_again_keeps_it_once(backend):
    backend.nodes.write(HASH_A, HASH_C, b"x")
    backend.nodes.write(HASH_A, HASH_C, b"x")
    assert backend.nodes.hashes() == [HASH_A]
    assert backend.nodes.of_type(HASH_C) == [HASH_A]


def test_freshen_renews_age_and_says_whether_the_node_exists(backend):
    nodes = backend.nodes
    assert nodes.freshen(HASH_A) is False
    nodes.write(HASH_A, HASH_C, b"x")
    first = nodes.touched_at(HASH_A)
    assert first is not None
    assert nodes.freshen(HASH_A) is True
    assert nodes.touched_at(HASH_A) >= first
    assert nodes.touched_at(HASH_B) is None


def test_a_batch_commits_its_writes_together_or_not_at_all(backend):
    nodes = backend.nodes
    with nodes.batch():
        nodes.write(HASH_A, HASH_C, b"a")
        with nodes.batch():  # nested: one commit at the end of the outermost
            nodes.write(HASH_B, HASH_C, b"b")
        assert nodes.read(HASH_B) == b"b"  # this writer sees its own writes at once
        seen_elsewhere = []
        reader = threading.Thread(target=lambda: seen_elsewhere.append(nodes.exists(HASH_A)))
        reader.start()
        reader.join()
        assert seen_elsewhere == [False]  # nobody else sees them before the commit
    assert nodes.hashes() == [HASH_A, HASH_B]
    with pytest.raises(RuntimeError):
        with nodes.batch():
            nodes.write(HASH_C, HASH_C, b"c")
            raise RuntimeError("the step failed")
    assert not nodes.exists(HASH_C)  # undone


def test_touched_all_and_derived_data(backend):
    nodes = backend.nodes
    assert nodes.touched_all() == {} and nodes.derived("count:" + HASH_A) is None
    nodes.write(HASH_A, HASH_C, b"a")
    assert set(nodes.touched_all()) == {HASH_A}
    nodes.put_derived("count:" + HASH_A, b"1")
    nodes.put_derived("count:" + HASH_A, b"2")  # replaced, not added
    assert nodes.derived("count:" + HASH_A) == b"2"
    with nodes.index_lock():
        assert nodes.pack() == 0  # nothing kept apart in a new root


def test_delete_and_rebuild_the_index(backend):
    nodes = backend.nodes
    nodes.write(HASH_A, HASH_C, b"x")
    nodes.write(HASH_B, HASH_C, b"y")
    nodes.delete(HASH_A)
    nodes.delete(HASH_A)  # deleting what is gone is not an error
    assert nodes.hashes() == [HASH_B]
    with nodes.index_lock():
        nodes.rebuild_index({HASH_C: [HASH_B]})
    assert nodes.of_type(HASH_C) == [HASH_B]
    assert nodes.strays() == []


def test_the_cas_gives_the_reference_hashes_on_every_backend(backend):
    store = CasStore(backend.nodes)
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "number"}},
        "required": ["name"],
        "additionalProperties": False,
    }
    assert store.ensure_builtins()  # the meta-schema is 56GP9CC0KVQF8
    assert store.has("56GP9CC0KVQF8")
    type_hash = store.put_schema(schema)
    assert type_hash == "7XX5H51CVD9H0"
    assert store.put(type_hash, {"name": "Alice", "age": 30}) == "ERARPP19YJT05"
    fresh = CasStore(backend.nodes)  # another process's view
    assert fresh.get("ERARPP19YJT05").payload == {"name": "Alice", "age": 30}
    assert fresh.of_type(type_hash) == ["ERARPP19YJT05"]


@pytest.mark.parametrize("hold", [8 << 20, 1000])  # the compressed pieces kept, or made again
def test_a_large_file_is_the_node_put_gives_written_in_pieces(backend, monkeypatch, hold):
    import os
    import random

    from uwf_core.store.fs import node_db
    from uwf_core.workspace.tree import STREAM_FROM, blob_payload, ensure_schemas, put_large_blob, read_blob

    monkeypatch.setattr(node_db, "HOLD", hold)
    store = CasStore(backend.nodes)
    ensure_schemas(store)
    text = "".join(random.Random(3).choice("abc \u00e9\n") for _ in range(STREAM_FROM + 7)).encode()
    binary = os.urandom(STREAM_FROM + 2) + b"\xff"  # not UTF-8, a length that is not a multiple of 3
    for data in (text, binary):
        expected = store.put(*blob_payload(data))
        backend.nodes.delete(expected)
        assert put_large_blob(store, data) == expected
        assert read_blob(CasStore(backend.nodes), expected) == data  # another process's view
        assert put_large_blob(store, data) == expected  # again: found, not written twice
    assert len(backend.nodes.hashes()) == len(set(backend.nodes.hashes()))
    if hasattr(backend.nodes, "write_pieces"):  # bytes compression cannot shrink: written as they are
        noise = [os.urandom(100_000) for _ in range(3)]
        backend.nodes.write_pieces(HASH_B, HASH_C, lambda: iter(noise))
        assert backend.nodes.read(HASH_B) == b"".join(noise)


# -- thread heads --------------------------------------------------------------------------


def test_heads_move_only_by_compare_and_set(backend):
    threads = backend.threads
    assert threads.heads() == {}
    threads.add(THREAD_1, HASH_A)
    threads.compare_and_set(THREAD_1, HASH_A, HASH_B)
    assert threads.heads() == {THREAD_1: HASH_B}
    with pytest.raises(ConflictError, match="moved from"):
        threads.compare_and_set(THREAD_1, HASH_A, HASH_C)
    assert threads.heads() == {THREAD_1: HASH_B}


def test_compare_and_set_can_archive_and_an_archived_thread_cannot_move(backend):
    threads = backend.threads
    threads.add(THREAD_1, HASH_A)
    threads.compare_and_set(THREAD_1, HASH_A, HASH_B, archive_reason="done", workflow=HASH_C)
    assert threads.heads() == {}
    record = threads.last_archived(THREAD_1)
    assert (record.thread, record.head, record.reason, record.workflow) == (THREAD_1, HASH_B, "done", HASH_C)
    assert record.completed_at
    with pytest.raises(ConflictError, match="archived"):
        threads.compare_and_set(THREAD_1, HASH_B, HASH_C)


def test_archive_checks_the_expected_head_and_keeps_history_in_order(backend):
    threads = backend.threads
    threads.add(THREAD_1, HASH_A)
    threads.add(THREAD_2, HASH_B)
    with pytest.raises(ConflictError):
        threads.archive(THREAD_1, None, "killed", expected=HASH_B)
    assert threads.archive(THREAD_1, None, "killed", expected=HASH_A) == HASH_A
    assert threads.archive(THREAD_2, HASH_C, "max-steps") == HASH_B
    with pytest.raises(ConflictError, match="not active"):
        threads.archive(THREAD_2, HASH_C, "killed")
    assert [(r.thread, r.reason) for r in threads.history()] == [(THREAD_1, "killed"), (THREAD_2, "max-steps")]
    assert threads.last_archived("01K5N00003ABCDEFGHJKMNPQR2") is None


def test_a_healthy_root_reports_no_damaged_entries(backend):
    backend.threads.add(THREAD_1, HASH_A)
    backend.threads.archive(THREAD_1, None, "killed")
    backend.queue.enqueue(THREAD_2)
    assert backend.threads.damaged() == [] and backend.runs.damaged() == [] and backend.queue.damaged() == []


def test_a_threads_own_workspace_is_kept_and_replaced(backend):
    threads = backend.threads
    assert threads.workspaces() == {}
    threads.set_workspace(THREAD_1, "/work/a")
    threads.set_workspace(THREAD_2, "/work/b c")
    threads.set_workspace(THREAD_1, "/work/a2")
    assert threads.workspaces() == {THREAD_1: "/work/a2", THREAD_2: "/work/b c"}


def test_racing_compare_and_set_has_exactly_one_winner(backend):
    backend.threads.add(THREAD_1, HASH_A)
    outcomes: list[str] = []

    def move(new: str) -> None:
        try:
            backend.threads.compare_and_set(THREAD_1, HASH_A, new)
            outcomes.append("won")
        except ConflictError:
            outcomes.append("lost")

    racers = [threading.Thread(target=move, args=(new,)) for new in (HASH_B, HASH_C)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    assert sorted(outcomes) == ["lost", "won"]
    assert backend.threads.heads()[THREAD_1] in (HASH_B, HASH_C)


# -- registry, runs, config ---------------------------------------------------------------------


def test_registry_keeps_versions_newest_first_and_rolls_back(backend):
    registry = backend.registry
    assert registry.entries() == {}
    assert registry.register("wf", HASH_A, None) is True
    assert registry.register("wf", HASH_A, None) is False  # already current
    assert registry.register("wf", HASH_B, HASH_C) is True
    entry = registry.entries()["wf"]
    assert entry.hash == HASH_B and entry.current.source == HASH_C
    assert [version.hash for version in entry.history] == [HASH_A]
    rolled = registry.rollback("wf")
    assert rolled.hash == HASH_A and [v.hash for v in rolled.history] == [HASH_B]
    with pytest.raises(NotFoundError):
        registry.rollback("other")


def test_runs_are_appended_and_read_per_thread(backend):
    def record(thread: str, status: str) -> RunRecord:
        return RunRecord(thread, HASH_C, "planner", "script", status, HASH_A, None, 1, 2, 1, error=None if status == "ok" else "boom")

    backend.runs.append(record(THREAD_1, "failed"))
    backend.runs.append(record(THREAD_2, "ok"))
    backend.runs.append(record(THREAD_1, "ok"))
    assert [r.status for r in backend.runs.read(THREAD_1)] == ["failed", "ok"]
    assert len(backend.runs.read()) == 3
    assert backend.runs.read(THREAD_1)[0] == record(THREAD_1, "failed")
    outside = OutsideWrites(state=("~/.cli/sessions/x.jsonl",), refused=(".git/config (a git setting)",), more=3)
    backend.runs.append(RunRecord(THREAD_2, HASH_C, "planner", "cli", "ok", HASH_A, HASH_B, 1, 2, 1, containment="bubblewrap", outside=outside))
    assert [(r.thread, r.containment, r.outside) for r in backend.runs.of_step(HASH_B)] == [(THREAD_2, "bubblewrap", outside)]
    assert backend.runs.of_step(HASH_C) == []  # a workflow hash in the record is not the step


def test_config_text_round_trips(backend):
    assert backend.config.read() is None
    backend.config.write("defaultAgent: script\n")
    assert backend.config.read() == "defaultAgent: script\n"


def test_change_token_moves_with_every_kind_of_change(backend):
    tokens = [backend.change_token()]
    backend.threads.add(THREAD_1, HASH_A)
    tokens.append(backend.change_token())
    backend.registry.register("wf", HASH_B, None)
    tokens.append(backend.change_token())
    backend.runs.append(RunRecord(THREAD_1, None, None, None, "ok", HASH_A, HASH_B, 1, 2, 1))
    tokens.append(backend.change_token())
    backend.config.write("a: b\n")
    tokens.append(backend.change_token())
    assert len(set(tokens)) == len(tokens)
    assert backend.change_token() == tokens[-1]  # nothing changed, nothing to reload


# -- step locks -----------------------------------------------------------------------------------


def test_a_step_lock_is_exclusive_and_says_who_holds_it(backend):
    assert backend.locks.running(THREAD_1) is None
    with backend.locks.acquire(THREAD_1) as lease:
        assert lease.interrupted is None
        lease.update(role="planner", agent="script", pgid=None)
        running = backend.locks.running(THREAD_1)
        assert running is not None and running.role == "planner" and running.agent == "script"
        with pytest.raises(LockedError, match="already being stepped"):
            with backend.locks.acquire(THREAD_1):
                pass
        with backend.locks.acquire(THREAD_2):  # other threads step in parallel
            pass
    with backend.locks.acquire(THREAD_1):  # released
        pass


def test_compare_and_set_runs_its_check_with_the_heads_held_and_a_failing_check_moves_nothing(backend):
    backend.threads.add(THREAD_1, HASH_A)

    def refuse() -> None:
        raise ConflictError("the new step's nodes are gone")

    with pytest.raises(ConflictError, match="nodes are gone"):
        backend.threads.compare_and_set(THREAD_1, HASH_A, HASH_B, check=refuse)
    assert backend.threads.heads() == {THREAD_1: HASH_A}


def test_exclusive_holds_every_head_still(backend):
    backend.threads.add(THREAD_1, HASH_A)
    moved = threading.Event()

    def move() -> None:
        backend.threads.compare_and_set(THREAD_1, HASH_A, HASH_B)
        moved.set()

    with backend.threads.exclusive():
        mover = threading.Thread(target=move)
        mover.start()
        assert not moved.wait(0.3)  # waits for the holder
        assert backend.threads.heads() == {THREAD_1: HASH_A}
    mover.join(5)
    assert moved.is_set() and backend.threads.heads() == {THREAD_1: HASH_B}


# -- the work queue and waiting for changes -------------------------------------------------


def test_the_queue_hands_each_thread_to_one_worker_at_a_time(backend):
    queue = backend.queue
    assert queue.enqueue(THREAD_1) is True and queue.enqueue(THREAD_2) is True
    assert queue.enqueue(THREAD_1) is False  # already queued
    assert [entry.thread for entry in queue.entries()] == [THREAD_1, THREAD_2]
    first = queue.claim("worker-a")
    assert first is not None and first.thread == THREAD_1
    assert {entry.thread: entry.worker for entry in queue.entries()} == {THREAD_1: "worker-a", THREAD_2: None}
    second = queue.claim("worker-b")  # the oldest one nobody holds
    assert second is not None and second.thread == THREAD_2
    assert queue.claim("worker-c") is None  # both held
    first.release()
    again = queue.claim("worker-c")
    assert again is not None and again.thread == THREAD_1
    again.release()
    second.release()
    queue.dequeue(THREAD_1)
    assert [entry.thread for entry in queue.entries()] == [THREAD_2]


def test_waiting_for_a_change_returns_when_one_happens(backend):
    token = backend.change_token()
    assert backend.wait_for_change("not the token", 5) == token  # already different: at once
    changer = threading.Timer(0.3, lambda: backend.queue.enqueue(THREAD_1))
    changer.start()
    import time

    started = time.monotonic()
    changed = backend.wait_for_change(token, 10)
    changer.join()
    assert changed != token and time.monotonic() - started < 5
