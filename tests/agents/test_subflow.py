"""`uwf-subflow`: a child workflow (develop) as one role (developer) of a parent (solve-issue),
through the real CLI and real agent processes (uwf-script answers every other role)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from conftest import EXAMPLES, _uwf_command, processes_with

from uwf_core.config.model import AgentConfig, Config
from uwf_core.repo import Repo

SCRIPT_AGENT = f"uwf-script --script-dir {EXAMPLES}"


def configure(root_dir: Path, *subflow_args: str) -> None:
    Repo.open(str(root_dir)).save_config(
        Config(
            agents={"sub": AgentConfig("sub", "uwf-subflow", ("--workflow", "develop", *subflow_args))},
            default_agent=SCRIPT_AGENT,
            agent_overrides={"solve-issue": {"developer": "sub"}},
        ),
    )


@pytest.fixture
def workflows(uwf) -> dict[str, str]:
    hashes = {}
    for name in ("develop", "solve-issue"):
        result = uwf("workflow", "put", str(EXAMPLES / f"{name}.yaml"))
        assert result.code == 0, result
        hashes[name] = result.json()["hash"]
    return hashes


def start(uwf, prompt: str = "Fix the login form: empty passwords reach the API") -> tuple[str, str]:
    result = uwf("thread", "start", "solve-issue", "-p", prompt)
    assert result.code == 0, result
    return result.json()["thread"], result.json()["head"]


def listed(uwf) -> dict[str, dict]:
    result = uwf("thread", "list", "--all")
    assert result.code == 0, result
    return {item["thread"]: item for item in result.json()}


def error_lines(result) -> list[str]:
    return [line for line in result.err.splitlines() if line.startswith("uwf: error:")]


def script_outputs(name: str, role: str) -> list[dict]:
    return [entry["output"] for entry in yaml.safe_load((EXAMPLES / f"{name}.script.yaml").read_text())[role]]


def test_subflow_runs_develop_as_the_developer(uwf, root_dir, workflows):
    configure(root_dir)
    prompt = "Fix the login form: empty passwords reach the API"
    parent, _ = start(uwf, prompt)
    result = uwf("thread", "run", parent, timeout=120)
    assert result.code == 0, result
    assert result.json()["done"] is True
    assert result.json()["reason"] == "done"

    steps = uwf("thread", "steps", parent).json()
    assert [s["role"] for s in steps] == ["planner", "developer", "reviewer", "developer", "reviewer"]
    assert [s["agent"] for s in steps] == ["uwf-script", "sub", "uwf-script", "sub", "uwf-script"]  # the alias config.yaml gives it
    coder_final = script_outputs("develop", "coder")[-1]
    for step in (steps[1], steps[3]):
        # the child's outputs merged (later steps win), kept to the developer schema's properties
        assert step["output"] == {"filesChanged": coder_final["filesChanged"], "summary": coder_final["summary"]}

    from uwf_core.thread.details import step_details
    from uwf_core.thread.ops import thread_info, thread_steps
    from uwf_core.thread.read import read_thread

    root = Repo.open(str(root_dir))
    store = root.nodes
    all_threads = listed(uwf)
    assert all_threads[parent]["reason"] == "done"
    children = []
    for number, step in enumerate((steps[1], steps[3])):
        if number == 0:
            got = uwf("thread", "step-details", step["hash"])
            assert got.code == 0, got
            payload = got.json()["detail"]["payload"]
        else:
            payload = step_details(root, step["hash"]).detail
        assert payload["protocol"] == "subflow"
        assert payload["agent"] == "sub"  # recorded under its config alias
        assert payload["extract"] == "json"
        assert payload["corrections"] == 0
        assert payload["childWorkflow"] == workflows["develop"]
        assert payload["childSteps"] == 4
        assert payload["usage"] == {"promptTokens": 0, "completionTokens": 0, "totalTokens": 0, "requests": 0}
        child = payload["childThread"]
        children.append(child)
        assert child != parent
        assert child in all_threads
        assert all_threads[child]["reason"] == "done"
        assert all_threads[child]["workflow"] == workflows["develop"]
        info = thread_info(root, child)
        assert info.done is True and info.reason == "done"
        assert payload["child"] == info.head == all_threads[child]["head"]  # the child's terminal StepNode
        assert store.payload(payload["child"])["role"] == "tester"
        child_steps = thread_steps(root, child)
        assert [s.role for s in child_steps] == ["coder", "tester", "coder", "tester"]
        assert child_steps[-1].hash == payload["child"]
        assert [s.output for s in child_steps if s.role == "tester"] == script_outputs("develop", "tester")
        assert [s.output for s in child_steps if s.role == "coder"] == script_outputs("develop", "coder")
    assert len(set(children)) == 2
    assert set(all_threads) == {parent, *children}
    child_listing = uwf("thread", "steps", children[0])
    assert [s["role"] for s in child_listing.json()] == ["coder", "tester", "coder", "tester"]

    # the child's task carries the parent's prompt, role and (second time) the reviewer's instruction
    first_read = read_thread(root, children[0])
    assert prompt in first_read
    assert "(You are running as the 'developer' role of 'solve-issue'.)" in first_read
    second_read = read_thread(root, children[1])
    assert "The reviewer rejected your change: Whitespace-only passwords still pass, and there are no tests." in second_read

    runs = [json.loads(line) for line in (root_dir / "runs.jsonl").read_text().splitlines()]
    assert [r["status"] for r in runs] == ["ok"] * (5 + 8)
    assert sum(1 for r in runs if r["thread"] in children) == 8


def test_depth_limit_from_the_environment(uwf, root_dir, workflows):
    configure(root_dir)
    parent, _ = start(uwf)
    planner = uwf("thread", "step", parent)
    assert planner.code == 0, planner
    head = planner.json()["head"]
    result = uwf("thread", "step", parent, env={"UWF_DEPTH": "3"})
    assert result.code == 1, result
    lines = error_lines(result)
    assert len(lines) == 1, result.err
    assert "sub-workflow depth limit reached: this would be depth 4, --max-depth is 3" in lines[0]
    assert "Traceback" not in result.err
    show = uwf("thread", "show", parent).json()
    assert show["head"] == head and show["done"] is False
    assert set(listed(uwf)) == {parent}  # no child thread was started


def test_depth_limit_stops_recursion(uwf, root_dir, workflows):
    """develop's coder bound to the same subflow agent: each level adds one to UWF_DEPTH."""
    configure(root_dir, "--max-depth", "2", "--agent", "coder=sub")
    parent, _ = start(uwf)
    assert uwf("thread", "step", parent).code == 0
    head = uwf("thread", "show", parent).json()["head"]
    result = uwf("thread", "step", parent, timeout=120)
    assert result.code == 1, result
    assert len(error_lines(result)) == 1, result.err
    assert "sub-workflow depth limit reached: this would be depth 3, --max-depth is 2" in result.err
    assert uwf("thread", "show", parent).json()["head"] == head
    threads = listed(uwf)
    assert len(threads) == 3  # the parent, a child, a grandchild; no great-grandchild
    assert sorted(item.get("reason") or "active" for item in threads.values()) == ["active", "active", "active"]


# -- killing the parent kills the child ---------------------------------------------------


def _start_hanging_parent(uwf, root_dir: Path, marker: str, hang: str):
    from uwf_core.thread.ops import list_threads

    configure(root_dir, "--agent", f"coder={hang}")
    parent, _ = start(uwf)
    assert uwf("thread", "step", parent).code == 0  # planner
    head = uwf("thread", "show", parent).json()["head"]
    env = dict(os.environ, UWF_STORAGE_ROOT=str(root_dir))
    proc = subprocess.Popen(
        [*_uwf_command(), "thread", "step", parent], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    root = Repo.open(str(root_dir))
    child = running = None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        others = [info.thread for info in list_threads(root, include_archived=True) if info.thread != parent]
        if others:
            child = others[0]
            running = root.locks.running(child)
            if running is not None and running.pgid and processes_with(marker):
                break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail(f"the child thread never started its agent: {proc.communicate()}")
    return parent, head, child, running, proc


def test_killing_the_parent_kills_the_child(uwf, root_dir, workflows):
    marker = f"subflowmarker-{uuid.uuid4().hex}"
    # one process with the marker in its argv (no grandchild that could linger as a zombie
    # and stretch the kill's grace period)
    hang = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(300)' {marker}"
    parent, head, child, running, proc = _start_hanging_parent(uwf, root_dir, marker, hang)
    try:
        assert running.role == "coder"
        killed = uwf("thread", "kill", parent)
        assert killed.code == 0, killed
        assert killed.json()["reason"] == "killed"
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0
    assert out == ""
    lines = [line for line in err.splitlines() if line.startswith("uwf: error:")]
    assert len(lines) == 1, err
    assert f"thread {parent} was killed" in lines[0]

    threads = listed(uwf)
    assert threads[parent]["reason"] == "killed"
    assert threads[parent]["head"] == head
    assert threads[child]["reason"] == "killed"
    assert uwf("thread", "steps", child).json() == []

    deadline = time.monotonic() + 10
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(marker) == []

    runs = [json.loads(line) for line in (root_dir / "runs.jsonl").read_text().splitlines()]
    parent_runs = [r for r in runs if r["thread"] == parent]
    assert [(r["role"], r["status"]) for r in parent_runs] == [("planner", "ok"), ("developer", "killed")]
    assert [r["role"] for r in runs if r["thread"] == child] == ["coder"]


def test_the_child_attempt_is_recorded_as_killed(uwf, root_dir, workflows):
    marker = f"subflowmarker-{uuid.uuid4().hex}"
    parent, head, child, running, proc = _start_hanging_parent(uwf, root_dir, marker, f"sh -c 'sleep 300; echo {marker}'")
    try:
        assert uwf("thread", "kill", parent).code == 0
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    runs = [json.loads(line) for line in (root_dir / "runs.jsonl").read_text().splitlines()]
    assert [r["status"] for r in runs if r["thread"] == child] == ["killed"]
