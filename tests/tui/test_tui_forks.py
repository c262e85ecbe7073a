"""uwf-tui's fork tools (issue 12) through Pilot on the fixed demo root: the timeline's tokens and
cost (a fork row with its subtree's total, the thread's total and budget in its title)."""

from __future__ import annotations

from test_tui import fixed, run_app, select_thread, settle, until  # noqa: F401 (fixed: a fixture)

from uwf_core.api import thread_info


async def cursor_to(app, pilot, key: str) -> None:
    timeline = app.query_one("#timeline")
    timeline.move_cursor(row=timeline.get_row_index(key))
    await pilot.pause(0.2)


# -- tokens and cost -------------------------------------------------------------------------


def test_the_timeline_shows_each_steps_cost_a_fork_its_subtree_and_the_title_the_total_and_budget(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        table = app.query_one("#timeline")
        column = table.columns_by_label["tokens cost"]
        cells = [str(table.get_cell(f"step:{h}", column)) for h in ids["solve_steps"]]
        title = str(app.query_one("#thread-title").render())
        await select_thread(app, pilot, ids["fork"])
        fork_cells = [str(cell) for cell in table.get_row(f"branch:{ids['solve']}")]
        edited = str(table.get_cell(f"step:{thread_info(root, ids['fork']).head}", column))
        await select_thread(app, pilot, ids["triage"])
        unrecorded = str(table.get_cell(f"step:{ids['triage_steps'][0]}", column))
        return cells, title, fork_cells, edited, unrecorded

    cells, title, fork_cells, edited, unrecorded = run_app(root, script, size=(160, 48))
    assert cells == ["1.8k 0.0100", "3.5k 0.0242", "3.2k 0.0125", "4.9k 0.0269", "4.7k 0.0167"]
    assert "18,080 tokens · cost 0.0902" in title and "budget 18,080/40,000 tokens" in title
    # The fork's timeline shows solve-issue as a branch: its subtree (solve-issue's own steps).
    assert "Σ18k 0.0902" in fork_cells and any("subtree 18,080 tokens · cost 0.0902" in cell for cell in fork_cells)
    assert edited == "0 0.0000"  # a person's edit spent nothing
    assert unrecorded == "?"  # uwf-script records no usage: unknown, not 0


def test_at_80_columns_a_steps_cost_is_in_its_detail_and_the_column_comes_back_when_wide(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        table = app.query_one("#timeline")
        narrow_columns = list(table.columns_by_label)
        await cursor_to(app, pilot, f"step:{ids['solve_steps'][0]}")
        detail = str(app.query_one("#step-detail").render())
        await pilot.resize_terminal(160, 48)
        await until(pilot, lambda: "tokens cost" in table.columns_by_label and table.row_count > 1)
        await settle(app, pilot)
        return narrow_columns, detail, list(table.columns_by_label), str(table.get_cell(f"step:{ids['solve_steps'][0]}", table.columns_by_label["tokens cost"]))

    narrow_columns, detail, wide_columns, cell = run_app(root, script, size=(80, 24))
    assert "tokens cost" not in narrow_columns
    assert "cost: 1,800 tokens (1,420 prompt, 380 completion), cost 0.0100" in detail and "sonnet: 1,800 tokens, 0.0100" in detail
    assert "tokens cost" in wide_columns and cell == "1.8k 0.0100"
