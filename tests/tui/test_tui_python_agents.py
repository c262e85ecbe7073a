"""Python agents in uwf-tui, as any agent (Pilot, 80x24 and 160x48): the agent column names
them, the Detail tab shows the function, a failed call's Detail shows its exception and
traceback, and `s` steps with a python agent whose prints reach the log."""

from __future__ import annotations

import pytest
from conftest import EXAMPLES, REPO
from test_tui import log_text, run_app, select_thread, settle, until

from uwf_core.api import Config, Repo, StepError, StepOptions, perform_step, put_workflow, start_thread
from uwf_core.config.model import AgentConfig

FIXTURE = "tests.engine.python_agents_fixture"


@pytest.fixture
def python_root(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO))
    root = Repo.open(str(tmp_path / "root"))
    put_workflow(root, str(EXAMPLES / "solve-issue.yaml"))
    agents = {name: AgentConfig(name, "", (), "python", python=f"{FIXTURE}:{function}")
              for name, function in (("solver", "solve"), ("raiser", "raises"), ("printer", "prints"))}
    root.save_config(Config(agents=agents, default_agent="printer"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    thread = start_thread(root, "solve-issue", "python agents", str(workspace)).thread
    step = perform_step(root, thread, StepOptions(agent="solver")).head
    with pytest.raises(StepError):
        perform_step(root, thread, StepOptions(agent="raiser"))
    return root, thread, step


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_python_steps_and_a_failed_call_in_the_timeline(python_root, size):
    root, thread, step = python_root

    async def script(app, pilot):
        await select_thread(app, pilot, thread)
        timeline = app.query_one("#timeline")
        keys = [row.value for row in timeline.rows]
        attempt = next(key for key in keys if key.startswith("attempt:"))
        agent_cells = [str(cell) for cell in timeline.get_row(f"step:{step}")]
        timeline.move_cursor(row=timeline.get_row_index(f"step:{step}"))
        await until(pilot, lambda: "protocol: python" in str(app.query_one("#step-detail").render()))
        step_detail = str(app.query_one("#step-detail").render())
        prompt = str(app.query_one("#step-prompt").render())
        timeline.move_cursor(row=timeline.get_row_index(attempt))
        await until(pilot, lambda: "ValueError" in str(app.query_one("#step-detail").render()))
        return agent_cells, step_detail, prompt, str(app.query_one("#step-detail").render())

    agent_cells, step_detail, prompt, failed = run_app(root, script, size=size)
    assert any("solver" in cell for cell in agent_cells)
    assert f"function: {FIXTURE}:solve" in step_detail and "call: in-process" in step_detail
    assert "did not read ctx.prompt" in prompt
    assert "python agent 'raiser' raised ValueError: no plan for developer" in failed
    assert "Traceback (most recent call last)" in failed and "python_agents_fixture.py" in failed


def test_s_steps_with_a_python_agent_and_its_prints_reach_the_log(python_root):
    root, thread, _ = python_root

    async def script(app, pilot):
        await select_thread(app, pilot, thread)
        await pilot.press("s")
        await until(pilot, lambda: "✓ developer (printer)" in log_text(app))
        await settle(app, pilot)
        return log_text(app)

    log = run_app(root, script, size=(80, 24))
    assert "hello from developer" in log and "✓ developer (printer)" in log

