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
