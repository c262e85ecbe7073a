"""Many `uwf` processes on one root at once (design §3, §14): different threads step
in parallel, every mutable file stays whole, nothing is lost."""

from __future__ import annotations

import json
import os
import subprocess
import time

from conftest import REPO, _uwf_command

from uwf_core.repo import Repo

SOLVE_AGENT = "uwf-script --script examples/solve-issue.script.yaml"
SOLVE_ROLES = ["planner", "developer", "reviewer", "developer", "reviewer"]
THREADS = 8
GC_THREADS = 32  # as many as the issue that found gc breaking 31 of 33 threads


def test_eight_threads_run_concurrently_to_done(uwf, root_dir):
    assert uwf("workflow", "put", "examples/solve-issue.yaml").code == 0
    threads = []
    for i in range(THREADS):
        result = uwf("thread", "start", "solve-issue", "-p", f"task number {i}")
        assert result.code == 0, result
        threads.append(result.json()["thread"])
    assert len(set(threads)) == THREADS

    env = dict(os.environ, UWF_STORAGE_ROOT=str(root_dir))
    began = time.monotonic()
    processes = [
        subprocess.Popen(
            [*_uwf_command(), "thread", "run", thread, "--agent", SOLVE_AGENT],
            cwd=str(REPO),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for thread in threads
    ]
    outputs = [process.communicate(timeout=120) for process in processes]
    elapsed = time.monotonic() - began
    for thread, process, (out, err) in zip(threads, processes, outputs):
        assert process.returncode == 0, (thread, err)
        assert "Traceback" not in err
        final = json.loads(out)
        assert final["thread"] == thread
        assert final["done"] is True and final["reason"] == "done"
    assert elapsed < 90

    listed = uwf("thread", "list", "--all").json()
    assert {item["thread"]: item.get("reason") for item in listed} == {thread: "done" for thread in threads}
    assert uwf("thread", "list").json() == []

    heads = {}
    for thread in threads:
        shown = uwf("thread", "show", thread).json()
        assert shown["done"] is True and shown["reason"] == "done"
        steps = uwf("thread", "steps", thread).json()
        assert [s["role"] for s in steps] == SOLVE_ROLES
        assert steps[-1]["hash"] == shown["head"]
        heads[thread] = shown["head"]
        read = uwf("thread", "read", thread).out
        assert f"task number {threads.index(thread)}" in read

    history = [json.loads(line) for line in (root_dir / "history.jsonl").read_text().splitlines()]
    assert len(history) == THREADS
    assert {record["thread"]: (record["head"], record["reason"]) for record in history} == {t: (heads[t], "done") for t in threads}

    assert Repo.open(str(root_dir)).threads.heads() == {}

    runs = [json.loads(line) for line in (root_dir / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == THREADS * 5
    assert all(run["status"] == "ok" for run in runs)
    for thread in threads:
        mine = [run for run in runs if run["thread"] == thread]
        assert [run["role"] for run in mine] == SOLVE_ROLES
        assert mine[-1]["step"] == heads[thread]
        assert [run["head"] for run in mine[1:]] == [run["step"] for run in mine[:-1]]

    fsck = uwf("cas", "fsck")
    assert fsck.code == 0, fsck
    report = fsck.json()
    assert report["ok"] is True and report["problems"] == []

    # no leftover lock holders, no temp files beside the state files
    for lock in (root_dir / "locks").iterdir():
        assert lock.read_text() == "", lock
    assert not [name for name in os.listdir(root_dir) if name.endswith(".tmp")]


def test_gc_with_no_grace_while_32_threads_step_loses_nothing(uwf, root_dir):
    """`uwf cas gc --grace 0` in a loop against threads stepping in parallel: every thread
    finishes whole and fsck stays clean (a running step pins what it writes; the sweep holds
    the heads still)."""
    assert uwf("workflow", "put", "examples/solve-issue.yaml").code == 0
    threads = [uwf("thread", "start", "solve-issue", "-p", f"task {i}").json()["thread"] for i in range(GC_THREADS)]
    env = dict(os.environ, UWF_STORAGE_ROOT=str(root_dir))
    steppers = [
        subprocess.Popen(
            [*_uwf_command(), "thread", "run", thread, "--agent", SOLVE_AGENT],
            cwd=str(REPO), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for thread in threads
    ]
    sweeps = 0
    deadline = time.monotonic() + 120
    while any(process.poll() is None for process in steppers) and time.monotonic() < deadline:
        swept = uwf("cas", "gc", "--grace", "0")
        assert swept.code == 0, swept
        sweeps += 1
    outputs = [process.communicate(timeout=60) for process in steppers]
    for thread, process, (_, err) in zip(threads, steppers, outputs):
        assert process.returncode == 0, (thread, err)
    assert sweeps >= 2
    final = uwf("cas", "gc", "--grace", "0")
    assert final.code == 0
    fsck = uwf("cas", "fsck")
    assert fsck.code == 0, fsck
    for thread in threads:
        assert len(uwf("thread", "steps", thread).json()) == len(SOLVE_ROLES)
        assert uwf("thread", "read", thread).code == 0


def test_a_released_lock_is_free_while_a_fork_still_holds_its_descriptor(tmp_path):
    """A worker's lanes spawn agents while others release step locks: a child between fork and exec
    holds a copy of every descriptor. Closing ours alone left the flock held by that copy (the next
    step of the thread found it locked); released, it is unlocked first."""
    import os
    import signal

    from uwf_core.errors import LockedError
    from uwf_core.store.files import FileLock

    path = str(tmp_path / "thread.lock")
    first = FileLock(path, wait=False).acquire()
    child = os.fork()
    if child == 0:  # a lane's agent, not yet exec'd: holds the descriptor until it dies
        signal.pause()
        os._exit(0)
    try:
        first.release()
        again = FileLock(path, wait=False)
        try:
            again.acquire()
        except LockedError:
            raise AssertionError("the lock stayed held by the forked child's copy of the descriptor") from None
        again.release()
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
