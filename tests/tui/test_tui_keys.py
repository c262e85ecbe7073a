"""Keys that used to do nothing silently, and the jumps users of lazygit, k9s and Harlequin
expect."""

from __future__ import annotations

import pytest
from test_tui import run_app, select_thread, settle


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
        await pilot.press(*"AHF", "enter", "l")  # a filter typed, then into the timeline: the list keeps 3 rows under its field
        await settle(app, pilot, 0.3)
        filtered_at_timeline = threads.size.height - 1
        return listed, focused_rows, filtering, filtered_at_timeline

    listed, focused_rows, filtering, filtered_at_timeline = run_app(root, script, size=(80, 24))
    assert focused_rows >= 8
    assert filtering >= 3 and listed >= 3
    assert filtered_at_timeline >= 3, filtered_at_timeline


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


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@pytest.mark.parametrize("key", ["s", "K", "dollar_sign"])
def test_a_burst_that_moves_in_the_list_and_jumps_to_a_fork_acts_on_the_fork(fixed, key, size):
    """`G enter k k k enter s` sent at once, from the list: G selects the last thread (done), enter
    goes into its timeline, k k k reach its fork row and enter jumps to the fork. The key at the end
    acts on the fork, where the burst ends; it was judged when pressed, against the done thread
    G had selected (s said "is done", K and $ acted on the wrong thread)."""
    from textual import events

    root, ids = fixed
    acted = []

    async def script(app, pilot):
        app._start = lambda thread, run: acted.append(("step", thread))
        app.commands.kill = lambda thread: acted.append(("kill", thread))
        await settle(app, pilot)
        assert app.threads_view.thread_list.first_thread() != ids["solve"]
        keys = [("G", "G"), ("enter", None), ("k", "k"), ("k", "k"), ("k", "k"), ("enter", None), (key, "$" if key == "dollar_sign" else key)]
        for name, char in keys:
            app.post_message(events.Key(name, char))
        await settle(app, pilot, 1.5)
        screen = app.screen
        return app.threads_view.current_thread(), type(screen).__name__, getattr(screen, "args", None)

    current, screen, args = run_app(root, script, size=size)
    assert current == ids["fork"]
    if key == "dollar_sign":
        assert screen == "CostScreen" and args == (ids["fork"],)
    else:
        assert acted == [({"s": "step", "K": "kill"}[key], ids["fork"])], acted


def test_g_g_in_one_burst_then_j_moves_from_the_first_row(fixed):
    """`g g j j` sent at once: the second g reached the list before the dialog was there, and the
    j's were typed into the dialog's field ("no node matches 'j'")."""
    from textual import events

    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        timeline = app.query_one("#timeline")
        timeline.focus()
        await pilot.press("G")
        await settle(app, pilot, 0.2)
        for key in "ggjj":
            app.post_message(events.Key(key, key))
        await settle(app, pilot, 0.5)
        return timeline.cursor_row, type(app.screen).__name__

    assert run_app(root, script) == (2, "Screen")


def test_z_zooms_the_step_pane_the_log_and_the_graph_to_the_whole_screen_at_80x24(fixed):
    """The panes a short terminal squeezes most: z did nothing on a step's tabs and on the graph
    (their scrolling bodies cannot be maximized; the tabs zoom whole now), and left the log at its
    own 4 rows in the middle of the screen."""
    root, ids = fixed

    async def zoomed(app, pilot) -> tuple[str, int]:
        await pilot.press("z")
        await settle(app, pilot, 0.2)
        widget = app.screen.maximized
        shown = (widget.id or type(widget).__name__, widget.region.height) if widget is not None else ("", 0)
        await pilot.press("z")
        await settle(app, pilot, 0.2)
        return shown

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        app.query_one("#timeline").focus()
        await pilot.press("enter")  # into the step's tabs
        await settle(app, pilot, 0.2)
        step = await zoomed(app, pilot)
        app.query_one("#log").focus()
        log = await zoomed(app, pilot)
        await pilot.press("1")
        await settle(app, pilot, 0.3)
        await pilot.press("enter")  # into the graph
        await settle(app, pilot, 0.2)
        graph = await zoomed(app, pilot)
        return step, log, graph, app.screen.maximized

    step, log, graph, after = run_app(root, script, size=(80, 24))
    assert step == ("step-tabs", 23) and log == ("log", 23) and graph == ("workflow-tabs", 23), (step, log, graph)
    assert after is None


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_a_filter_typed_in_one_burst_shows_the_timeline_of_the_thread_under_the_cursor(fixed, size):
    """`/tri enter` sent at once: the list fills once a key, and a highlight queued by an earlier
    fill (a thread the filter then hid) came last, so the timeline showed a thread the list no
    longer had. Then esc clears the filter and the keys act on the list."""
    from textual import events

    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        for name, char in [("slash", "/"), ("t", "t"), ("r", "r"), ("i", "i"), ("enter", None)]:
            app.post_message(events.Key(name, char))
        await settle(app, pilot, 0.8)
        view = app.threads_view
        rows = [str(key.value) for key in app.query_one("#threads").rows]
        filtered = rows, view.current_thread(), view.timeline.info.thread
        await pilot.press("escape", "j")
        await settle(app, pilot, 0.5)
        return filtered, app.focused.id, len(app.query_one("#threads").rows), view.timeline.info.thread == view.current_thread()

    (rows, current, shown), focused, count, follows = run_app(root, script, size=size)
    assert rows == [ids["triage"]] and current == shown == ids["triage"], (rows, current, shown)
    assert focused == "threads" and count == 4 and follows


def test_a_filter_that_hides_every_thread_leaves_no_thread_for_the_keys(fixed):
    """`/qqq`: the list is empty, and s used to step the last thread the filter matched on its way
    (the timeline still showed it)."""
    root, ids = fixed
    started = []

    async def script(app, pilot):
        app._start = lambda thread, run: started.append(thread)
        await select_thread(app, pilot, ids["analyze"])
        await pilot.press("slash", "q", "q", "q", "enter")
        await settle(app, pilot, 0.5)
        view = app.threads_view
        title = str(app.query_one("#thread-title").render())
        await pilot.press("s", "p")
        await settle(app, pilot, 0.3)
        return view.current_thread(), view.timeline, app.query_one("#timeline").row_count, title, type(app.screen).__name__

    current, timeline, rows, title, screen = run_app(root, script)
    assert current is None and timeline is None and rows == 0 and started == [] and screen == "Screen"
    assert "No thread matches 'qqq'" in title, title


def test_keys_that_cannot_act_say_why(fixed):
    """d on a finished thread, x with nothing running, f on a fork row, P off a candidate's row: each said nothing."""
    root, ids = fixed
    said = []

    async def script(app, pilot):
        app.notify = lambda message, **_: said.append(message)
        await select_thread(app, pilot, ids["solve"])  # done
        await pilot.press("d", "x")
        timeline = app.query_one("#timeline")
        timeline.focus()
        timeline.move_cursor(row=timeline.get_row_index(f"branch:{ids['fork']}"))
        await pilot.pause(0.1)
        await pilot.press("f")
        await pilot.press("P")  # a fork row, but not a candidate of the head
        await settle(app, pilot, 0.3)

    run_app(root, script)
    solve = ids["solve"][:10]
    assert f"{solve} is done: nothing to queue; f forks from a step" in said, said
    assert f"nothing runs for thread {solve}, here or in another process" in said, said
    assert "f forks from a step or the prompt row: move the cursor onto one" in said, said
    assert any(line.startswith("P picks a candidate: the row of an active fork of the thread's head") for line in said), said


def test_y_on_the_list_copies_the_thread_id_and_g_takes_a_thread_id(fixed):
    root, ids = fixed
    copied = []

    async def script(app, pilot):
        app.copy_to_clipboard = copied.append
        await select_thread(app, pilot, ids["triage"])
        app.query_one("#threads").focus()
        await pilot.press("y")
        await pilot.press("g", *ids["solve"][:14], "enter")
        await settle(app, pilot, 0.5)
        return app.current_view, app.threads_view.current_thread(), app.focused.id

    view, current, focused = run_app(root, script)
    assert copied == [ids["triage"]]
    assert (view, current, focused) == ("threads", ids["solve"], "timeline")
