"""Keys that used to do nothing silently, and the jumps users of lazygit, k9s and Harlequin
expect."""

from __future__ import annotations

from test_tui import fixed, run_app, select_thread, settle  # noqa: F401  (fixed: a fixture)


def test_d_with_nothing_marked_says_how_to_mark(fixed):
    root, ids = fixed
    said = []

    async def script(app, pilot):
        app.notify = lambda message, **_: said.append(message)
        await settle(app, pilot)
        await select_thread(app, pilot, ids["solve"])
        await pilot.press("D")
        await settle(app, pilot)

    run_app(root, script, size=(80, 24))
    assert any(message.startswith("nothing is marked: m marks a step") for message in said), said


def test_ctrl_d_ctrl_u_and_g_move_by_half_a_pane_and_to_the_last_row(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        await select_thread(app, pilot, ids["solve"])
        table = app.query_one("#timeline")
        table.focus()
        seen = []
        for keys in (("home",), ("ctrl+d",), ("G",), ("ctrl+u",), ("home", "ctrl+d", "ctrl+d")):  # the last, a burst
            await pilot.press(*keys)
            await settle(app, pilot, 0.2)
            seen.append(table.cursor_row)
        return seen, table.row_count, table.size.height

    (top, half, last, back, twice), rows, height = run_app(root, script, size=(160, 48))
    step = max(1, height // 2)
    assert top == 0 and half == min(rows - 1, step) and last == rows - 1
    assert back == max(0, rows - 1 - step) and twice == min(rows - 1, 2 * step)


def test_at_80x24_the_timeline_has_8_rows_while_focused_and_the_filter_leaves_3(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        threads = app.query_one("#threads")
        listed = threads.size.height - 1  # less its header
        await select_thread(app, pilot, ids["solve"])
        await pilot.press("enter")  # into the timeline
        await settle(app, pilot, 0.3)
        timeline = app.query_one("#timeline")
        focused_rows = timeline.size.height - 1
        await pilot.press("escape", "slash")
        await settle(app, pilot, 0.3)
        filtering = threads.size.height - 1
        return listed, focused_rows, filtering

    listed, focused_rows, filtering = run_app(root, script, size=(80, 24))
    assert focused_rows >= 8
    assert filtering >= 3 and listed >= 3


def test_a_burst_typed_after_slash_lands_in_the_filter(fixed):
    """`/thr` in one read of the terminal: the keys after `/` used to be handled by the list
    before the filter opened (and lost, or run: `r` runs a thread)."""
    from textual import events

    root, ids = fixed
    started = []

    async def script(app, pilot):
        app._start = lambda thread, run: started.append(thread)
        await settle(app, pilot)
        for key, character in (("slash", "/"), ("s", "s"), ("o", "o"), ("r", "r")):  # one burst
            app.post_message(events.Key(key, character))
        await settle(app, pilot, 0.5)
        return app.threads_view.thread_list.filter_box.value

    assert run_app(root, script, size=(80, 24)) == "sor"
    assert started == []


def test_y_copies_the_selected_hash_and_z_zooms_the_focused_pane(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        await select_thread(app, pilot, ids["solve"])
        table = app.query_one("#timeline")
        table.focus()
        table.move_cursor(row=table.get_row_index(f"step:{ids['solve_steps'][1]}"))
        await pilot.press("y", "z")  # a burst
        await settle(app, pilot, 0.3)
        copied, zoomed = app.clipboard, app.screen.maximized
        await pilot.press("z")
        await settle(app, pilot, 0.3)
        return copied, zoomed is table, app.screen.maximized

    copied, zoomed, after = run_app(root, script, size=(80, 24))
    assert copied == ids["solve_steps"][1]  # OSC 52 carries it to the terminal's clipboard
    assert zoomed and after is None


def test_g_g_goes_to_the_first_row_and_g_alone_asks_for_a_hash(fixed):
    """vim's `g g`, where `g` opens go-to-hash: the same key again, before any text, is the first
    row of the pane that had the focus; a hash typed instead still opens the CAS view on it."""
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        timeline = app.query_one("#timeline")
        timeline.focus()
        await pilot.press("G")
        await settle(app, pilot, 0.2)
        last = timeline.cursor_row
        await pilot.press("g", "g")
        await settle(app, pilot, 0.3)
        first = timeline.cursor_row, type(app.screen).__name__
        await pilot.press("g", *ids["solve_steps"][0][:6], "enter")
        await settle(app, pilot, 0.3)
        return last, first, app.current_view

    last, first, view = run_app(root, script)
    assert last > 0 and first == (0, "Screen"), (last, first)
    assert view == "cas"
