"""`uwf worker` on a directory root and on a real PostgreSQL root: many workers and threads, a
worker SIGKILLed or SIGTERMed mid-step, a step typed by hand racing a worker, the database
restarted under a worker. Real `uwf` processes throughout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from conftest import EXAMPLES, REPO, _uwf_command

SCRIPT_AGENT = f"script=uwf-script --script-dir {EXAMPLES}"
SOLVE_ROLES = ["planner", "developer", "reviewer", "developer", "reviewer"]
ANSWERS = {
    "planner": {"plan": "p", "steps": ["s"]},
    "developer": {"filesChanged": ["a.py"], "summary": "s"},
}


def _slow_agent(seconds: float) -> list[str]:
    """A text agent that takes `seconds` and answers solve-issue's roles (the reviewer approves the
    second time, as examples/solve-issue.script.yaml does): `uwf agent add` arguments."""
    planner, developer = json.dumps(ANSWERS["planner"]), json.dumps(ANSWERS["developer"])
    script = (
        f"prompt=$(cat); sleep {seconds}; case \"$UWF_ROLE\" in planner) echo '{planner}';; developer) echo '{developer}';; "
        "*) if echo \"$prompt\" | grep -q '### Step 4:'; then echo '{\"approved\": true, \"comments\": \"ok\"}'; "
        "else echo '{\"approved\": false, \"comments\": \"again\"}'; fi;; esac"
    )
    return ["slow", "--protocol", "text", "--", "sh", "-c", script]


@pytest.fixture(params=["dir", "postgresql"])
def place(request, root_dir):
    """(location, run): a root of each kind and a `uwf` runner bound to it."""
    location = str(root_dir) if request.param == "dir" else request.getfixturevalue("pg_url")
    env = dict(os.environ, UWF_STORAGE_ROOT=location, UWF_ENV_FILE=str(root_dir / "host.env"))

    def run(*args: str, timeout: float = 120):
        done = subprocess.run([*_uwf_command(), *args], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=timeout)
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def spawn(*args: str):
        return subprocess.Popen([*_uwf_command(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(REPO))

    run.spawn = spawn
    run.location = location
    assert run("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).returncode == 0
    return run


def _use_agent(run, agent) -> None:
    """`agent`: "name=command" (a step-protocol agent) or `uwf agent add` arguments."""
    if isinstance(agent, str):
        done = run("setup", "--agent", agent, "--default-agent", agent.split("=")[0])
    else:
        added = run("agent", "add", *agent)
        assert added.returncode == 0, added.stderr
        done = run("setup", "--default-agent", agent[0])
    assert done.returncode == 0, done.stderr


def _start(run, agent, count: int) -> list[str]:
    _use_agent(run, agent)
    threads = []
    for i in range(count):
        started = run("thread", "start", "solve-issue", "-p", f"task {i}")
        threads.append(json.loads(started.stdout)["thread"])
        queued = run("thread", "run", threads[-1], "--detach")
        assert queued.returncode == 0 and json.loads(queued.stdout) == {"thread": threads[-1], "queued": True}
    return threads


def _all_done(run, threads: list[str]) -> None:
    archived = {item["thread"]: item for item in json.loads(run("thread", "list", "--all").stdout)}
    for thread in threads:
        assert archived[thread].get("reason") == "done", archived[thread]
        steps = json.loads(run("thread", "steps", thread).stdout)
        assert [step["role"] for step in steps] == SOLVE_ROLES
    fsck = run("cas", "fsck")
    assert fsck.returncode == 0 and json.loads(fsck.stdout)["ok"], fsck.stdout


def _wait_for(predicate, timeout: float = 60, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_many_workers_step_many_threads_each_exactly_once(place):
    threads = _start(place, SCRIPT_AGENT, 10)
    workers = [place.spawn("worker", "--once", "--concurrency", "2", "--name", f"w{i}") for i in range(3)]
    logs = [worker.communicate(timeout=240) for worker in workers]
    assert all(worker.returncode == 0 for worker in workers), logs
    _all_done(place, threads)
    oks = [r for t in threads for r in json.loads(place("thread", "runs", t).stdout) if r["status"] == "ok"]
    assert len(oks) == 10 * len(SOLVE_ROLES)  # no step taken twice
    assert json.loads(place("thread", "list").stdout) == []  # nothing left queued or active


def test_a_worker_killed_mid_step_loses_its_claim_and_another_goes_on(place):
    threads = _start(place, _slow_agent(1.5), 2)
    first = place.spawn("worker", "--concurrency", "2", "--name", "doomed")
    _wait_for(lambda: sum(1 for item in json.loads(place("thread", "list").stdout) if item.get("worker") == "doomed") == 2, what="doomed to hold both")
    time.sleep(1.0)  # mid-step
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=30)
    _wait_for(lambda: not any(item.get("worker") for item in json.loads(place("thread", "list").stdout)), timeout=40, what="the claims to go")
    second = place.spawn("worker", "--once", "--concurrency", "2", "--name", "heir")
    out, err = second.communicate(timeout=240)
    assert second.returncode == 0 and "failed" not in err, err
    _all_done(place, threads)
    runs = [r for t in threads for r in json.loads(place("thread", "runs", t).stdout)]
    assert any(r["status"] == "killed" and "died during this step" in (r.get("error") or "") for r in runs), runs


def test_a_running_worker_uses_an_agent_added_after_it_started(place):
    [first] = _start(place, SCRIPT_AGENT, 1)
    worker = place.spawn("worker", "--name", "long-lived")
    try:
        _wait_for(lambda: any(item["thread"] == first and item.get("reason") for item in json.loads(place("thread", "list", "--all").stdout)),
                  what="a first thread to end (the worker has read its config)")
        added = place("agent", "add", "later", "--protocol", "step", "--", "uwf-script", "--script-dir", str(EXAMPLES))
        assert added.returncode == 0, added.stderr
        thread = json.loads(place("thread", "start", "solve-issue", "-p", "late", "--agent", "planner=later").stdout)["thread"]
        assert place("thread", "run", thread, "--detach").returncode == 0
        _wait_for(lambda: any(item["thread"] == thread and item.get("reason") for item in json.loads(place("thread", "list", "--all").stdout)),
                  what="the thread to end")
    finally:
        worker.terminate()
        out, err = worker.communicate(timeout=30)
    _all_done(place, [first, thread])
    assert json.loads(place("thread", "steps", thread).stdout)[0]["agent"] == "later", err


def test_sigterm_cancels_the_step_keeps_the_thread_queued_and_exits_0(place):
    [thread] = _start(place, _slow_agent(3), 1)
    head = json.loads(place("thread", "show", thread).stdout)["head"]
    worker = place.spawn("worker", "--name", "polite")
    _wait_for(lambda: any(item.get("worker") == "polite" for item in json.loads(place("thread", "list").stdout)), what="a claim")
    _wait_for(lambda: json.loads(place("thread", "show", thread).stdout).get("running", {}).get("worker") == "polite",
              what="thread show to name the worker running the step")
    worker.send_signal(signal.SIGTERM)
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    listed = {item["thread"]: item for item in json.loads(place("thread", "list").stdout)}
    assert listed[thread].get("queued") is True and "worker" not in listed[thread]
    assert listed[thread]["head"] == head  # the cancelled step moved nothing
    assert [r["status"] for r in json.loads(place("thread", "runs", thread).stdout)] == ["killed"]


def test_a_step_typed_by_hand_and_a_worker_never_both_step(place):
    [thread] = _start(place, _slow_agent(1.5), 1)
    by_hand = place.spawn("thread", "step", thread)  # holds the step lock for 1.5 s
    _wait_for(lambda: _running(place, thread), what="the step typed by hand")
    worker = place.spawn("worker", "--once", "--name", "busy")  # its first step meets the lock: it waits
    assert by_hand.wait(timeout=60) == 0, by_hand.communicate()[1]
    _wait_for(lambda: _running(place, thread), what="the worker's step")
    collided = place("thread", "step", thread)  # now the worker holds it: refused at once, naming it
    assert collided.returncode == 1 and "already being stepped" in collided.stderr, collided.stderr
    out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0 and "busy" in err, err
    steps = json.loads(place("thread", "steps", thread).stdout)
    assert [step["role"] for step in steps] == SOLVE_ROLES  # each step once, whoever took it


def _running(run, thread: str) -> bool:
    """Whether a step of `thread` is in progress (its attempt is on record only when it ends)."""
    return json.loads(run("thread", "show", thread).stdout).get("running") is not None


def test_the_database_restarted_under_a_worker(pg_cluster, pg_url, root_dir):
    env = dict(os.environ, UWF_STORAGE_ROOT=pg_url, UWF_ENV_FILE=str(root_dir / "host.env"))

    def run(*args):
        return subprocess.run([*_uwf_command(), *args], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=120)

    assert run("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).returncode == 0
    _use_agent(run, _slow_agent(0.3))
    threads = [json.loads(run("thread", "start", "solve-issue", "-p", f"t{i}").stdout)["thread"] for i in range(3)]
    for thread in threads:
        assert run("thread", "run", thread, "--detach").returncode == 0
    worker = subprocess.Popen([*_uwf_command(), "worker", "--name", "survivor"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(REPO))
    time.sleep(1.5)
    pg_cluster.restart()  # immediate: every session is cut, mid-step
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        listed = run("thread", "list", "--all")
        if listed.returncode == 0 and all(item.get("reason") == "done" for item in json.loads(listed.stdout) if item["thread"] in threads):
            break
        time.sleep(1)
    worker.send_signal(signal.SIGTERM)
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0 and "Traceback" not in err, err
    assert "waiting" in err or "cannot" in err  # it said what happened, in one line each
    for thread in threads:
        steps = json.loads(run("thread", "steps", thread).stdout)
        assert [step["role"] for step in steps] == SOLVE_ROLES
        # the worker lived through it: no attempt is told as a dead process's
        for record in json.loads(run("thread", "runs", thread).stdout):
            assert "died" not in (record.get("error") or ""), record
            if record["status"] == "killed":
                assert "the database restarted" in record["error"], record
    assert json.loads(run("cas", "fsck").stdout)["ok"]


def test_a_step_that_outlives_a_database_restart_is_not_told_as_a_dead_worker(pg_cluster, pg_url, root_dir):
    """The database goes down while an agent runs and stays down past its end: the step cannot
    land, the worker waits, and when the database is back the interrupted attempt is on record
    as the restart's, not as a dead process's; the thread then goes on to its end."""
    env = dict(os.environ, UWF_STORAGE_ROOT=pg_url, UWF_ENV_FILE=str(root_dir / "host.env"))

    def run(*args):
        return subprocess.run([*_uwf_command(), *args], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=120)

    assert run("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).returncode == 0
    _use_agent(run, _slow_agent(1.0))
    thread = json.loads(run("thread", "start", "solve-issue", "-p", "t").stdout)["thread"]
    assert run("thread", "run", thread, "--detach").returncode == 0
    worker = subprocess.Popen([*_uwf_command(), "worker", "--name", "survivor"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(REPO))
    try:
        _wait_for(lambda: _running(run, thread), what="the first step to start")
        pg_cluster.restart(down_for=3.0)  # the agent ends while the database is away
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            listed = run("thread", "list", "--all")
            if listed.returncode == 0 and any(item["thread"] == thread and item.get("reason") == "done" for item in json.loads(listed.stdout)):
                break
            time.sleep(0.5)
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=60)
    assert "Traceback" not in err and "WARNING:" not in err, err  # the server's notices are not the worker's log
    records = json.loads(run("thread", "runs", thread).stdout)
    assert [step["role"] for step in json.loads(run("thread", "steps", thread).stdout)] == SOLVE_ROLES, (records, err)
    interrupted = [record for record in records if record["status"] != "ok"]
    assert interrupted and all("the database restarted" in (record.get("error") or "") for record in interrupted), records
    assert not any("died" in (record.get("error") or "") for record in records), records


def test_an_idle_worker_stops_on_sigterm_without_waiting_out_its_idle_wait(place):
    """An idle lane waited up to 5 s for a change before it saw stop(); now it looks every half second."""
    worker = place.spawn("worker", "--name", "idle")
    time.sleep(1.0)  # idle: nothing is queued, the lane waits for a change
    asked = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    worker.communicate(timeout=30)
    assert worker.returncode == 0
    assert time.monotonic() - asked < 3.0  # the old wait had ~4 s left here
