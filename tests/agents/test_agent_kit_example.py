"""docs/how-to/write-an-agent.md's example really works as the tester of develop."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_test_runner_agent_plays_the_tester(uwf, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert uwf("workflow", "put", "examples/develop.yaml").code == 0
    tester = f"{sys.executable} {REPO / 'examples' / 'test_runner_agent.py'} --command 'test -f ok.flag || (touch ok.flag; echo 1 failed; exit 1)'"
    started = uwf(
        "thread", "start", "develop", "-p", "Add input validation", "-w", str(workspace),
        "--agent", f"coder=uwf-script --script {REPO / 'examples' / 'develop.script.yaml'}",
        "--agent", f"tester={tester}",
    )
    assert started.code == 0, started
    thread = started.json()["thread"]
    result = uwf("thread", "run", thread)
    assert result.code == 0, result
    assert result.json()["done"] is True
    steps = uwf("thread", "steps", thread).json()
    assert [s["role"] for s in steps] == ["coder", "tester", "coder", "tester"]
    assert steps[1]["output"] == {"passed": False, "report": "1 failed"}
    assert steps[3]["output"]["passed"] is True
    assert steps[3]["agent"] == "test-runner"
