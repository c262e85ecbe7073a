"""The seeds' verbs uwf lacked (issue 42), on both backends: `uwf ps` (the steps in flight, any
host) and `uwf thread fork T --from-role ROLE [--nth K]`."""

from __future__ import annotations

import os
import time

import pytest
from loop_workflow import loop_workflow
from place import loop_runner

SLOW = "cat >/dev/null; echo started >&2; sleep 4; echo '{\"$status\": \"again\", \"n\": 1}'"
QUICK = "cat >/dev/null; echo '{\"$status\": \"again\", \"n\": 1}'"


@pytest.fixture(params=["dir", "postgresql"])
def place(request, root_dir, tmp_path):
    location = str(root_dir) if request.param == "dir" else request.getfixturevalue("pg_url")
    return loop_runner(location, root_dir, tmp_path, {"slow": SLOW, "quick": QUICK}, "quick")


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


def test_thread_rm_takes_a_thread_out_and_says_what_gc_frees(place):
    run = place
    kept = run("thread", "start", "loop", "-p", "kept")["thread"]
    gone = run("thread", "start", "loop", "-p", "gone")["thread"]
    for thread in (kept, gone):
        run("thread", "step", thread)
    fork = run("thread", "fork", gone, "--from-role", "worker")["thread"]  # shares gone's step
    run("thread", "kill", fork)
    removed = run("thread", "rm", gone)
    assert removed["removed"] == gone and len(removed["heads"]) == 1
    assert removed["frees"] == 0  # the archived fork still reaches gone's step and start
    assert gone not in {item["thread"] for item in run("thread", "list", "--all")}
    assert "no thread" in run("thread", "show", gone, code=1).stderr
    removed_fork = run("thread", "rm", fork[:12])
    assert removed_fork["removed"] == fork and removed_fork["frees"] >= 2  # now the start and the step are nobody's
    assert "no thread" in run("thread", "rm", fork, code=1).stderr
    assert [item["thread"] for item in run("thread", "list", "--all")] == [kept]
    swept = run("cas", "gc", "--grace", "0")
    assert len(swept["deleted"]) >= removed_fork["frees"]
    assert run("thread", "show", kept)["steps"] == 1  # gc took nothing of the thread that stayed


def test_thread_rm_is_refused_while_a_step_runs(place):
    run = place
    thread = run("thread", "start", "loop", "-p", "go")["thread"]
    stepping = run.spawn("thread", "step", thread, "--agent", "slow")
    try:
        deadline = time.monotonic() + 30
        while not run("ps", "--json") and time.monotonic() < deadline:
            time.sleep(0.1)
        refused = run("thread", "rm", thread, code=1)
    finally:
        stepping.communicate(timeout=60)
    assert "being stepped" in refused.stderr or "running" in refused.stderr, refused.stderr
    assert run("thread", "show", thread)["steps"] == 1  # the step landed; the thread is there


def test_workflow_remove_is_refused_while_a_thread_runs_it_unless_forced(place, tmp_path):
    run = place
    thread = run("thread", "start", "loop", "-p", "go")["thread"]
    refused = run("workflow", "remove", "loop", code=1)
    assert f"workflow 'loop' is run by 1 active thread ({thread})" in refused.stderr and "--force" in refused.stderr
    forced = run("workflow", "remove", "loop", "--force")
    assert forced["removed"] == "loop" and forced["frees"] == 1  # its YAML source: the thread still reaches the workflow
    assert run("workflow", "list") == []
    run("thread", "step", thread)  # it goes on: its workflow is in its nodes
    (tmp_path / "other.yaml").write_text(loop_workflow(3).replace("name: loop", "name: other"))
    run("workflow", "put", str(tmp_path / "other.yaml"))
    assert run("workflow", "remove", "other")["frees"] >= 2  # its workflow node and its YAML source
    assert "no workflow named 'nope'" in run("workflow", "remove", "nope", code=1).stderr


def test_thread_rm_removes_the_directory_uwf_made_for_a_fork_and_not_one_the_user_named(uwf, root_dir, tmp_path):
    (tmp_path / "loop.yaml").write_text(loop_workflow(10))
    assert uwf("agent", "add", "quick", "--protocol", "text", "--", "sh", "-c", QUICK).code == 0
    assert uwf("setup", "--default-agent", "quick").code == 0
    assert uwf("workflow", "put", str(tmp_path / "loop.yaml")).code == 0
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("hello\n")
    thread = uwf("thread", "start", "loop", "-p", "go", "-w", str(project)).json()["thread"]
    step = uwf("thread", "step", thread).json()["head"]
    made = uwf("thread", "fork", step).json()
    named = uwf("thread", "fork", step, "-w", str(tmp_path / "mine")).json()
    assert made["workspace"].startswith(str(root_dir / "workspaces")) and (tmp_path / "mine" / "notes.txt").exists()
    assert uwf("thread", "rm", made["thread"]).json()["workspace"] == made["workspace"]
    assert not os.path.exists(made["workspace"])
    assert "workspace" not in uwf("thread", "rm", named["thread"]).json()
    assert (tmp_path / "mine" / "notes.txt").read_text() == "hello\n"  # the user's directory is the user's
    assert (project / "notes.txt").exists()
