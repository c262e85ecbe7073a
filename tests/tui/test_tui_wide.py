"""The workbench at any width, and on long threads: the last column of each table (the list's
prompt, the timeline's output) takes the width the others leave and ends a cut text in an
ellipsis; `o` sorts the thread list; `$` shows a thread's ledger and its forks'; a commit adds
its row without drawing the others again; the footer is rebuilt only when its keys change."""

from __future__ import annotations

import pytest
from test_tui import run_app, select_thread, settle, until

from uwf_core.api import Repo, perform_step, thread_info

SIZES = [(80, 24), (160, 48)]


def _line(table, key: str) -> str:
    """What the table draws of row `key`'s last cell, as plain text, at its column's width."""
    from rich.console import Console

    column = table.columns[table.flex_column]
    console = Console(width=column.width, color_system=None)
    lines = console.render_lines(table.get_cell(key, table.flex_column), console.options.update(width=column.width, height=1))
    return "".join(segment.text for segment in lines[0]).rstrip()


def _fills(table) -> bool:
    """The columns fill the table's width: the flex one took what the others left."""
    used = sum(column.get_render_width(table) for column in table.columns.values())
    flex = table.columns[table.flex_column]
    return used == table.scrollable_content_region.width or flex.width == table.FLEX_MIN


@pytest.mark.parametrize("size", SIZES)
def test_the_last_columns_take_the_width_left_and_end_a_cut_text_in_an_ellipsis(fixed, size):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        threads, timeline = app.query_one("#threads"), app.query_one("#timeline")
        widths = {"prompt": threads.columns[threads.flex_column].width, "output": timeline.columns[timeline.flex_column].width}
        lines = [_line(timeline, f"step:{step}") for step in ids["solve_steps"]]
        return _fills(threads), _fills(timeline), widths, lines, _line(threads, ids["solve"])

    list_fills, timeline_fills, widths, lines, listed = run_app(root, script, size=size)
    assert list_fills and timeline_fills, widths
    if size == (160, 48):  # it was 15 and ~19 characters, with fixed widths, while the screen had room
        assert widths["prompt"] >= 16 and widths["output"] >= 20, widths  # the list has an id column now (issue 40)
    assert any(line.endswith("…") for line in lines), lines  # a summary longer than its column
    assert listed.endswith("…") or len(listed) < widths["prompt"], listed


def test_a_wider_terminal_widens_the_columns_in_place(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        timeline = app.query_one("#timeline")
        row = timeline.rows[next(key for key in timeline.rows if key.value.startswith("step:"))]
        before = timeline.columns[timeline.flex_column].width
        await pilot.resize_terminal(200, 50)
        await settle(app, pilot)
        after = timeline.columns[timeline.flex_column].width
        same_row = timeline.rows.get(row.key) is row  # no redraw of the rows: only a width changed
        return before, after, same_row, _fills(timeline)

    before, after, same_row, fills = run_app(root, script, size=(160, 48))
    assert after >= before + 20 and same_row and fills, (before, after, same_row)


def test_o_sorts_the_thread_list_by_its_next_column_and_back(fixed):
    root, ids = fixed

    async def order(app, pilot, keys: str) -> tuple[list[str], str]:
        for key in keys:
            await pilot.press(key)
        await settle(app, pilot, 0.2)
        table = app.query_one("#threads")
        labels = " ".join(str(column.label) for column in table.columns.values())
        return [str(key.value) for key in table.rows], labels

    async def script(app, pilot):
        await settle(app, pilot)
        default, _ = await order(app, pilot, "")
        by_status, status_labels = await order(app, pilot, "o")
        by_workflow, workflow_labels = await order(app, pilot, "o")
        by_steps, steps_labels = await order(app, pilot, "o")
        await order(app, pilot, "oo")  # updated, prompt
        back, back_labels = await order(app, pilot, "o")
        statuses = {thread: app.threads_view.statuses.get(thread) for thread in default}
        names = {thread: app.threads_view._workflow_name(app.threads_view.infos[thread].workflow) for thread in default}
        counts = {thread: app.threads_view.thread_list.counts.get(app.threads_view.infos[thread].head, -1) for thread in default}
        return default, by_status, status_labels, by_workflow, workflow_labels, by_steps, steps_labels, counts, back, back_labels, statuses, names

    default, by_status, status_labels, by_workflow, workflow_labels, by_steps, steps_labels, counts, back, back_labels, statuses, names = run_app(root, script)
    from uwf_tui.widgets.thread_list import SORT_STATUS

    roots = [thread for thread in default if thread != ids["fork"]]
    assert roots == sorted(roots, reverse=True)  # newest first (by id)...
    assert default.index(ids["fork"]) == default.index(ids["solve"]) + 1  # ...and a fork under its parent
    ranks = [SORT_STATUS.index(statuses[thread]) if statuses[thread] in SORT_STATUS else 99 for thread in by_status]
    assert ranks == sorted(ranks) and "status ▼" in status_labels, (ranks, status_labels)
    assert [names[thread].lower() for thread in by_workflow] == sorted(names[thread].lower() for thread in by_workflow)
    assert "workflow ▼" in workflow_labels
    assert [counts[thread] for thread in by_steps] == sorted(counts.values(), reverse=True) and "steps ▼" in steps_labels
    assert back == default and back_labels.count("▼") == 1 and "id ▼" in back_labels


def test_dollar_shows_the_threads_ledger_and_its_fork_subtree(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        await pilot.press("$")
        await until(pilot, lambda: bool(app.screen.query(".cost-thread")))
        text = "\n".join(str(widget.render()) for widget in app.screen.query("#report-body Static"))
        await pilot.press("escape")
        await pilot.pause(0.2)
        return text, type(app.screen).__name__

    text, back_on = run_app(root, script)
    assert f"Thread {ids['solve']}" in text and "Total:" in text and "By role:" in text, text
    assert f"Fork subtree of {ids['solve']}" in text and ids["fork"] in text, text
    assert back_on == "Screen"


def test_a_commit_adds_its_row_and_leaves_the_others_as_drawn(fixed):
    root, ids = fixed
    thread = ids["analyze"]

    async def script(app, pilot):
        await select_thread(app, pilot, thread)
        timeline = app.query_one("#timeline")
        start = next(key for key in timeline.rows if key.value.startswith("start:"))
        first_row = timeline.rows[start]
        count = timeline.row_count
        head = thread_info(Repo.open(root.location), thread).head
        await pilot.pause(0.1)
        perform_step(Repo.open(root.location), thread)  # another Repo: as another process would
        new_head = thread_info(Repo.open(root.location), thread).head  # it may have ended: archived
        assert new_head != head
        await until(pilot, lambda: f"step:{new_head}" in timeline.rows)
        await settle(app, pilot)
        return timeline.rows.get(start) is first_row, timeline.row_count - count, str(timeline.cursor_row == timeline.row_count - 1)

    kept, added, at_newest = run_app(root, script)
    assert kept and added == 1 and at_newest == "True", (kept, added, at_newest)


def test_the_footer_is_rebuilt_only_when_its_keys_change(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        timeline = app.query_one("#timeline")
        timeline.focus()
        await settle(app, pilot, 0.2)
        keys_before = list(app.screen.query("FooterKey"))
        for key in "kkjj":  # step rows alike: the same keys apply on each
            await pilot.press(key)
        await settle(app, pilot, 0.2)
        same = list(app.screen.query("FooterKey")) == keys_before
        await pilot.press("m")  # a mark: D joins the footer
        await settle(app, pilot, 0.2)
        labels = " ".join(str(key.description) for key in app.screen.query("FooterKey"))
        return same, labels

    same, labels = run_app(root, script)
    assert same, "the footer was rebuilt though its keys were the same"
    assert "Diff" in labels, labels


@pytest.mark.parametrize("sizes", [((160, 48), (80, 24)), ((80, 24), (160, 48))])
def test_a_resize_under_the_cost_view_is_the_layout_of_the_new_size_on_esc(fixed, sizes):
    """Textual restyles only the screens on top: the threads view under `$` (a screen of its own)
    came back stacked at 160 columns, or side by side at 80, until the next resize."""
    root, ids = fixed
    start, end = sizes

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        await pilot.press("dollar_sign")
        await until(pilot, lambda: bool(app.screen.query(".cost-thread")))
        await pilot.resize_terminal(*end)
        await settle(app, pilot, 0.3)
        await pilot.press("escape")
        await settle(app, pilot, 0.5)
        timeline = app.query_one("#timeline")
        return str(app.threads_view.styles.layout), timeline.with_cost == timeline.wants_cost(), _fills(timeline), _fills(app.query_one("#threads"))

    layout, cost_column_fits, timeline_fills, list_fills = run_app(root, script, size=start)
    assert layout == ("<vertical>" if end[0] < 110 else "<horizontal>")
    assert cost_column_fits and timeline_fills and list_fills


def test_the_cost_view_scrolls_with_g_g_and_ctrl_d(fixed):
    """The report screens (cost, diff, preview) take the pane moves too: G the end, ctrl+d half a
    page, g the top (there is no hash to go to from a report: `g g` is vim's top)."""
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        await pilot.press("dollar_sign")
        await until(pilot, lambda: bool(app.screen.query(".cost-thread")))
        body = app.screen.query_one("#report-body")
        positions = []
        for key in ("G", "g", "ctrl+d"):
            await pilot.press(key)
            await settle(app, pilot, 0.2)
            positions.append(body.scroll_y)
        return positions, body.max_scroll_y

    (end, top, half), most = run_app(root, script, size=(80, 24))
    assert most > 0 and end == most and top == 0 and 0 < half < most, (end, top, half, most)


def test_a_footer_whose_screen_went_before_its_refresh_does_nothing():
    """The rebuild runs after a refresh; a screen dismissed in between (a quick Escape out of a
    modal, a burst of view switches) leaves the footer without a screen: it stops, no crash."""
    import asyncio

    from textual.app import App
    from textual.screen import Screen

    from uwf_tui.widgets.footer import SteadyFooter

    class Modal(Screen):
        def compose(self):
            yield SteadyFooter()

    class Bare(App):
        pass

    async def go():
        app = Bare()
        async with app.run_test() as pilot:
            await app.push_screen(Modal())
            await pilot.pause()
            footer = app.screen.query_one(SteadyFooter)
            app.pop_screen()
            await pilot.pause()
            shown = footer.shown
            await footer._recompose_if_changed()  # raised NoScreen, which ended the app
            return footer.is_attached, footer.shown == shown, app._exception

    attached, unchanged, crashed = asyncio.run(go())
    assert not attached and unchanged and crashed is None
