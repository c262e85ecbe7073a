"""Untrusted text on screen as it was written: an output, a prompt and a step's body holding
Rich markup (`[bold red]X[/]`, `[i]P[/i]`, `[redacted:KEY]`) show their brackets in the thread
list, the timeline and every tab of the step pane, and never crash the workbench."""

from __future__ import annotations

import json
import pytest
from conftest import REPO
from test_tui import run_app, select_thread, settle

from uwf_core.api import Repo

HOSTILE = "[bold red]X[/] A=[redacted:FAKE_A_KEY] B= [link=http://x]y[/link] [/]"
PROMPT = "[i]P[/i] fix [b]it"
SCRIPT = f"""planner:
  - |
    ---
    plan: "{HOSTILE}"
    steps: ["[u]one[/u]"]
    ---
    Body with [bold]markup[/bold] and a stray [/] tag.
"""


@pytest.fixture
def hostile(uwf, root_dir, tmp_path, monkeypatch):
    run = uwf

    def uwf(*args):
        done = run(*args)
        assert done.code == 0, done
        return done.out

    (tmp_path / "s.yaml").write_text(SCRIPT)
    uwf("workflow", "put", str(REPO / "examples" / "solve-issue.yaml"))
    thread = json.loads(uwf("thread", "start", "solve-issue", "-p", PROMPT))["thread"]
    uwf("thread", "step", thread, "--agent", f"uwf-script --script {tmp_path / 's.yaml'}")
    monkeypatch.setenv("UWF_STORAGE_ROOT", str(root_dir))
    return Repo.open(str(root_dir)), thread


def _plain(widget) -> str:
    """What a widget draws, as plain text."""
    rendered = widget.render()
    return getattr(rendered, "plain", None) or str(rendered)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_markup_in_outputs_prompts_and_bodies_shows_as_written(hostile, size):
    root, thread = hostile

    async def script(app, pilot):
        await settle(app, pilot)
        await select_thread(app, pilot, thread)
        threads = app.query_one("#threads")
        timeline = app.query_one("#timeline")
        prompt_cell = threads.get_row(thread)[-1]
        cells = [timeline.get_row_at(i) for i in range(timeline.row_count)]
        timeline.focus()
        timeline.move_cursor(row=timeline.row_count - 1)
        shown = {}
        for tab in ("output", "body", "prompt", "detail"):
            app.threads_view.step_pane.active = f"tab-{tab}"
            await pilot.pause(0.2)
            shown[tab] = _plain(app.query_one(f"#step-{tab}"))
        app.save_screenshot(filename=f"literal-{size[0]}.svg", path=str(root.location))
        return prompt_cell, cells, shown

    prompt_cell, cells, shown = run_app(root, script, size=size)
    # a Text cell is drawn as it is; a str one would be read as markup (DataTable's way)
    assert not isinstance(prompt_cell, str) and prompt_cell.plain.startswith("[i]P[/i] fix")
    row = next(row for row in cells if "planner" in str(row[1]))
    assert all(not isinstance(cell, str) for cell in row)
    assert row[-1].plain.startswith("plan: [bold red]X[/] A=[redacted:FAKE_A_KEY] B=")
    assert "Body with [bold]markup[/bold] and a stray [/] tag." in shown["body"]
    assert "[i]P[/i] fix [b]it" in shown["prompt"]


def test_step_numbers_from_1000_up_show_whole(fixed_long):
    """The `#` column is as wide as the largest step number (1000 used to show as 100)."""
    root, thread = fixed_long

    async def script(app, pilot):
        await settle(app, pilot)
        await select_thread(app, pilot, thread)
        table = app.query_one("#timeline")
        numbers = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        width = table.columns[table.columns_by_label["#"]].width
        return numbers, width

    numbers, width = run_app(root, script, size=(80, 24))
    assert numbers[-1] == "12345" and width == 5


@pytest.fixture
def fixed_long(hostile, monkeypatch):
    """The hostile thread, numbered as if 12,344 steps came before its last (a long chain's
    numbers without building one)."""
    import uwf_core.thread.timeline as timeline_module
    import uwf_tui.widgets.threads_view as threads_view_module

    real = timeline_module.thread_timeline

    def long_timeline(*args, **kwargs):
        timeline = real(*args, **kwargs)
        timeline.step_count = 12345
        return timeline

    monkeypatch.setattr(threads_view_module, "thread_timeline", long_timeline)
    return hostile


def test_the_output_tab_does_not_fold_long_strings_itself():
    """The pane wraps to its width; PyYAML's 80-column folding split strings oddly on a wide one."""
    from uwf_tui.widgets.step_pane import yaml_text

    sentence = "Content addressing gives new hashes for the same data only when the bytes differ, never otherwise"
    assert yaml_text({"thesis": sentence}) == f"thesis: {sentence}\n"
