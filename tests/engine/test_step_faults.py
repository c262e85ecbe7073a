"""Every way a step can fail, through the real CLI (design §9, §14).

Each fault must: exit non-zero, end stderr with one `uwf: error: ...` line
naming what failed (never a traceback), leave the thread's head where it was,
and record the attempt in runs.jsonl (failed / timeout / killed, step null).
Agents are small shell scripts; `uwf` and `uwf-script` are on their PATH
because uwf appends its own bin directory.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from conftest import EXAMPLES, REPO, CliResult, _uwf_command, processes_with

SOLVE_AGENT = "uwf-script --script examples/solve-issue.script.yaml"
SOLVE_SCRIPT = str(EXAMPLES / "solve-issue.script.yaml")


# -- helpers -------------------------------------------------------------------------------------


def ok(result):
    assert result.code == 0, result
    assert "Traceback" not in result.err, result.err
    return result


def make_agent(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def runs_of(root_dir: Path, thread: str) -> list[dict]:
    path = root_dir / "runs.jsonl"
    if not path.exists():
        return []
    return [r for r in (json.loads(line) for line in path.read_text().splitlines() if line.strip()) if r.get("thread") == thread]


def head_of(uwf, thread: str) -> str:
    return ok(uwf("thread", "show", thread)).json()["head"]


def error_line(result) -> str:
    """The last stderr line, checked to be uwf's one-line error (agent stderr may stream before it)."""
    assert result.code != 0, result
    assert result.code == 1, result
    assert "Traceback" not in result.err, result.err
    lines = result.err.rstrip("\n").splitlines()
    assert lines, result
    assert lines[-1].startswith("uwf: error: "), result.err
    assert result.out == "", result
    return lines[-1]


def assert_failed_step(uwf, root_dir, thread, head, result, status, *needles):
    """The full check of a failed attempt; returns the error line."""
    line = error_line(result)
    for needle in needles:
        assert needle in line, (needle, line)
    assert head_of(uwf, thread) == head
    runs = runs_of(root_dir, thread)
    assert runs, "no runs.jsonl line for the attempt"
    assert len(runs) == result.runs_before + 1, "exactly one runs.jsonl line per attempt"
    last = runs[-1]
    assert last["status"] == status, last
    assert last["step"] is None, last
    assert last["head"] == head, last
    assert last.get("error"), last
    return line


def attempt(uwf, root_dir: Path, command: str, thread: str, *args: str):
    """`uwf thread <command> <thread> ...`, remembering how many runs.jsonl lines the thread had."""
    before = len(runs_of(root_dir, thread))
    result = uwf("thread", command, thread, *args)
    result.runs_before = before
    return result


def put(uwf, path) -> dict:
    return ok(uwf("workflow", "put", str(path))).json()


def start(uwf, workflow: str = "solve-issue", prompt: str = "Fix the login form") -> dict:
    return ok(uwf("thread", "start", workflow, "-p", prompt)).json()


@pytest.fixture
def solve(uwf):
    """solve-issue registered, one fresh thread, and the role schema hashes."""
    wf = put(uwf, EXAMPLES / "solve-issue.yaml")
    shown = ok(uwf("workflow", "show", "solve-issue")).json()
    started = start(uwf)
    return {
        "workflow": wf["hash"],
        "thread": started["thread"],
        "start": started["head"],
        "meta": {name: role["meta"] for name, role in shown["roles"].items()},
    }


def step_node_agent(tmp_path, name, *, start: str, prev: str | None, role: str, meta: str, output: dict) -> str:
    """An agent that writes its own output, detail and StepNode with `uwf cas put`."""
    prev_json = "null" if prev is None else f'"{prev}"'
    return make_agent(
        tmp_path,
        name,
        f"""set -e
OUT=$(uwf cas put {meta} '{json.dumps(output)}')
DET=$(uwf cas put detail '{{"agent": "{name}"}}')
echo "writing the step for $2" >&2
uwf cas put step-node "{{\\"start\\": \\"{start}\\", \\"prev\\": {prev_json}, \\"role\\": \\"{role}\\", \\"output\\": \\"$OUT\\", \\"detail\\": \\"$DET\\", \\"agent\\": \\"{name}\\"}}"
""",
    )


def wait_for(predicate, timeout: float = 15.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def popen_uwf(root_dir: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, UWF_STORAGE_ROOT=str(root_dir))
    return subprocess.Popen(
        [*_uwf_command(), *args], cwd=str(REPO), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def lock_info(root_dir: Path, thread: str) -> dict | None:
    path = root_dir / "locks" / f"thread-{thread}.lock"
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


# -- the thread itself ----------------------------------------------------------------------------


def test_unknown_thread_id(uwf, solve, root_dir):
    unknown = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
    line = error_line(uwf("thread", "step", unknown, "--agent", SOLVE_AGENT))
    assert f"no thread {unknown}" in line
    line = error_line(uwf("thread", "step", "ZZZZ", "--agent", SOLVE_AGENT))
    assert "no thread 'ZZZZ'" in line
    assert runs_of(root_dir, unknown) == []
    assert head_of(uwf, solve["thread"]) == solve["start"]


def test_archived_thread(uwf, solve, root_dir):
    ok(uwf("thread", "kill", solve["thread"]))
    line = error_line(uwf("thread", "step", solve["thread"], "--agent", SOLVE_AGENT))
    assert f"thread {solve['thread']} is archived (killed)" in line
    assert "fork" in line and "resume" in line
    assert head_of(uwf, solve["thread"]) == solve["start"]
    assert runs_of(root_dir, solve["thread"]) == []  # refused before any attempt


def test_second_concurrent_step_fails_at_once_naming_the_holder(uwf, solve, root_dir, tmp_path):
    go = tmp_path / "go"
    slow = make_agent(
        tmp_path,
        "slow-agent.sh",
        f"""i=0
while [ ! -e "{go}" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done
exec uwf-script --script "{SOLVE_SCRIPT}" "$@"
""",
    )
    first = popen_uwf(root_dir, "thread", "step", solve["thread"], "--agent", slow)
    try:
        info = wait_for(lambda: (lock_info(root_dir, solve["thread"]) or {}).get("pgid") and lock_info(root_dir, solve["thread"]), what="the lock")
        assert info["pid"] == first.pid
        assert info["role"] == "planner"
        began = time.monotonic()
        second = uwf("thread", "step", solve["thread"], "--agent", SOLVE_AGENT)
        elapsed = time.monotonic() - began
        line = error_line(second)
        assert f"thread {solve['thread']} is already being stepped by pid {first.pid}" in line
        assert "planner" in line
        assert elapsed < 5
        assert head_of(uwf, solve["thread"]) == solve["start"]
        assert runs_of(root_dir, solve["thread"]) == []  # the refused step is not an attempt
    finally:
        go.touch()
        out, err = first.communicate(timeout=30)
    assert first.returncode == 0, err
    assert json.loads(out)["role"] == "planner"
    runs = runs_of(root_dir, solve["thread"])
    assert [r["status"] for r in runs] == ["ok"]
    assert (root_dir / "locks" / f"thread-{solve['thread']}.lock").read_text() == ""


# -- the step protocol ------------------------------------------------------------------------------


def test_agent_exits_non_zero(uwf, solve, root_dir, tmp_path):
    agent = make_agent(tmp_path, "crash.sh", 'echo "starting $2" >&2\necho "boom: the disk is full" >&2\nexit 3\n')
    result = attempt(uwf, root_dir, "step", solve["thread"], "--agent", agent)
    line = assert_failed_step(uwf, root_dir, solve["thread"], solve["start"], result, "failed", "exited with code 3", "boom: the disk is full")
    assert agent in line
    assert "starting planner" in result.err  # the agent's stderr streamed through
    last = runs_of(root_dir, solve["thread"])[-1]
    assert "boom: the disk is full" in last["stderr"]
    assert last["role"] == "planner"
    assert last["agent"] == agent


def test_agent_killed_by_a_signal(uwf, solve, root_dir, tmp_path):
    agent = make_agent(tmp_path, "suicide.sh", "kill -9 $$\n")
    result = attempt(uwf, root_dir, "step", solve["thread"], "--agent", agent)
    assert_failed_step(uwf, root_dir, solve["thread"], solve["start"], result, "failed", "killed by signal 9")


def test_agent_prints_nothing(uwf, solve, root_dir, tmp_path):
    agent = make_agent(tmp_path, "silent.sh", "exit 0\n")
    result = attempt(uwf, root_dir, "step", solve["thread"], "--agent", agent)
    assert_failed_step(uwf, root_dir, solve["thread"], solve["start"], result, "failed", "printed nothing", "last line of stdout")


def test_agent_prints_a_non_hash(uwf, solve, root_dir, tmp_path):
    agent = make_agent(tmp_path, "chatty.sh", 'echo "0123456789ABC"\necho "I am done, all good"\n')
    result = attempt(uwf, root_dir, "step", solve["thread"], "--agent", agent)
    line = assert_failed_step(uwf, root_dir, solve["thread"], solve["start"], result, "failed", "not a node hash", "as its last line")
    assert "'i am done, all good'" in line.lower()


def test_non_hash_message_quotes_what_the_agent_printed(uwf, solve, root_dir, tmp_path):
    agent = make_agent(tmp_path, "chatty.sh", 'echo "I am done, all good"\n')
    line = error_line(uwf("thread", "step", solve["thread"], "--agent", agent))
    assert "'I am done, all good'" in line


def test_agent_prints_a_hash_not_in_the_store(uwf, solve, root_dir, tmp_path):
    agent = make_agent(tmp_path, "ghost.sh", 'echo "0000000000000"\n')
    result = attempt(uwf, root_dir, "step", solve["thread"], "--agent", agent)
    assert_failed_step(uwf, root_dir, solve["thread"], solve["start"], result, "failed", "0000000000000", "not in the store")


def test_agent_prints_a_hash_that_is_not_a_step_node(uwf, solve, root_dir, tmp_path):
    agent = make_agent(tmp_path, "workflow.sh", f'echo "{solve["workflow"]}"\n')
    result = attempt(uwf, root_dir, "step", solve["thread"], "--agent", agent)
    assert_failed_step(uwf, root_dir, solve["thread"], solve["start"], result, "failed", solve["workflow"], "not a StepNode")


def test_agent_prints_another_threads_step_node(uwf, solve, root_dir, tmp_path):
    other = start(uwf, prompt="another task")
    foreign = ok(uwf("thread", "step", other["thread"], "--agent", SOLVE_AGENT)).json()["head"]
    agent = make_agent(tmp_path, "thief.sh", f'echo "{foreign.lower()}"\n')
    result = attempt(uwf, root_dir, "step", solve["thread"], "--agent", agent)
    line = assert_failed_step(uwf, root_dir, solve["thread"], solve["start"], result, "failed", foreign, "another thread")
    assert other["head"] in line and solve["start"] in line
    assert head_of(uwf, other["thread"]) == foreign


def test_step_node_with_wrong_prev(uwf, solve, root_dir, tmp_path):
    planner = ok(uwf("thread", "step", solve["thread"], "--agent", SOLVE_AGENT)).json()["head"]
    agent = step_node_agent(
        tmp_path,
        "stale.sh",
        start=solve["start"],
        prev=None,
        role="developer",
        meta=solve["meta"]["developer"],
        output={"filesChanged": ["a.py"], "summary": "done"},
    )
    result = attempt(uwf, root_dir, "step", solve["thread"], "--agent", agent)
    assert_failed_step(uwf, root_dir, solve["thread"], planner, result, "failed", "whose prev is None", f"the head is {planner}")
    assert "writing the step for developer" in result.err


def test_step_node_with_wrong_role(uwf, solve, root_dir, tmp_path):
    agent = step_node_agent(
        tmp_path,
        "wrong-role.sh",
        start=solve["start"],
        prev=None,
        role="developer",
        meta=solve["meta"]["developer"],
        output={"filesChanged": [], "summary": "skipped planning"},
    )
    result = attempt(uwf, root_dir, "step", solve["thread"], "--agent", agent)
    assert_failed_step(
        uwf, root_dir, solve["thread"], solve["start"], result, "failed", "for role 'developer'", "role 'planner' was asked for"
    )


def test_step_node_whose_output_fails_the_role_schema(uwf, solve, root_dir, tmp_path):
    permissive = ok(uwf("cas", "put", "meta", '{"type": "object", "title": "anything"}')).out.strip()
    assert permissive != solve["meta"]["planner"]
    agent = step_node_agent(
        tmp_path,
        "bad-output.sh",
        start=solve["start"],
        prev=None,
        role="planner",
        meta=permissive,
        output={"plan": 42},
    )
    result = attempt(uwf, root_dir, "step", solve["thread"], "--agent", agent)
    line = assert_failed_step(
        uwf, root_dir, solve["thread"], solve["start"], result, "failed", "does not match role 'planner'", "schema"
    )
    assert "plan" in line or "steps" in line


def test_agent_hanging_past_timeout_is_killed_with_all_its_children(uwf, solve, root_dir, tmp_path):
    marker = f"uwf-marker-{uuid.uuid4().hex}"
    child = make_agent(tmp_path, f"{marker}.sh", "trap '' TERM\nsleep 300\necho never\n")
    agent = make_agent(
        tmp_path,
        "hang.sh",
        f"""trap '' TERM
"{child}" &
sh -c 'sleep 300; echo never' {marker} &
echo "hanging now" >&2
sleep 300
echo never
""",
    )
    began = time.monotonic()
    process = popen_uwf(root_dir, "thread", "step", solve["thread"], "--agent", agent, "--timeout", "3")
    try:
        wait_for(lambda: len(processes_with(marker)) >= 2, what="the agent's children to start")
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    elapsed = time.monotonic() - began
    result = CliResult(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    result.runs_before = 0
    assert_failed_step(uwf, root_dir, solve["thread"], solve["start"], result, "timeout", "timed out after 3s", "process group was killed")
    assert elapsed < 15
    assert "hanging now" in result.err
    wait_for(lambda: not processes_with(marker), timeout=5, what="the agent's children to be gone")
    assert runs_of(root_dir, solve["thread"])[-1]["role"] == "planner"


def test_agent_killed_by_thread_kill(uwf, solve, root_dir, tmp_path):
    marker = f"uwf-marker-{uuid.uuid4().hex}"
    agent = make_agent(tmp_path, "long.sh", f"sh -c 'sleep 300; echo never' {marker} &\nsleep 300\n")
    running = popen_uwf(root_dir, "thread", "step", solve["thread"], "--agent", agent)
    try:
        wait_for(lambda: (lock_info(root_dir, solve["thread"]) or {}).get("pgid"), what="the agent to start")
        wait_for(lambda: processes_with(marker), what="the agent's child to start")
        killed = ok(uwf("thread", "kill", solve["thread"])).json()
        assert killed["reason"] == "killed" and killed["head"] == solve["start"]
        out, err = running.communicate(timeout=30)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode == 1, err
    assert out == ""
    assert "Traceback" not in err
    last_line = err.rstrip("\n").splitlines()[-1]
    assert last_line.startswith("uwf: error: ") and "killed" in last_line, err
    shown = ok(uwf("thread", "show", solve["thread"])).json()
    assert shown["head"] == solve["start"]
    assert shown["done"] is True and shown["reason"] == "killed"
    last = runs_of(root_dir, solve["thread"])[-1]
    assert last["status"] == "killed" and last["step"] is None
    wait_for(lambda: not processes_with(marker), timeout=5, what="the agent's children to be gone")
    history = [json.loads(line) for line in (root_dir / "history.jsonl").read_text().splitlines()]
    assert history[-1]["thread"] == solve["thread"] and history[-1]["reason"] == "killed"


def test_uwf_sigkilled_mid_step_takes_its_agent_and_the_agents_children_with_it(uwf, solve, root_dir, tmp_path):
    """Else the next step (another worker, the same command again) runs a second agent beside the
    orphan, both at work in one workspace."""
    marker = f"uwf-marker-{uuid.uuid4().hex}"
    agent = make_agent(tmp_path, "slow.sh", f"trap '' TERM\nsh -c 'sleep 300' {marker} &\nsleep 300\n")
    victim = popen_uwf(root_dir, "thread", "step", solve["thread"], "--agent", agent)
    try:
        wait_for(lambda: processes_with(marker), what="the agent's child to start")
        victim.kill()
        victim.communicate(timeout=30)
        wait_for(lambda: not processes_with(marker) and not processes_with(agent), timeout=5, what="the agent to be gone")
    finally:
        if victim.poll() is None:
            victim.kill()
    step = ok(uwf("thread", "step", solve["thread"], "--agent", SOLVE_AGENT)).json()
    assert step["role"] == "planner"
    assert [r["status"] for r in runs_of(root_dir, solve["thread"])] == ["killed", "ok"]


def test_uwf_sigkilled_after_the_agent_wrote_its_step(uwf, solve, root_dir, tmp_path):
    """uwf dies between the agent's StepNode and the head's move (the agent cannot kill uwf itself:
    its sandbox has its own PIDs, so the test does). A sandboxed agent's nodes wait in a staging
    directory uwf had not taken in yet: nothing of the step stays, the directory included."""
    agent = make_agent(
        tmp_path,
        "slow-to-answer.sh",
        f"""H=$(uwf-script --script "{SOLVE_SCRIPT}" "$@") || exit 1
echo "wrote $H" >&2
sleep 30
echo "$H"
""",
    )
    victim = popen_uwf(root_dir, "thread", "step", solve["thread"], "--agent", agent)
    written = victim.stderr.readline()
    assert written.startswith("wrote "), written
    orphan = written.split()[1]
    victim.send_signal(signal.SIGKILL)
    out, err = victim.communicate(timeout=60)
    assert victim.returncode == -signal.SIGKILL, err
    assert out == ""
    from uwf_core.engine.contain.sandbox import BUBBLEWRAP, containment

    if containment().kind == BUBBLEWRAP:
        assert uwf("cas", "has", orphan).code == 1  # staged, never taken in
        deadline = time.monotonic() + 5
        while list(root_dir.glob("tmp/stage-*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(root_dir.glob("tmp/stage-*")) == []  # the watchdog removed the staging directory
    else:
        assert ok(uwf("cas", "get", orphan, "--payload")).json()["role"] == "planner"  # written to the store directly
    assert head_of(uwf, solve["thread"]) == solve["start"]
    assert runs_of(root_dir, solve["thread"]) == []  # uwf died before it could write a line

    step = ok(uwf("thread", "step", solve["thread"], "--agent", SOLVE_AGENT)).json()
    assert step["role"] == "planner"
    runs = runs_of(root_dir, solve["thread"])
    assert [r["status"] for r in runs] == ["killed", "ok"]
    assert runs[0]["step"] is None
    assert runs[0]["head"] == solve["start"]
    assert "died" in runs[0]["error"] and f"pid {victim.pid}" in runs[0]["error"]
    assert runs[1]["step"] == step["head"]
    assert head_of(uwf, solve["thread"]) == step["head"]


# -- routing failures -----------------------------------------------------------------------------------

LOOP_WORKFLOW = """\
name: {name}
description: One role that may loop
maxSteps: {max_steps}
roles:
  writer:
    description: Writes
    goal: Write things.
    procedure: Write.
    output: The text.
    meta:
      type: object
      properties:
        text: {{type: string}}
      required: [text]
conditions:
  stop:
    description: The writer said stop
    expression: 'steps[-1].output.text = "stop"'
  again:
    description: {again_description}
    expression: '{again}'
graph:
  $START:
    - {{role: writer, condition: null}}
  writer:
    - {{role: $END, condition: stop}}
    - {{role: writer, condition: {again_condition}}}
"""


def loop_workflow(uwf, tmp_path, name, *, again="true", again_condition="again", max_steps=10, answers=3):
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        LOOP_WORKFLOW.format(name=name, max_steps=max_steps, again=again, again_condition=again_condition, again_description="loop")
    )
    put(uwf, path)
    script = tmp_path / f"{name}.script.yaml"
    script.write_text("writer:\n" + "".join(f"  - output: {{text: 'hello {i}'}}\n" for i in range(answers)))
    return f"uwf-script --script {script}"


def test_condition_failing_at_runtime(uwf, root_dir, tmp_path):
    agent = loop_workflow(uwf, tmp_path, "broken-cond", again="steps[-1].output.text + 1")
    thread = start(uwf, "broken-cond")["thread"]
    stepped = uwf("thread", "step", thread, "--agent", agent)
    first = stepped.json()  # the step stands, and says its route failed
    assert stepped.code == 1 and first["done"] is False and "condition 'again'" in first["nextError"]
    result = attempt(uwf, root_dir, "step", thread, "--agent", agent)
    assert_failed_step(uwf, root_dir, thread, first["head"], result, "failed", "condition 'again'", "steps[-1].output.text + 1", "'writer'")
    assert ok(uwf("thread", "show", thread)).json()["done"] is False


def test_no_route(uwf, root_dir, tmp_path):
    agent = loop_workflow(uwf, tmp_path, "no-route", again='steps[-1].output.text = "again"')
    thread = start(uwf, "no-route")["thread"]
    first = ok(uwf("thread", "step", thread, "--agent", agent)).json()
    result = attempt(uwf, root_dir, "step", thread, "--agent", agent)
    line = assert_failed_step(uwf, root_dir, thread, first["head"], result, "failed", "no route from 'writer'", "stop=false", "again=false")
    assert "hello 0" in line
    assert ok(uwf("thread", "show", thread)).json()["done"] is False


def test_max_steps_reached(uwf, root_dir, tmp_path):
    agent = loop_workflow(uwf, tmp_path, "looper", again_condition="null", max_steps=2)
    thread = start(uwf, "looper")["thread"]
    for _ in range(2):
        assert ok(uwf("thread", "step", thread, "--agent", agent)).json()["done"] is False
    result = attempt(uwf, root_dir, "step", thread, "--agent", agent)
    steps = ok(uwf("thread", "steps", thread)).json()
    assert [s["role"] for s in steps] == ["writer", "writer"]
    line = assert_failed_step(uwf, root_dir, thread, steps[-1]["hash"], result, "failed", "maxSteps (2)", "looper", "max-steps")
    assert "Traceback" not in line
    shown = ok(uwf("thread", "show", thread)).json()
    assert shown["done"] is True and shown["reason"] == "max-steps"
    assert [r["status"] for r in runs_of(root_dir, thread)] == ["ok", "ok", "failed"]
    history = [json.loads(line) for line in (root_dir / "history.jsonl").read_text().splitlines()]
    assert history[-1]["reason"] == "max-steps" and history[-1]["head"] == steps[-1]["hash"]


def test_run_stops_at_max_steps(uwf, root_dir, tmp_path):
    agent = loop_workflow(uwf, tmp_path, "looper", again_condition="null", max_steps=2)
    thread = start(uwf, "looper")["thread"]
    result = uwf("thread", "run", thread, "--agent", agent)
    line = error_line(result)
    assert "maxSteps (2)" in line
    assert [r["status"] for r in runs_of(root_dir, thread)] == ["ok", "ok", "failed"]
    assert ok(uwf("thread", "show", thread)).json()["reason"] == "max-steps"


def test_default_agent_that_does_not_exist(uwf, solve, root_dir):
    (root_dir / "config.yaml").write_text("defaultAgent: no-such-agent-xyz\n")
    result = attempt(uwf, root_dir, "step", solve["thread"])
    assert_failed_step(uwf, root_dir, solve["thread"], solve["start"], result, "failed", "no-such-agent-xyz", "not found")


def test_agent_override_that_is_not_executable(uwf, solve, root_dir, tmp_path):
    path = tmp_path / "not-exec.sh"
    path.write_text("#!/bin/sh\necho hi\n")
    result = attempt(uwf, root_dir, "step", solve["thread"], "--agent", str(path))
    assert_failed_step(uwf, root_dir, solve["thread"], solve["start"], result, "failed", "not executable")


# -- the text protocol ----------------------------------------------------------------------------------------

TOPIC_ANSWER = """---
thesis: CAS makes runs auditable
keyPoints:
  - hashes
  - forks
---
## Analysis

Body of the <analysis> & more.
"""


def text_agent_config(root_dir: Path, command: str, args: list[str] | None = None) -> None:
    """The agent keeps its records beside its script: a directory outside the workspace it may write."""
    lines = ["agents:", "  texty:", f'    command: "{command}"', "    protocol: text", f'    writable: ["{Path(command).parent}"]']
    if args:
        lines.append("    args:")
        lines += [f'      - "{arg}"' for arg in args]
    lines.append("defaultAgent: texty")
    (root_dir / "config.yaml").write_text("\n".join(lines) + "\n")


@pytest.fixture
def topic(uwf):
    put(uwf, EXAMPLES / "analyze-topic.yaml")
    return start(uwf, "analyze-topic", "Content-addressed storage for <agents> & workflows")


def test_text_agent_reads_prompt_on_stdin_and_answers_frontmatter(uwf, root_dir, tmp_path, topic):
    seen = tmp_path / "seen-prompt.md"
    answer = tmp_path / "answer.md"
    answer.write_text(TOPIC_ANSWER)
    agent = make_agent(tmp_path, "text-stdin.sh", f'cat > "{seen}"\necho "thinking about $# args" >&2\ncat "{answer}"\n')
    text_agent_config(root_dir, agent)
    result = ok(uwf("thread", "step", topic["thread"])).json()
    assert result["done"] is True and result["role"] == "analyst" and result["agent"] == "texty"
    details = ok(uwf("thread", "step-details", result["head"])).json()
    assert details["output"] == {"thesis": "CAS makes runs auditable", "keyPoints": ["hashes", "forks"]}
    assert details["agent"] == "texty"
    payload = details["detail"]["payload"]
    assert payload["extract"] == "frontmatter"
    assert payload["protocol"] == "text"
    assert ok(uwf("cas", "get", payload["content"], "--payload")).json() == TOPIC_ANSWER
    assert details["content"] == TOPIC_ANSWER
    prompt = details["prompt"]
    assert prompt == seen.read_text()
    assert "## Task\n\nContent-addressed storage for <agents> & workflows" in prompt
    assert "- `thesis` (string, required)" in prompt
    runs = runs_of(root_dir, topic["thread"])
    assert [(r["status"], r["agent"]) for r in runs] == [("ok", "texty")]
    text = ok(uwf("thread", "read", topic["thread"])).out
    assert "Body of the <analysis> & more." in text


def test_text_agent_with_prompt_file_placeholder(uwf, root_dir, tmp_path, topic):
    record = tmp_path / "prompt-file-path"
    agent = make_agent(
        tmp_path,
        "text-file.sh",
        f"""echo "$1" > "{record}"
grep -q "^## Task" "$1" || {{ echo "no task in $1" >&2; exit 4; }}
[ "$2" = "--role=analyst" ] || {{ echo "bad arg $2" >&2; exit 5; }}
printf -- '---\\nthesis: from a file\\nkeyPoints: [one]\\n---\\nbody\\n'
""",
    )
    text_agent_config(root_dir, agent, ["{prompt_file}", "--role={role}"])
    result = ok(uwf("thread", "step", topic["thread"])).json()
    assert result["done"] is True
    details = ok(uwf("thread", "step-details", result["head"])).json()
    assert details["output"] == {"thesis": "from a file", "keyPoints": ["one"]}
    prompt_file = record.read_text().strip()
    assert prompt_file and not os.path.exists(prompt_file)  # removed after the step


def test_text_agent_answering_bare_json(uwf, root_dir, tmp_path, topic):
    agent = make_agent(tmp_path, "text-json.sh", "cat > /dev/null\necho '{\"thesis\": \"json thesis\", \"keyPoints\": [\"k\"]}'\n")
    text_agent_config(root_dir, agent)
    result = ok(uwf("thread", "step", topic["thread"])).json()
    details = ok(uwf("thread", "step-details", result["head"])).json()
    assert details["output"] == {"thesis": "json thesis", "keyPoints": ["k"]}
    assert details["detail"]["payload"]["extract"] == "json"


def test_text_agent_answering_garbage(uwf, root_dir, tmp_path, topic):
    calls = tmp_path / "calls"
    prompts = tmp_path / "prompts"
    agent = make_agent(tmp_path, "text-garbage.sh", f'echo x >> "{calls}"\ncat >> "{prompts}"\necho "I would rather not answer in any format."\n')
    text_agent_config(root_dir, agent)
    result = attempt(uwf, root_dir, "step", topic["thread"])
    assert_failed_step(
        uwf, root_dir, topic["thread"], topic["head"], result, "failed", "could not read the output of agent 'texty'", "no frontmatter"
    )
    assert len(calls.read_text().splitlines()) == 3  # the answer, then at most 2 corrections
    assert prompts.read_text().count("# Correction") == 2


def test_text_agent_answering_schema_mismatch(uwf, root_dir, tmp_path, topic):
    agent = make_agent(tmp_path, "text-bad.sh", "cat > /dev/null\nprintf -- '---\\nthesis: 5\\n---\\n'\n")
    text_agent_config(root_dir, agent)
    result = attempt(uwf, root_dir, "step", topic["thread"])
    assert_failed_step(
        uwf, root_dir, topic["thread"], topic["head"], result, "failed", "does not match the role's schema", "keyPoints"
    )


def test_a_runaway_condition_is_stopped_by_the_steps_timeout_and_the_head_stays(uwf, tmp_path):
    """A tail call never hits a recursion limit: the step's --timeout bounds routing too."""
    import time

    source = (EXAMPLES / "solve-issue.yaml").read_text()
    assert 'expression: "steps[-1].output.approved = false"' in source
    wf = tmp_path / "runaway.yaml"
    wf.write_text(source.replace(
        'expression: "steps[-1].output.approved = false"', 'expression: "($f := function($x){ $f($x) }; $f(1))"'
    ))
    assert uwf("workflow", "put", str(wf)).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "loop").json()["thread"]
    agent = f"uwf-script --script {EXAMPLES / 'solve-issue.script.yaml'}"
    for _ in range(2):  # planner, developer
        assert uwf("thread", "step", thread, "--agent", agent).code == 0
    reviewed = uwf("thread", "step", thread, "--agent", agent)  # the reviewer's route runs the condition: said at once
    assert reviewed.code == 1 and "timeout" in reviewed.json()["nextError"].lower()
    head = uwf("thread", "show", thread).json()["head"]
    began = time.monotonic()
    result = uwf("thread", "step", thread, "--agent", agent, "--timeout", "1")
    assert time.monotonic() - began < 15
    assert result.code == 1 and "Traceback" not in result.err
    assert "condition 'notApproved'" in result.err and "timeout" in result.err.lower(), result.err
    assert uwf("thread", "show", thread).json()["head"] == head


def test_a_long_stderr_tail_starts_at_a_line():
    from uwf_core.engine.contain.process import _tail

    text = "".join(f"line {n} says something\n" for n in range(500))
    tail = _tail(text, 2000)
    assert len(tail) <= 2000 and tail.startswith("line ") and text.endswith(tail)
    assert _tail("short", 2000) == "short"
    assert _tail("x" * 5000, 2000) == "x" * 2000  # no boundary at all: cut where it must


def test_the_watchdog_kills_what_is_still_listed_when_uwf_goes_and_is_started_again_if_killed():
    """End of file on its pipe (uwf gone) kills the groups still listed, not the released ones;
    a watchdog killed by hand is started again and told every live group."""
    from uwf_core.engine.contain.watchdog import Watchdog

    def group() -> subprocess.Popen:
        return subprocess.Popen(["sleep", "300"], start_new_session=True)

    done, first, second = group(), group(), group()
    dog = Watchdog()
    dog.guard(done.pid)
    dog.guard(first.pid)
    dog.release(done.pid)
    dog.process.kill()
    dog.process.wait()
    dog.guard(second.pid)  # a new watchdog, told of `first` too
    dog.process.stdin.close()  # as when uwf exits, however it exits
    dog.process.wait(timeout=10)
    for killed in (first, second):
        assert killed.wait(timeout=10) == -signal.SIGKILL
    assert done.poll() is None  # released: not the watchdog's to kill
    done.kill()
    done.wait()


def test_a_step_agent_that_stages_a_flood_is_refused_before_it_is_read(uwf, solve, root_dir, tmp_path):
    """Its staging file is the agent's to fill: 100,001 rows (or a gigabyte) are refused from the
    file's own count and size, before one row is read into uwf's memory."""
    from uwf_core.engine.contain.sandbox import BUBBLEWRAP, containment

    if containment().kind != BUBBLEWRAP:
        pytest.skip("staging is for sandboxed step agents")
    flood = (
        "import os, sqlite3; db = sqlite3.connect(os.path.join(os.environ['UWF_STAGING'], 'nodes.sqlite'));"
        "db.executemany('insert into nodes (hash, type, data, touched) values (?, ?, ?, 0)',"
        " ((f'J{i:012d}', 'x', b'junk') for i in range(100_001))); db.commit()"
    )
    agent = make_agent(tmp_path, "flood.sh", f'H=$(uwf-script --script "{SOLVE_SCRIPT}" "$@") || exit 1\npython3 -c "{flood}"\necho "$H"\n')
    failed = uwf("thread", "step", solve["thread"], "--agent", agent)
    assert failed.code == 1 and "Traceback" not in failed.err
    assert "staged 100,001" in error_line(failed) or "staged 100,0" in failed.err, failed.err
    assert head_of(uwf, solve["thread"]) == solve["start"]


def test_a_condition_that_fails_on_the_new_output_is_said_by_the_step_that_wrote_it(uwf, tmp_path):
    """Deciding "done" after a step evaluates the conditions on its output: a failure there was
    swallowed (`done: false`, exit 0) and met only by the next step. The step stands (its head is
    recorded) and says it: exit 1, `nextError` in its JSON."""
    agent = loop_workflow(uwf, tmp_path, "fails-after", again="$number(steps[-1].output.text) > 1")
    thread = ok(uwf("thread", "start", "fails-after", "-p", "go")).json()["thread"]
    stepped = uwf("thread", "step", thread, "--agent", agent)
    assert stepped.code == 1 and "Traceback" not in stepped.err
    result = stepped.json()
    assert result["done"] is False and result["role"] == "writer" and "number" in result["nextError"]
    said = stepped.err.rstrip("\n").splitlines()[-1]
    assert said.startswith(f"uwf: error: the step is recorded (head {result['head']}), but what comes next cannot be decided:")
    assert head_of(uwf, thread) == result["head"]


def test_a_staging_file_with_a_view_of_its_own_is_refused_not_run(uwf, solve, root_dir, tmp_path):
    """The staging file is the agent's: a `nodes` that is a recursive view would run forever in
    uwf's reading it. Only the tables NodeDb makes are read, and every query has a time bound."""
    from uwf_core.engine.contain.sandbox import BUBBLEWRAP, containment

    if containment().kind != BUBBLEWRAP:
        pytest.skip("staging is for sandboxed step agents")
    trap = (
        "import os, sqlite3; db = sqlite3.connect(os.path.join(os.environ['UWF_STAGING'], 'nodes.sqlite'));"
        "db.execute('drop table nodes');"
        "db.execute('create view nodes as with recursive r(seq, hash, type, data, touched) as "
        "(select 1, 1, 1, 1, 1 union all select seq + 1, hash, type, data, touched from r) select * from r'); db.commit()"
    )
    agent = make_agent(tmp_path, "trap.sh", f'H=$(uwf-script --script "{SOLVE_SCRIPT}" "$@") || exit 1\npython3 -c "{trap}"\necho "$H"\n')
    began = time.monotonic()
    failed = uwf("thread", "step", solve["thread"], "--agent", agent)
    assert time.monotonic() - began < 20
    assert failed.code == 1 and "Traceback" not in failed.err
    assert "which uwf never makes" in failed.err, failed.err
    assert head_of(uwf, solve["thread"]) == solve["start"]


def test_a_cancel_after_the_agent_ended_but_before_the_head_moved_keeps_the_head(root, root_dir, tmp_path, monkeypatch):
    """A cancel can come while the answer is read and checked, after the agent's end: the step is
    not taken (an adversary's trial through `uwf mcp` saw 11 of 18 such cancels move the head)."""
    from loop_workflow import loop_workflow

    from uwf_core.api import Cancel, StepError, StepOptions, perform_step, put_workflow, start_thread, thread_info
    from uwf_core.engine import step as engine_step

    answer = "cat >/dev/null; echo '{\"$status\": \"again\", \"n\": 1}'"
    (root_dir / "config.yaml").write_text(f"agents:\n  noop: {{command: sh, args: [-c, {json.dumps(answer)}], protocol: text}}\ndefaultAgent: noop\n")
    (tmp_path / "loop.yaml").write_text(loop_workflow(10))
    put_workflow(root, str(tmp_path / "loop.yaml"))
    info = start_thread(root, "loop", "go")
    cancel = Cancel()
    real = engine_step._next_is_end

    def late_cancel(*args, **kwargs):
        cancel.set("cancelled by the test")  # the agent has ended: its answer is read, the head not yet moved
        return real(*args, **kwargs)

    monkeypatch.setattr(engine_step, "_next_is_end", late_cancel)
    with pytest.raises(StepError) as raised:
        perform_step(root, info.thread, StepOptions(cancel=cancel))
    assert "cancelled (cancelled by the test) before the head moved" in raised.value.message
    assert thread_info(root, info.thread).head == info.head
    assert runs_of(root_dir, info.thread)[-1]["status"] == "killed"
