"""`uwf thread live` (follow a thread from another process) and `uwf thread pause | unpause`, on
both backends (issue 42, items 1 and 2): the real command in processes of their own."""

from __future__ import annotations

import json
import time

import pytest
from place import loop_runner

TALKY = "cat >/dev/null; for n in 1 2 3; do echo \"$UWF_ROLE says $n\" >&2; sleep 0.2; done; echo '{\"$status\": \"again\", \"n\": 1}'"
PACED = "cat >/dev/null; sleep 0.4; echo '{\"$status\": \"again\", \"n\": 1}'"
LONG = "cat >/dev/null; for n in 1 2 3 4; do sleep 0.7; echo \"$UWF_ROLE says $n\" >&2; done; echo '{\"$status\": \"again\", \"n\": 1}'"
QUICK = "cat >/dev/null; echo \"quick $UWF_HEAD\" >&2; echo done >&2; echo '{\"$status\": \"again\", \"n\": 1}'"
ODD = "cat >/dev/null; printf 'a\\000b\\n\\001\\nafter\\n' >&2; echo '{\"$status\": \"again\", \"n\": 1}'"
FLOOD = "cat >/dev/null; head -c 20000000 /dev/zero | tr '\\0' x | fold -w 1000 >&2; echo '{\"$status\": \"again\", \"n\": 1}'"
NAMED = "cat >/dev/null; echo 'h-*' > .gitignore; touch \"h-$LIVE_TOKEN.txt\"; echo '{\"$status\": \"again\", \"n\": 1}'"
SECRET = "cat >/dev/null; echo \"the key is $LIVE_TOKEN\" >&2; echo '{\"$status\": \"again\", \"n\": 1}'"
TOKEN = "sk-live-0123456789abcdef"


@pytest.fixture(params=["dir", "postgresql"])
def place(request, root_dir, tmp_path):
    location = str(root_dir) if request.param == "dir" else request.getfixturevalue("pg_url")
    for env in ("host.env", ".env"):  # a PostgreSQL root's host file, a directory root's own
        (root_dir / env).write_text(f"LIVE_TOKEN={TOKEN}\n")
    run = loop_runner(location, root_dir, tmp_path, {"talky": TALKY, "paced": PACED, "long": LONG}, "talky")
    for name, script in (("secret", SECRET), ("named", NAMED)):
        run("agent", "add", name, "--protocol", "text", "--secret", "LIVE_TOKEN", "--", "sh", "-c", script)
    for name, script in (("quick", QUICK), ("odd", ODD), ("flood", FLOOD)):
        run("agent", "add", name, "--protocol", "text", "--", "sh", "-c", script)
    run.kind = request.param
    return run


def _wait_for(check, seconds: float = 30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not so after {seconds} s")


def _events(process) -> list[dict]:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0 and "Traceback" not in err, err
    return [json.loads(line) for line in out.splitlines()]


def _followed(run, *agents: str) -> tuple[str, list[dict]]:
    """A new thread followed by `thread live --json` while it takes a step with each agent, then
    is killed: (the thread, what the follower told)."""
    thread = run("thread", "start", "loop", "-p", "go")["thread"]
    live = run.spawn("thread", "live", thread, "--json")
    time.sleep(1)  # attached, waiting for a step
    for agent in agents:
        run("thread", "step", thread, "--agent", agent)
    run("thread", "kill", thread)
    return thread, _events(live)


def _lines(events: list[dict]) -> list[str]:
    return [event["text"] for event in events if event["event"] == "line"]


def test_live_follows_each_step_its_lines_and_the_end_from_another_process(place):
    run = place
    thread = run("thread", "start", "loop", "-p", "go")["thread"]
    live = run.spawn("thread", "live", thread, "--json")
    time.sleep(1)  # attached, waiting for a step
    run("thread", "run", thread, "--max", "2")
    run("thread", "kill", thread)
    events = _events(live)
    steps = [step["hash"] for step in run("thread", "steps", thread)]
    assert [event["event"] for event in events] == ["started", "line", "line", "line", "step"] * 2 + ["ended"], events
    lines = [event["text"] for event in events if event["event"] == "line"]
    assert lines == ["worker says 1", "worker says 2", "worker says 3"] * 2
    assert [event["head"] for event in events if event["event"] == "step"] == steps
    assert {(event["role"], event["agent"]) for event in events if event["event"] in ("started", "step")} == {("worker", "talky")}
    assert events[-1] == {"event": "ended", "thread": thread, "reason": "killed"}


def test_live_attached_mid_step_and_by_latest_with_text_output(place):
    run = place
    thread = run("thread", "start", "loop", "-p", "go")["thread"]
    stepping = run.spawn("thread", "step", thread, "--agent", "long")
    _wait_for(lambda: run("ps", "--json"))  # attached mid-step: a PostgreSQL root tells lines from then on
    live = run.spawn("thread", "live", "--latest", "--role", "worker")
    stepping.communicate(timeout=60)
    run("thread", "kill", thread)
    out, err = live.communicate(timeout=60)
    assert live.returncode == 0, err
    assert f"following thread {thread}" in err
    head = run("thread", "show", thread)["head"]
    assert out.splitlines()[0] == "-- worker (long) is running"
    assert "worker says 4" in out and f"worker (long) -> {head}" in out
    assert out.splitlines()[-1] == f"thread {thread} ended (killed)"


def test_live_refusals_and_an_ended_thread(place):
    run = place
    assert "no active thread to follow" in run("thread", "live", "--latest", code=1).stderr
    thread = run("thread", "start", "loop", "-p", "go")["thread"]
    assert "name a thread, or give --latest" in run("thread", "live", thread, "--latest", code=2).stderr
    run("thread", "kill", thread)
    done = run.spawn("thread", "live", thread)
    out, _ = done.communicate(timeout=60)
    assert done.returncode == 0 and out == f"thread {thread} ended (killed)\n"


def test_what_live_shows_is_redacted(place, root_dir):
    _, events = _followed(place, "secret")
    said = _lines(events)
    assert said and all(TOKEN not in line for line in said) and any("the key is" in line for line in said), said
    for stream in root_dir.rglob("live-*.log"):  # a directory root's: kept until the next step (or gc)
        assert TOKEN not in stream.read_text()


def test_pause_stops_a_run_after_its_step_and_refuses_the_next(place):
    run = place
    thread = run("thread", "start", "loop", "-p", "go")["thread"]
    running = run.spawn("thread", "run", thread, "--max", "20", "--agent", "paced")
    _wait_for(lambda: len(run("thread", "steps", thread)) >= 1)
    assert run("thread", "pause", thread) == {"thread": thread, "paused": True}
    out, err = running.communicate(timeout=60)
    assert running.returncode == 0, err
    result = json.loads(out)
    assert result["paused"] is True and "was paused: it stops here" in err
    steps = len(run("thread", "steps", thread))
    assert steps < 20 and result["head"] == run("thread", "show", thread)["head"]
    assert run("thread", "show", thread)["paused"] > 0
    assert [item.get("paused") for item in run("thread", "list")] == [True]
    refused = run("thread", "step", thread, code=1)
    assert f"thread {thread} is paused" in refused.stderr and f"uwf thread unpause {thread}" in refused.stderr
    again = run.spawn("thread", "pause", thread)
    assert "was already paused" in again.communicate(timeout=60)[1] and again.returncode == 0
    assert len(run("thread", "runs", thread)) == steps  # a refused step is not an attempt
    run("thread", "unpause", thread)
    assert "is not paused" in run("thread", "unpause", thread, code=1).stderr
    run("thread", "step", thread, "--agent", "paced")
    run("thread", "kill", thread)
    assert "has ended (killed): there is nothing to pause" in run("thread", "pause", thread, code=1).stderr


def test_paused_queued_thread_is_left_by_two_workers_until_unpaused(place):
    run = place
    thread = run("thread", "start", "loop", "-p", "go")["thread"]
    other = run("thread", "start", "loop", "-p", "other")["thread"]
    run("setup", "--default-agent", "paced")
    run("thread", "pause", thread)
    run("thread", "run", thread, "--detach")
    run("thread", "run", other, "--detach")
    workers = [run.spawn("worker", "--name", f"w{n}") for n in (1, 2)]
    try:
        _wait_for(lambda: len(run("thread", "steps", other)) >= 3)
        assert run("thread", "steps", thread) == [] and run("thread", "runs", thread) == []
        assert {item["thread"]: item.get("paused") for item in run("thread", "list")} == {thread: True, other: None}
        run("thread", "unpause", thread)
        _wait_for(lambda: len(run("thread", "steps", thread)) >= 2)
        run("thread", "pause", thread)
        time.sleep(1.5)  # the step in flight lands; none starts after it
        paused_at = len(run("thread", "steps", thread))
        time.sleep(1.5)
        assert len(run("thread", "steps", thread)) == paused_at
        assert any(item["thread"] == thread for item in run("thread", "list")) and run("thread", "show", thread)["paused"]
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.communicate(timeout=60)


def test_the_lines_of_steps_faster_than_a_look_are_all_told(place):
    lines = _lines(_followed(place, "quick", "quick", "quick", "quick")[1])
    assert lines.count("done") == 4 and len([line for line in lines if line.startswith("quick ")]) == 4, lines


def test_a_nul_or_the_marker_an_agent_writes_hides_nothing(place):
    lines = _lines(_followed(place, "odd")[1])
    assert lines[0] == "a\ufffdb" and lines[1] in ("\x01", "\\x01") and lines[2:] == ["after"], lines


def test_a_flood_is_cut_for_the_live_view_and_the_step_goes_on(place, root_dir):
    run = place
    thread, events = _followed(run, "flood")
    lines = _lines(events)
    assert sum(len(line) for line in lines) <= 17 * 1024 * 1024  # PostgreSQL: what its sender could send, the rest dropped
    if run.kind == "dir":
        assert lines[-1].startswith("uwf: the live view of this step stops here"), lines[-1][:100]
        assert (root_dir / "locks" / f"live-{thread}.log").stat().st_size <= 16 * 1024 * 1024 + 1024


def test_a_thread_that_ends_is_unpaused_and_a_resume_steps(place):
    run = place
    thread = run("thread", "start", "loop", "-p", "go")["thread"]
    run("thread", "pause", thread)
    run("thread", "kill", thread)
    assert "paused" not in run("thread", "show", thread)
    assert "is not paused: it has ended (killed)" in run("thread", "unpause", thread, code=1).stderr
    run("thread", "resume", thread, "-p", "again")
    run("thread", "step", thread, "--agent", "quick")


def test_uwfs_own_lines_naming_a_key_are_redacted_too(place, tmp_path):
    run = place
    workspace = tmp_path / "ws"
    workspace.mkdir()
    thread = run("thread", "start", "loop", "-p", "go", "-w", str(workspace))["thread"]
    live = run.spawn("thread", "live", thread, "--json")
    time.sleep(1)
    stepped = run.spawn("thread", "step", thread, "--agent", "named")
    _, err = stepped.communicate(timeout=60)
    run("thread", "kill", thread)
    said = [event.get("text", "") for event in _events(live)]
    assert TOKEN not in err and TOKEN not in "".join(said), (err, said)


def test_a_stale_stream_is_not_replayed_and_a_damaged_pause_file_refuses_in_one_line(place, root_dir):
    run = place
    if run.kind != "dir":
        pytest.skip("a directory root's files")
    thread = run("thread", "start", "loop", "-p", "go")["thread"]
    stale = root_dir / "locks" / f"live-{thread}.log"
    stale.parent.mkdir(exist_ok=True)
    stale.write_text("a dead step's line\n")
    live = run.spawn("thread", "live", thread, "--json")
    time.sleep(1)
    run("thread", "step", thread, "--agent", "quick")
    run("thread", "kill", thread)
    lines = [event["text"] for event in _events(live) if event["event"] == "line"]
    assert "a dead step's line" not in lines and "done" in lines, lines
    other = run("thread", "start", "loop", "-p", "other")["thread"]
    for text in ("- " + other, f"{other}: 1.5", f"{other}: 99999999999999999999999"):
        (root_dir / "paused.yaml").write_text(text + "\n")
        refused = run("thread", "step", other, code=1)
        assert "paused.yaml cannot be read" in refused.stderr and refused.stderr.count("\n") == 1, refused.stderr
    (root_dir / "paused.yaml").write_text(f"{other.lower()}: 1\n")
    assert "is paused" in run("thread", "step", other, code=1).stderr  # a lower-case id is the same thread
    assert run("thread", "runs", other) == []
