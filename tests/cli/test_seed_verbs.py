"""The seeds' verbs uwf lacked (issue 42), on both backends: `uwf ps` (the steps in flight, any
host) and `uwf thread fork T --from-role ROLE [--nth K]`."""

from __future__ import annotations

import time

import pytest
from loop_workflow import loop_workflow
from place import runner

SLOW = "cat >/dev/null; echo started >&2; sleep 4; echo '{\"$status\": \"again\", \"n\": 1}'"
QUICK = "cat >/dev/null; echo '{\"$status\": \"again\", \"n\": 1}'"


@pytest.fixture(params=["dir", "postgresql"])
def place(request, root_dir, tmp_path):
    location = str(root_dir) if request.param == "dir" else request.getfixturevalue("pg_url")
    run = runner(location, str(root_dir / "host.env"))
    (tmp_path / "loop.yaml").write_text(loop_workflow(50))
    run("workflow", "put", str(tmp_path / "loop.yaml"))
    run("agent", "add", "slow", "--protocol", "text", "--", "sh", "-c", SLOW)
    run("agent", "add", "quick", "--protocol", "text", "--", "sh", "-c", QUICK)
    run("setup", "--default-agent", "quick")
    return run


def test_ps_lists_the_step_in_flight_and_nothing_once_it_is_over(place):
    run = place
    thread = run("thread", "start", "loop", "-p", "go")["thread"]
    assert run("ps", "--json") == []
    stepping = run.spawn("thread", "step", thread, "--agent", "slow")
    try:
        deadline = time.monotonic() + 30
        while not (listed := run("ps", "--json")) and time.monotonic() < deadline:
            time.sleep(0.1)
        text = run.spawn("ps").communicate(timeout=60)[0]
    finally:
        stepping.communicate(timeout=60)
    assert stepping.returncode == 0
    [item] = listed
    assert item["thread"] == thread and item["role"] == "worker" and item["agent"] == "slow"
    assert item["pid"] == stepping.pid and item["host"] and item["startedAt"] > 0
    assert thread in text and "worker" in text and "slow" in text and f"pid {stepping.pid}" in text
    assert run("ps", "--json") == []
    assert "no step is running" in run.spawn("ps").communicate(timeout=60)[0]


def test_a_fork_from_a_role_takes_its_last_or_its_nth_step(place):
    run = place
    thread = run("thread", "start", "loop", "-p", "go")["thread"]
    for _ in range(3):
        run("thread", "step", thread)
    steps = [step["hash"] for step in run("thread", "steps", thread)]
    last = run("thread", "fork", thread, "--from-role", "worker")
    second = run("thread", "fork", thread[:10], "--from-role", "worker", "--nth", "2")
    assert last["head"] == steps[2] and second["head"] == steps[1]
    assert [step["hash"] for step in run("thread", "steps", second["thread"])] == steps[:2]
    unknown = run("thread", "fork", thread, "--from-role", "reviewer", code=1)
    assert f"thread {thread} has no step of role 'reviewer' (its roles so far: worker)" in unknown.stderr
    beyond = run("thread", "fork", thread, "--from-role", "worker", "--nth", "4", code=1)
    assert "has 3 steps of role 'worker': --nth 4 is not one of them" in beyond.stderr
    alone = run("thread", "fork", steps[0], "--nth", "2", code=2)
    assert "--nth counts the steps of the role --from-role names" in alone.stderr
    assert len(run("thread", "list")) == 3  # the two forks and the thread; nothing made by the refusals
