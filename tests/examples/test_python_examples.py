"""Each shape of Python agent in examples/python/ runs to its end as a user runs it: sync
(quickstart.py, in tests/engine/test_python_agents.py), async, isolated (a function of the script
being run, in a process of its own) and a workflow built in code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLES


def _run(script: str, root: Path) -> str:
    done = subprocess.run([sys.executable, str(EXAMPLES / "python" / script), str(root)], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_async_functions_run_a_thread(tmp_path):
    assert "done: True (done) in 4 steps" in _run("async_agents.py", tmp_path / "root")


def test_an_isolated_function_of_the_script_being_run_runs_in_a_process_of_its_own(tmp_path, uwf):
    from uwf_core.engine.contain.sandbox import BUBBLEWRAP, containment

    out = _run("isolated.py", tmp_path / "root")
    assert "done: True (done); the writer ran process" in out
    if containment().kind == BUBBLEWRAP:  # its own PID namespace: the child's pid there is small
        pid = int(out.split("Written by process ", 1)[1].split(":", 1)[0])
        assert pid < 10, out


def test_a_workflow_built_in_code_is_stored_and_run(tmp_path, uwf):
    root = tmp_path / "root"
    assert "done: True (done)" in _run("built_in_code.py", root)
    shown = uwf("--root", str(root), "workflow", "show", "outline-expand", "--source")
    assert shown.code == 0 and "outliner" in shown.out  # its YAML source, as if it had been a file

