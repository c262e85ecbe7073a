"""Python agents from the command line and in workers, on a directory root and a real PostgreSQL
root: a config.yaml `python:` entry (`uwf agent add --python`), imported by every `uwf` process
that steps it. Real `uwf` processes throughout."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import EXAMPLES, REPO, _uwf_command

FIXTURE = "tests.engine.python_agents_fixture"
ROLES = ["planner", "developer", "reviewer", "developer", "reviewer"]


@pytest.fixture(params=["dir", "postgresql"])
def place(request, root_dir, tmp_path):
    work = tmp_path / "work"  # where `uwf` runs: the threads' workspace (never inside the root)
    work.mkdir()
    location = str(root_dir) if request.param == "dir" else request.getfixturevalue("pg_url")
    env = dict(os.environ, UWF_STORAGE_ROOT=location, UWF_ENV_FILE=str(root_dir / "host.env"), PYTHONPATH=str(REPO))

    def run(*args: str, timeout: float = 120):
        return subprocess.run([*_uwf_command(), *args], capture_output=True, text=True, env=env, cwd=str(work), timeout=timeout)

    def spawn(*args: str):
        return subprocess.Popen([*_uwf_command(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(work))

    run.spawn = spawn
    assert run("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).returncode == 0
    return run


def _add(run, name: str, function: str, *more: str) -> None:
    added = run("agent", "add", name, "--python", f"{FIXTURE}:{function}", *more)
    assert added.returncode == 0, added.stderr


def _start(run, agent: str) -> str:
    started = run("thread", "start", "solve-issue", "-p", "Fix the login bug", "--agent", f"planner={agent}",
                  "--agent", f"developer={agent}", "--agent", f"reviewer={agent}")
    assert started.returncode == 0, started.stderr
    return json.loads(started.stdout)["thread"]


def test_a_config_entry_runs_a_thread_and_what_it_prints_is_not_the_json(place):
    _add(place, "printer", "prints")
    thread = _start(place, "printer")
    step = place("thread", "step", thread)
    assert step.returncode == 0 and json.loads(step.stdout)["agent"] == "printer"  # stdout is the JSON alone
    assert "hello from planner" in step.stderr and "Traceback" not in step.stderr
    _add(place, "programs", "programs")
    step = place("thread", "step", thread, "--agent", "programs")  # a program it runs writes to descriptor 1
    assert step.returncode == 0 and json.loads(step.stdout)["role"] == "developer", step.stdout + step.stderr
    assert "child says hi" in step.stderr and "raw write" in step.stderr
    ran = place("thread", "run", thread)
    assert ran.returncode == 0 and json.loads(ran.stdout)["done"], ran.stderr
    steps = json.loads(place("thread", "steps", thread).stdout)
    assert [s["role"] for s in steps] == ROLES and {s["agent"] for s in steps} == {"printer", "programs"}


def test_workers_run_python_agents(place):
    _add(place, "solver", "solve")
    threads = [_start(place, "solver") for _ in range(3)]
    for thread in threads:
        assert place("thread", "run", thread, "--detach").returncode == 0
    workers = [place.spawn("worker", "--once", "--concurrency", "2", "--name", f"w{i}") for i in range(2)]
    logs = [worker.communicate(timeout=240) for worker in workers]
    assert all(worker.returncode == 0 for worker in workers), logs
    archived = {item["thread"]: item for item in json.loads(place("thread", "list", "--all").stdout)}
    assert all(archived[thread].get("reason") == "done" for thread in threads), archived
    runs = [r for t in threads for r in json.loads(place("thread", "runs", t).stdout)]
    assert [r["status"] for r in runs] == ["ok"] * 15 and {r["agent"] for r in runs} == {"solver"}


def test_a_function_that_raises_is_one_line_and_its_traceback_is_kept(place):
    _add(place, "raiser", "raises")
    thread = _start(place, "raiser")
    step = place("thread", "step", thread)
    assert step.returncode == 1
    assert step.stderr.strip() == "uwf: error: python agent 'raiser' raised ValueError: no plan for planner"
    [run] = json.loads(place("thread", "runs", thread).stdout)
    assert run["status"] == "failed" and "Traceback" in run["stderr"] and "python_agents_fixture.py" in run["stderr"]


def test_a_function_that_cannot_be_imported_says_so(place):
    added = place("agent", "add", "missing", "--python", "no_such_module_here:solve")
    assert added.returncode == 0
    thread = _start(place, "missing")
    step = place("thread", "step", thread)
    assert step.returncode == 1 and "Traceback" not in step.stderr
    assert "cannot import no_such_module_here" in step.stderr and "PYTHONPATH" in step.stderr


def test_an_isolated_entry_is_contained_and_an_in_process_one_says_it_is_not(place):
    _add(place, "boxed", "pid", "--isolate", "--timeout", "30")
    _add(place, "inproc", "solve")
    listed = {entry["name"]: entry for entry in json.loads(place("agent", "list").stdout)}
    assert listed["inproc"]["containment"] == "none" and listed["inproc"]["isolate"] == "none"
    assert listed["boxed"]["isolate"] == "process" and listed["boxed"]["python"] == f"{FIXTURE}:pid"
    thread = _start(place, "boxed")
    step = place("thread", "step", thread)
    assert step.returncode == 0, step.stderr
    details = json.loads(place("thread", "step-details", json.loads(step.stdout)["head"]).stdout)
    assert details["detail"]["payload"]["call"] == "process" and details["detail"]["payload"]["deadline"] == "process"


def test_agent_test_imports_a_python_agent(place):
    _add(place, "solver", "solve")
    tested = place("agent", "test", "solver")
    assert tested.returncode == 0, tested.stderr
    report = json.loads(tested.stdout)
    assert report["ok"] and report["containment"] == "none" and report["answer"]["function"] == f"{FIXTURE}:solve"
    place("agent", "add", "gone", "--python", "no_such_module_here:solve")
    tested = place("agent", "test", "gone")
    assert tested.returncode == 1 and "cannot import no_such_module_here" in json.loads(tested.stdout)["error"]


@pytest.mark.parametrize("entry, message", [
    ({"python": "nope"}, "must be module:function"),
    ({"python": "x.py:f"}, "must be an absolute path"),
    ({"python": "m:f", "command": "echo"}, "command does not apply to a python agent"),
    ({"python": "m:f", "isolate": "thread"}, "isolate must be process"),
    ({"command": "echo", "isolate": "process"}, "isolate is for python agents"),
])
def test_a_malformed_python_entry_is_one_line(uwf, root_dir, entry, message):
    (root_dir / "config.yaml").write_text("agents:\n  bad:\n" + "".join(f"    {key}: \"{value}\"\n" for key, value in entry.items()))
    listed = uwf("agent", "list")
    assert listed.code != 0 and "Traceback" not in listed.err and message in listed.err, listed.err


def test_agent_test_checks_an_isolated_entry_without_running_it(place, tmp_path):
    broken = tmp_path / "broken_agent.py"
    broken.write_text("def plan(ctx)\n    return {}\n")
    guarded = tmp_path / "guarded_agent.py"
    guarded.write_text("raise SystemExit('ran in uwf')\ndef plan(ctx):\n    return {}\n")
    for name, target in (("broken", f"{broken}:plan"), ("typo", f"{guarded}:plna"), ("fine", f"{guarded}:plan")):
        assert place("agent", "add", name, "--python", target, "--isolate").returncode == 0
    reports = {name: json.loads(place("agent", "test", name).stdout) for name in ("broken", "typo", "fine")}
    assert not reports["broken"]["ok"] and "SyntaxError" in reports["broken"]["error"]
    assert not reports["typo"]["ok"] and "has no 'plna'" in reports["typo"]["error"]
    assert reports["fine"]["ok"] and "not run" in reports["fine"]["answer"]["note"]
