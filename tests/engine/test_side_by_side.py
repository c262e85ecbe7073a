"""Agents side by side: `uwf thread step T --agents a,b [--pick first]` and `uwf thread pick STEP`,
with real `uwf` processes on a directory root and on a real PostgreSQL root."""

from __future__ import annotations

import json

import pytest
from conftest import EXAMPLES
from place import runner

PLAN = {"plan": "p", "steps": ["s"]}


def _text_agent(name: str, seconds: float, plan: dict = PLAN) -> list[str]:
    """`uwf agent add` arguments: a text agent that answers solve-issue's planner after `seconds`."""
    return [name, "--protocol", "text", "--", "sh", "-c", f"sleep {seconds}; echo '{json.dumps(plan)}'"]


@pytest.fixture(params=["dir", "postgresql"])
def place(request, root_dir):
    """A `uwf` runner bound to a root of each kind, with solve-issue and three agents: slow, fast
    and broken (exits 3)."""
    location = str(root_dir) if request.param == "dir" else request.getfixturevalue("pg_url")
    run = runner(location, str(root_dir / "host.env"))
    run("workflow", "put", str(EXAMPLES / "solve-issue.yaml"))
    run("agent", "add", *_text_agent("slow", 30))
    run("agent", "add", *_text_agent("fast", 0, {"plan": "fast", "steps": ["a"]}))
    run("agent", "add", "broken", "--protocol", "text", "--", "sh", "-c", "echo nope >&2; exit 3")
    return run


def _start(run) -> str:
    return run("thread", "start", "solve-issue", "-p", "fix the bug")["thread"]


def _archived(run) -> dict[str, str | None]:
    return {t["thread"]: t["reason"] for t in run("thread", "list", "--all") if "reason" in t}


def test_pick_first_keeps_the_fast_answer_and_cancels_the_slow_agent(place):
    run = place
    thread = _start(run)
    before = run("thread", "show", thread)["head"]
    result = run("thread", "step", thread, "--agents", "slow,fast", "--pick", "first")
    slow, fast = result["candidates"]
    assert (result["picked"], fast["status"], slow["status"]) == ("fast", "ok", "killed")
    assert "cancelled (agent 'fast' answered first)" in slow["error"]
    assert slow["seconds"] < 30  # the slow agent's process group was killed, not waited for
    assert slow["head"] == before  # its fork never moved
    shown = run("thread", "show", thread)
    assert shown["head"] == result["head"] == fast["step"] != before
    assert run("thread", "steps", thread)[-1]["output"] == {"plan": "fast", "steps": ["a"]}
    [cancelled] = run("thread", "runs", slow["thread"])
    assert cancelled["status"] == "killed" and cancelled["candidateOf"] == thread and "answered first" in cancelled["error"]
    [adopted] = run("thread", "runs", thread)  # the thread's own log names the attempt that moved it
    assert (adopted["agent"], adopted["status"], adopted["step"]) == ("fast", "ok", fast["step"])
    assert _archived(run) == {fast["thread"]: "picked", slow["thread"]: "not-picked"}
    nxt = run("thread", "step", thread, "--agent", f"uwf-script --script-dir {EXAMPLES}")
    assert nxt["role"] == "developer"  # the thread goes on from the picked step


def test_without_a_pick_the_forks_stay_and_thread_pick_moves_the_thread(place):
    run = place
    thread = _start(run)
    before = run("thread", "show", thread)["head"]
    result = run("thread", "step", thread, "--agents", "fast,broken,slow", "--timeout", "5")
    fast, broken, slow = result["candidates"]
    assert (result["picked"], result["head"]) == (None, before)
    assert (fast["status"], broken["status"], slow["status"]) == ("ok", "failed", "timeout")
    assert "exited with code 3" in broken["error"]
    assert run("thread", "show", thread)["head"] == before  # the thread waits for a choice
    assert _archived(run) == {broken["thread"]: "not-picked", slow["thread"]: "not-picked"}  # nothing to compare
    assert run("thread", "show", fast["thread"])["head"] == fast["step"]

    picked = run("thread", "pick", fast["step"])
    assert (picked["thread"], picked["head"], picked["from"]) == (thread, fast["step"], before)
    assert picked["picked"] == [fast["thread"]]
    assert run("thread", "show", thread)["head"] == fast["step"]
    assert _archived(run)[fast["thread"]] == "picked"
    again = run("thread", "pick", fast["step"], code=1)
    assert again.stderr.strip() == f"uwf: error: thread {thread} is at {fast['step']} already"


def test_pick_archives_the_other_candidates_that_did_not_move(place):
    run = place
    run("agent", "add", *_text_agent("other", 0, {"plan": "other", "steps": ["b"]}))
    thread = _start(run)
    result = run("thread", "step", thread, "--agents", "fast,other")
    fast, other = result["candidates"]
    picked = run("thread", "pick", other["step"], "--thread", thread)
    assert (picked["picked"], picked["notPicked"]) == ([other["thread"]], [fast["thread"]])
    assert _archived(run) == {other["thread"]: "picked", fast["thread"]: "not-picked"}


def test_every_agent_failing_is_one_error_and_the_thread_stays(place):
    run = place
    thread = _start(run)
    before = run("thread", "show", thread)["head"]
    done = run("thread", "step", thread, "--agents", "broken,slow", "--timeout", "5", code=1)
    *streamed, error = done.stderr.strip().splitlines()
    assert streamed == ["[broken] nope"]  # each agent's stderr as it came, named
    assert error.startswith("uwf: error: every agent failed: broken: agent 'broken' exited with code 3") and "; slow: " in error
    assert run("thread", "show", thread)["head"] == before
    assert len(_archived(run)) == 2  # both forks, as not picked


@pytest.mark.parametrize(
    "args, message",
    [
        (["--agents", "fast"], "side by side needs at least two agents"),
        (["--agents", "fast,fast"], "agent 'fast' is named twice"),
        (["--agents", "fast,slow", "--agent", "fast"], "--agent and --agents exclude each other"),
        (["--agents", "fast,,slow"], "expected agent names separated by commas"),
        (["--agents", "fast,slow", "--pick", "last"], "invalid choice: 'last'"),
        (["--agents", "sh,human"], "agent 'human' is a person"),
    ],
)
def test_bad_requests_are_one_line_and_start_nothing(root_dir, uwf, args, message):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "x").json()["thread"]
    done = uwf("thread", "step", thread, *args)
    assert done.code in (1, 2) and message in done.err and "Traceback" not in done.err
    assert [t["thread"] for t in uwf("thread", "list", "--all").json()] == [thread]  # no fork was made


def test_pick_refuses_a_start_and_a_thread_not_before_the_step(root_dir, uwf):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    assert uwf("setup", "--agent", f"script=uwf-script --script-dir {EXAMPLES}", "--default-agent", "script").code == 0
    first = uwf("thread", "start", "solve-issue", "-p", "one").json()
    second = uwf("thread", "start", "solve-issue", "-p", "two").json()["thread"]
    step = uwf("thread", "step", first["thread"]).json()["head"]
    start = uwf("thread", "pick", first["head"])
    assert start.code == 1 and "is a thread's start, not a step" in start.err
    elsewhere = uwf("thread", "pick", step, "--thread", second)
    assert elsewhere.code == 1 and f"thread {second} is not at an earlier step of {step}" in elsewhere.err
    fork = uwf("thread", "fork", first["head"]).json()["thread"]
    moved = uwf("thread", "pick", step).json()  # the fork is the one thread at an earlier step
    assert (moved["thread"], moved["head"]) == (fork, step)


def test_the_thread_at_its_end_is_refused(root_dir, uwf):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    assert uwf("setup", "--agent", f"script=uwf-script --script-dir {EXAMPLES}", "--default-agent", "script").code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "x").json()["thread"]
    head = uwf("thread", "run", thread).json()["head"]
    fork = uwf("thread", "fork", head).json()["thread"]  # a thread at the done state, still active
    done = uwf("thread", "step", fork, "--agents", "a,b")
    assert done.code == 1 and "has no next step" in done.err


def test_the_picked_answer_s_files_come_to_the_thread_s_workspace(root_dir, uwf, tmp_path):
    """Each agent works in its fork's own copy of the files; the thread's directory gets the
    picked one's, and nothing of the others."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("before\n")
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    for name, seconds in (("fast", 0), ("slow", 30), ("steady", 0)):
        script = f"sleep {seconds}; echo {name} > notes.txt; echo {name} > {name}.txt; echo '{json.dumps(PLAN)}'"
        assert uwf("agent", "add", name, "--protocol", "text", "--", "sh", "-c", script).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "x", "-w", str(workspace)).json()["thread"]
    assert uwf("thread", "step", thread, "--agents", "slow,fast", "--pick", "first").code == 0
    assert sorted(p.name for p in workspace.iterdir()) == ["fast.txt", "notes.txt"]
    assert (workspace / "notes.txt").read_text() == "fast\n"

    result = uwf("thread", "step", thread, "--agents", "fast,steady")  # the developer's turn: any answer fails it
    assert result.code == 1  # fast and steady answer the planner's schema, not the developer's
    assert sorted(p.name for p in workspace.iterdir()) == ["fast.txt", "notes.txt"]  # the thread's own directory untouched


def test_python_functions_side_by_side_from_the_api(root_dir, monkeypatch):
    """The same from Python: registered functions race, the slow one stops at its next check()."""
    from uwf_core.api import Repo, put_workflow, start_thread, step_side_by_side

    repo = Repo.open(str(root_dir))
    put_workflow(repo, str(EXAMPLES / "solve-issue.yaml"))
    checks = []

    def slow(ctx):
        while True:  # a long computation that checks in between: the cooperative stop
            checks.append(1)
            ctx.check()
            ctx.workspace  # noqa: B018 (touches the context, as real work would)
            import time

            time.sleep(0.01)

    repo.agents.register("slow", slow)
    repo.agents.register("quick", lambda ctx: dict(PLAN))
    thread = start_thread(repo, "solve-issue", "x").thread
    result = step_side_by_side(repo, thread, ["slow", "quick"], pick="first")
    assert result.picked == "quick" and result.head == repo.threads.heads()[thread]
    slow_try = result.candidates[0]
    assert slow_try.status == "killed" and "was cancelled (agent 'quick' answered first)" in slow_try.error
    assert checks  # it ran until told to stop


def test_a_pick_into_another_thread_at_the_same_start_makes_it_no_candidate(root_dir, uwf):
    """Two threads with the same prompt share their StartNode: a candidate of one picked into the
    other (--thread) is that other's step now, and a later pick for the first leaves it alone."""
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    for name, plan in (("fast", PLAN), ("other", {"plan": "other", "steps": ["b"]})):
        assert uwf("agent", "add", *_text_agent(name, 0, plan)).code == 0
    first = uwf("thread", "start", "solve-issue", "-p", "Same").json()["thread"]
    second = uwf("thread", "start", "solve-issue", "-p", "Same").json()["thread"]
    fast, other = uwf("thread", "step", first, "--agents", "fast,other").json()["candidates"]
    assert uwf("thread", "pick", fast["step"], "--thread", second).json()["thread"] == second
    picked = uwf("thread", "pick", other["step"], "--thread", first).json()
    assert picked["notPicked"] == []  # `second` is nobody's candidate
    assert {t["thread"] for t in uwf("thread", "list").json()} == {first, second}


def test_pick_needs_agents_and_a_map_step_takes_none(root_dir, uwf, tmp_path):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "x").json()["thread"]
    done = uwf("thread", "step", thread, "--pick", "first")
    assert done.code == 2 and "--pick chooses among the agents of --agents" in done.err
    missing = uwf("thread", "step", thread, "--agents", "sh,no-such-agent-command")
    assert missing.code == 1 and "agent 'no-such-agent-command' cannot run here: agent command 'no-such-agent-command' not found" in missing.err
    assert uwf("workflow", "put", str(EXAMPLES / "develop.yaml")).code == 0
    assert uwf("workflow", "put", str(EXAMPLES / "fan-out.yaml")).code == 0
    assert uwf("setup", "--agent", f"script=uwf-script --script-dir {EXAMPLES}", "--default-agent", "script").code == 0
    parent = uwf("thread", "start", "fan-out", "-p", "x").json()["thread"]
    assert uwf("thread", "step", parent).code == 0
    mapped = uwf("thread", "step", parent, "--agents", "script,sh")
    assert mapped.code == 1 and "'implement', is a map: its child threads run their own agents" in mapped.err
    prompt = uwf("thread", "dry-run", parent, "--prompt-only")
    assert prompt.code == 1 and "is a map: it starts child threads, no agent gets a prompt" in prompt.err
