"""The supervisor's and summarizer's nodes in the workbench: rows of their own in the timeline,
unnumbered (`·`), with the decision first; the step numbers around them are the workflow's; a
burst of keys over them acts row by row. Built against the tests' own OpenAI-compatible server."""

from __future__ import annotations

import json
import pytest
from conftest import REPO
from fake_openai import FakeOpenAI, reply
from test_tui import run_app, select_thread, settle

from uwf_core.api import Repo

SOLVE_AGENT = "uwf-script --script examples/solve-issue.script.yaml"


@pytest.fixture
def checked(uwf, root_dir, tmp_path, monkeypatch):
    """A solve-issue thread run with a supervisor every 2 steps and a summary at the end."""
    run = uwf

    def uwf(*args):
        done = run(*args)
        assert done.code == 0, done
        return done.out

    with FakeOpenAI() as server:
        uwf("setup", "--provider", "fake", "--base-url", server.base_url, "--api-key", "sk-test-TUI-0123456789", "--model", "m",
            "--summarizer-model", "m")
        text = (REPO / "examples" / "solve-issue.yaml").read_text().replace("maxSteps:", "supervisorInterval: 2\nmaxSteps:", 1)
        (tmp_path / "wf.yaml").write_text(text)
        uwf("workflow", "put", str(tmp_path / "wf.yaml"))
        thread = json.loads(uwf("thread", "start", "solve-issue", "-p", "Fix [bold]the[/] login"))["thread"]
        server.add(reply(json.dumps({"decision": "continue", "reason": "planned [red]and[/] built"})),
                   reply(json.dumps({"decision": "continue", "reason": "revising"})), reply("Two rounds; approved."))
        uwf("thread", "run", thread, "--agent", SOLVE_AGENT)
    monkeypatch.setenv("UWF_STORAGE_ROOT", str(root_dir))
    return Repo.open(str(root_dir)), thread


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_checks_are_rows_of_their_own(checked, size):
    root, thread = checked

    async def script(app, pilot):
        await settle(app, pilot)
        await select_thread(app, pilot, thread)
        table = app.query_one("#timeline")
        rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
        table.focus()
        table.move_cursor(row=table.row_count - 1)
        await pilot.press("k", "k", "k")  # a burst: from the summary up over a check to step 4
        await settle(app, pilot)
        selected = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        return rows, selected

    rows, selected = run_app(root, script, size=size)
    numbers = [row[0] for row in rows if row[1] not in ("prompt",)]
    roles = [row[1] for row in rows if row[1] not in ("prompt",)]
    assert roles == ["planner", "developer", "$supervisor", "reviewer", "developer", "$supervisor", "reviewer", "$summary"]
    assert numbers == ["1", "2", "·", "3", "4", "·", "5", "·"]
    supervisor = next(row for row in rows if row[1] == "$supervisor")
    assert any(cell.startswith("continue: planned [red]and[/] built") for cell in supervisor)  # the decision first, as written
    steps = Repo.open(root.location)
    from uwf_core.api import thread_steps

    hashes = [step.hash for step in thread_steps(steps, thread)]
    assert selected == f"step:{hashes[4]}"  # the 4th step: developer
