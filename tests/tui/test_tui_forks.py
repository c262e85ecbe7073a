"""uwf-tui's fork tools (issue 12) through Pilot on the fixed demo root: `m` marks a step and `D`
diffs the selected one with it, `p` previews a thread's next step (writing nothing), and the
timeline's tokens and cost (a fork row with its subtree's total, the thread's total and budget in
its title). Each key acts on what is selected when it is pressed, in a burst too."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import snapshot_tree  # noqa: E402
from test_tui import log_text, run_app, select_thread, settle, until
from textual import events

from uwf_core.api import dry_run, thread_info

SIZES = [(80, 24), (160, 48)]


def burst(app, *keys: str) -> None:
    """Keys as a fast typist sends them: all queued before the first is handled."""
    for key in keys:
        app.post_message(events.Key(key, "\r" if key == "enter" else key))


async def open_report(app, pilot, keys: tuple[str, ...]):
    """Press `keys` in one burst; wait until the diff or preview they open has its report."""
    from uwf_tui.screens.report import ReportScreen

    burst(app, *keys)
    opened = await until(pilot, lambda: isinstance(app.screen, ReportScreen) and (app.screen.report is not None or app.screen.error is not None))
    assert opened, f"no report after {keys}: {app.screen}"
    await pilot.pause(0.2)
    return app.screen


async def cursor_to(app, pilot, key: str) -> None:
    timeline = app.query_one("#timeline")
    timeline.move_cursor(row=timeline.get_row_index(key))
    await pilot.pause(0.2)


def report_text(app) -> str:
    """The whole report as plain text, at the width it is drawn at, scrolled off screen or not."""
    import io

    from rich.console import Console

    console = Console(file=io.StringIO(), width=app.screen.query_one("#report-body").size.width, record=True)
    for widget in app.screen.query("#report-body Static"):
        console.print(widget.content)
    return " ".join(console.export_text().split())  # as one line: where a long line wraps depends on the width


def footer_keys(app) -> list[str]:
    from textual.widgets._footer import FooterKey

    return [key.key for key in app.screen.query(FooterKey) if key.display]


# -- m and D: mark a step, diff another with it ------------------------------------------------


def test_m_marks_the_selected_step_in_the_timeline_and_m_again_unmarks_it(fixed):
    root, ids = fixed
    step3 = ids["solve_steps"][2]

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        await cursor_to(app, pilot, f"step:{step3}")
        before = footer_keys(app)
        await pilot.press("m")
        await pilot.pause(0.2)
        table = app.query_one("#timeline")
        role = str(table.get_cell(f"step:{step3}", table.columns_by_label["role"]))
        others = [str(table.get_cell(f"step:{h}", table.columns_by_label["role"])) for h in ids["solve_steps"] if h != step3]
        marked_footer = footer_keys(app)
        notes = [n.message for n in app._notifications]
        await pilot.press("m")
        await pilot.pause(0.2)
        unmarked = str(table.get_cell(f"step:{step3}", table.columns_by_label["role"]))
        return before, role, others, marked_footer, notes, unmarked, app.threads_view.mark

    before, role, others, marked_footer, notes, unmarked, mark = run_app(root, script)
    assert role == "◆ reviewer" and not any("◆" in other for other in others)
    assert "m" in before and "D" not in before  # the footer offers m, then D once something is marked
    assert "D" in marked_footer and "m" not in marked_footer
    assert any(note.startswith("marked step 3 (reviewer) of solve-issue") for note in notes), notes
    assert unmarked == "reviewer" and mark is None


@pytest.mark.parametrize("size", SIZES)
def test_d_diffs_the_marked_step_with_the_selected_thread_side_by_side(fixed, size):
    """Mark step 3 of solve-issue (the first review), select the fork whose review a person
    overruled, D: their common ancestor, then step 3 side by side (stacked at 80 columns), and
    steps 4 and 5 only in A; esc comes back."""
    root, ids = fixed
    step3 = ids["solve_steps"][2]
    step5 = ids["solve_steps"][4]

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        await cursor_to(app, pilot, f"step:{step5}")
        await pilot.press("m")
        await select_thread(app, pilot, ids["fork"])
        screen = await open_report(app, pilot, ("D",))
        text = report_text(app)
        a, b = list(app.screen.query(".diff-side"))[:2]  # step 3's sides
        sides = (a.region, b.region)
        body = app.screen.query_one("#report-body")
        burst(app, "j", "j", "j")
        await until(pilot, lambda: body.scroll_y >= 3)
        await pilot.pause(0.2)
        scrolled = body.scroll_y
        await pilot.press("escape")
        await pilot.pause(0.2)
        return screen.args, text, sides, scrolled, type(app.screen).__name__

    args, text, (a, b), scrolled, after = run_app(root, script, size=size)
    fork_head = thread_info(root, ids["fork"]).head
    assert args == (step5, fork_head)  # the mark, and the step under the fork's timeline cursor (its head)
    assert "Common ancestor: step 2 (developer)" in text
    for seen in ("step 3 (differs)", "approved: false", "approved: true", "→ developer", "→ $END (done)", "3,200 · cost 0.0125",
                 "condition 'notApproved'", "agent", "human", "step 4 (only in A)", "8.1s", "-## Review"):
        assert seen in text, seen
    assert step3 in text
    if size[0] < 110:
        assert a.x == b.x and b.y > a.bottom - 1 and a.right <= size[0]  # stacked, A above B
    else:
        assert a.y == b.y and b.x >= a.right and b.right <= size[0]  # side by side
    assert scrolled == 3
    assert after == "Screen"


def test_m_j_d_in_one_burst_diffs_the_mark_with_the_thread_moved_to(fixed):
    """From the thread list: `m` marks the selected thread's newest step, `j` moves to the thread
    below (the fork, drawn under it), `D` diffs the mark with it, though its timeline has not loaded yet."""
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        table = app.query_one("#threads")
        below = str(table.coordinate_to_cell_key((table.get_row_index(ids["solve"]) + 1, 0)).row_key.value)
        screen = await open_report(app, pilot, ("m", "j", "D"))
        return below, screen.args, app.screen.report.a.head, app.screen.report.b.head

    below, args, a_head, b_head = run_app(root, script)
    assert below == ids["fork"]
    assert args[0] == ids["solve_steps"][4] and args[1] in (ids["fork"], thread_info(root, ids["fork"]).head)
    assert a_head == ids["solve_steps"][4] and b_head == thread_info(root, ids["fork"]).head


def test_d_on_the_marked_step_itself_says_to_select_another(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        await pilot.press("m", "D")
        await pilot.pause(0.2)
        return type(app.screen).__name__, [n.message for n in app._notifications]

    screen, notes = run_app(root, script)
    assert screen == "Screen"
    assert any("that is the marked step" in note for note in notes), notes


# -- p: preview the next step ------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
def test_p_previews_the_next_step_and_writes_nothing(fixed, size):
    """The role the moderator picks and why, the agent and the rule that chose it, the exact prompt
    (scrollable); the root is byte for byte what it was."""
    root, ids = fixed
    expected = dry_run(root, ids["triage"])

    async def script(app, pilot):
        await select_thread(app, pilot, ids["triage"])
        await settle(app, pilot)
        before = snapshot_tree(Path(app.repo.location))
        screen = await open_report(app, pilot, ("p",))
        text = report_text(app)
        prompt = app.screen.query_one("#preview-prompt").content.plain
        body = app.screen.query_one("#report-body")
        burst(app, "j", "j")
        await until(pilot, lambda: body.scroll_y >= 2)
        await pilot.pause(0.2)
        scrolled = body.scroll_y
        await pilot.press("escape")
        await settle(app, pilot)
        return screen.args, text, prompt, scrolled, before, snapshot_tree(Path(app.repo.location))

    args, text, prompt, scrolled, before, after = run_app(root, script, size=size)
    assert args == (ids["triage"],)
    for seen in ("role", "triager", "$status 'answered'", "matched: answered", "script", "defaultAgent in config.yaml",
                 "uwf-script (step protocol)", "the prompt, exactly as the agent gets it", "Workflow: triage-bug"):
        assert seen in text, seen
    assert prompt == expected.prompt  # exactly what the agent would get
    assert scrolled == 2
    assert after == before


def test_j_p_in_one_burst_previews_the_thread_moved_to(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["analyze"])
        table = app.query_one("#threads")
        below = str(table.coordinate_to_cell_key((table.get_row_index(ids["analyze"]) + 1, 0)).row_key.value)
        screen = await open_report(app, pilot, ("j", "p"))
        return below, screen.args, app.screen.report.role

    below, args, role = run_app(root, script)
    assert below == ids["triage"] and args == (ids["triage"],) and role == "triager"


def test_p_on_a_finished_thread_says_why_it_does_nothing(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        offered = "p" in footer_keys(app)
        await pilot.press("p")
        await pilot.pause(0.2)
        return offered, type(app.screen).__name__, log_text(app)

    offered, screen, log = run_app(root, script)
    assert not offered and screen == "Screen"
    assert f"{ids['solve'][:10]} is done: nothing to preview; f forks from a step" in log, log


def test_a_preview_that_ends_the_thread_says_so(fixed):
    """The fork's reviewer approved: its next step is $END (done), with no agent and no prompt."""
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["fork"])
        await open_report(app, pilot, ("p",))
        return report_text(app), bool(app.screen.query("#preview-prompt"))

    text, has_prompt = run_app(root, script)
    assert "the thread would end (done): no agent runs" in text and "budget 5,260/40,000 tokens" in text
    assert not has_prompt


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


# -- keys: footer, help, palette -------------------------------------------------------------


def test_at_80_columns_the_footer_holds_every_key_that_applies(fixed):
    """The widest case: an active thread, a step selected, a mark set (D shows instead of m)."""
    from textual.widgets._footer import FooterKey

    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["fork"])
        await pilot.press("m")
        await select_thread(app, pilot, ids["fork"])
        return [(key.key, key.region.right) for key in app.screen.query(FooterKey) if key.display]

    keys = run_app(root, script, size=(80, 24))
    assert [key for key, _ in keys] == ["right_square_bracket", "s", "r", "p", "d", "f", "e", "D", "K", "question_mark", "q"]
    assert all(right <= 80 for _, right in keys), keys


def test_the_new_keys_are_in_help_and_in_the_palette_which_does_what_the_key_does(fixed):
    root, ids = fixed

    async def script(app, pilot):
        titles = [command.title for command in app.get_system_commands(app.screen)]
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        help_text = str(app.screen.query_one("#help-text").render())
        await pilot.press("escape")
        await select_thread(app, pilot, ids["solve"])
        done = []
        for words in ("mark the selected", "mark the selected"):  # marks; then (the twin) unmarks
            await pilot.press("ctrl+p")
            await pilot.pause(0.3)
            await pilot.press(*words)
            await pilot.pause(0.5)
            await pilot.press("enter")
            await pilot.pause(0.3)
            done.append(app.threads_view.mark)
        await pilot.press("ctrl+p")
        await pilot.pause(0.3)
        await pilot.press(*"start a thread")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.3)
        return titles, help_text, done, type(app.screen).__name__

    titles, help_text, done, started = run_app(root, script)
    for title in (
        "Mark the selected step (or thread) to diff another with it (D)",
        "Diff the marked step with the selected one, side by side from their common ancestor",
        "Preview the selected thread's next step (its role and why, the agent, the prompt), running nothing",
    ):
        assert title in titles, title
    for key in ("p preview", "m mark", "D diff"):
        assert key in help_text, key
    assert done == [ids["solve_steps"][4], None]
    assert started == "NewThreadScreen"  # `n` starts a thread from the Threads view too, so its command does


# -- which thread a row is (issue 40) ------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
def test_rows_say_which_thread_and_escape_returns_from_a_fork_to_where_enter_opened_it(fixed, size):
    """Every list row has the thread's tag (its id's end) at every width; in a timeline a fork
    row says fork or parent with the tag; Enter on a fork row, then Escape, comes back to the
    row Enter was pressed on; Escape again goes to the list."""
    from uwf_tui.formatting import tag

    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        threads, timeline = app.query_one("#threads"), app.query_one("#timeline")
        tags = [str(threads.get_row(key.value)[1]) for key in threads.rows]
        assert await until(pilot, lambda: "fork of" in str(threads.get_row(ids["fork"])[-1]))
        listed = [key.value for key in threads.rows]
        under = listed.index(ids["fork"]) == listed.index(ids["solve"]) + 1
        fork_prompt = str(threads.get_row(ids["fork"])[-1])
        fork_row = [str(cell) for cell in timeline.get_row(f"branch:{ids['fork']}")]
        timeline.focus()
        await cursor_to(app, pilot, f"branch:{ids['fork']}")
        burst(app, "enter")
        await until(pilot, lambda: app.threads_view.timeline is not None and app.threads_view.timeline.info.thread == ids["fork"])
        await settle(app, pilot)
        parent_row = [str(cell) for cell in timeline.get_row(f"branch:{ids['solve']}")]
        burst(app, "escape")
        await until(pilot, lambda: app.threads_view.timeline is not None and app.threads_view.timeline.info.thread == ids["solve"])
        await settle(app, pilot)
        back_at = timeline.key_at_cursor()
        focus_back = app.focused is timeline
        burst(app, "escape")
        await pilot.pause(0.2)
        return tags, fork_row, parent_row, back_at, focus_back, app.focused is threads, under, fork_prompt

    tags, fork_row, parent_row, back_at, focus_back, at_list, under, fork_prompt = run_app(root, script, size=size)
    assert under and fork_prompt.startswith(f"↳ fork of {tag(ids['solve'])}: ")  # the list draws a fork under its parent
    assert len(set(tags)) == len(tags) >= 4  # a tag each, none the same
    assert tag(ids["solve"]) in tags and tag(ids["fork"]) in tags
    assert fork_row[1] == "↳ fork" and fork_row[3] == tag(ids["fork"])  # in the started column, empty for a fork
    assert parent_row[1] == "↰ parent" and parent_row[3] == tag(ids["solve"])
    assert f"forked from thread {ids['solve']}" in parent_row[-1]
    assert back_at == f"branch:{ids['fork']}" and focus_back
    assert at_list


@pytest.mark.parametrize("size", SIZES)
def test_in_a_fork_s_timeline_its_parent_s_other_fork_reads_sibling_not_fork(fixed, size):
    """A trial read a fork's timeline listing its parent's other forks as `↳ fork`, its own:
    now a row says parent, fork (of this thread) or sibling (of its parent), as the list's
    lineage has it, and its text names whose fork it is."""
    from uwf_core.api import fork_thread

    root, ids = fixed
    sibling = fork_thread(root, ids["solve_steps"][1]).thread  # the parent's other fork, at an earlier step

    async def script(app, pilot):
        await select_thread(app, pilot, ids["fork"])
        timeline = app.query_one("#timeline")
        key = f"branch:{sibling}"
        assert await until(pilot, lambda: key in timeline.rows and "sibling" in str(timeline.get_row(key)[1]))
        return [str(cell) for cell in timeline.get_row(key)], [str(cell) for cell in timeline.get_row(f"branch:{ids['solve']}")]

    sibling_row, parent_row = run_app(root, script, size=size)
    assert sibling_row[1] == "↔ sibling" and f"a fork of {ids['solve']}" in sibling_row[-1]
    assert parent_row[1] == "↰ parent"
