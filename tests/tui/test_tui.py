"""uwf-tui driven through Textual's Pilot on a fixed demo root: every key, the
error paths, live refresh from another process, and the human form."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES  # noqa: E402
from tui_capture import workers_settled  # noqa: E402

from uwf_core.api import Repo, context_of, list_threads, thread_info  # noqa: E402

SIZE = (160, 50)


def run_app(root: Repo, script, size=SIZE, toasts: bool = False):
    """Run `script(app, pilot)` inside the app and return what it returns (`toasts`: draw them)."""
    from uwf_tui.app import UwfApp

    async def main():
        app = UwfApp(root, poll_seconds=0.2)
        async with app.run_test(size=size, notifications=toasts) as pilot:
            await pilot.pause(0.3)
            return await script(app, pilot)

    return asyncio.run(main())


async def settle(app, pilot, seconds: float = 0.4):
    await workers_settled(app)
    await pilot.pause(seconds)
    await workers_settled(app)
    await pilot.pause(0.1)


async def until(pilot, predicate, timeout: float = 10.0) -> bool:
    """Pause until `predicate()` holds (a loaded machine is slow, so no fixed pause is enough)."""
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return True
        await pilot.pause(0.05)
    return predicate()


async def select_thread(app, pilot, thread: str):
    table = app.query_one("#threads")
    table.move_cursor(row=table.get_row_index(thread))
    await pilot.pause(0.2)
    await settle(app, pilot)
    assert app.threads_view.selected_thread == thread


def _slow_default_agent(root, tmp_path, marker: str) -> None:
    """Make the default agent a script that says "working" on stderr, then sleeps a minute."""
    slow = tmp_path / "slow.sh"
    slow.write_text(f"#!/bin/sh\necho working >&2\nsleep 60 # {marker}\n")
    slow.chmod(0o755)
    config = Path(root.location, "config.yaml")
    config.write_text(config.read_text().replace('defaultAgent: "script"', f'defaultAgent: "{slow}"'))


async def _step_until_working(app, pilot, thread: str) -> None:
    await select_thread(app, pilot, thread)
    await pilot.press("s")
    for _ in range(40):
        await pilot.pause(0.1)
        if "working" in log_text(app):
            break


def log_text(app) -> str:
    return "\n".join(str(line.text) for line in app.query_one("#log").lines)


def test_startup_lists_threads_and_shows_the_timeline(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        rows = app.query_one("#threads").row_count
        await select_thread(app, pilot, ids["solve"])
        timeline = app.query_one("#timeline")
        keys = [row.value for row in timeline.rows]
        return rows, keys

    rows, keys = run_app(root, script)
    assert rows == 4
    steps = [key for key in keys if key.startswith("step:")]
    assert steps == [f"step:{h}" for h in ids["solve_steps"]]
    assert f"branch:{ids['fork']}" in keys  # the fork hangs off the step it left


def test_the_start_row_names_its_workflow(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["analyze"])
        table = app.query_one("#timeline")
        table.move_cursor(row=0)
        await settle(app, pilot)
        return app.query_one("#step-output").content.code

    workflow = thread_info(root, ids["analyze"]).workflow
    assert f"workflow: analyze-topic ({workflow})" in run_app(root, script)


def screen_text(app) -> str:
    """What the screen shows, as plain text (from the SVG export)."""
    import html
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", app.export_screenshot())).replace("\xa0", " ")


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_the_thread_list_shows_each_prompts_first_words(fixed, size):
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        table = app.query_one("#threads")
        return {thread: str(table.get_row(thread)[-1]) for thread in (ids["triage"], ids["analyze"])}, screen_text(app)

    prompts, screen = run_app(root, script, size=size)
    assert prompts[ids["triage"]].startswith("Bug report: the app crashes")
    assert "Bug report: the" in screen and "Why content-add" in screen  # on screen, not scrolled off


def test_a_fresh_fork_is_as_young_as_the_fork(fixed):
    """A fork's head is an old step; its row's age is the fork's, not that step's."""
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        timeline = app.query_one("#timeline")
        timeline.move_cursor(row=timeline.get_row_index(f"step:{ids['solve_steps'][0]}"))
        await pilot.pause(0.2)
        await pilot.press("f")
        await settle(app, pilot)
        table = app.query_one("#threads")
        fork = app.threads_view.selected_thread
        return str(table.get_row(fork)[4]), str(table.get_row(ids["solve"])[4])  # updated

    fork_age, parent_age = run_app(root, script)
    assert fork_age.endswith("s ago") and parent_age.endswith("d ago")


def test_failed_attempts_appear_in_the_timeline(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["triage"])
        return [row.value for row in app.query_one("#timeline").rows]

    keys = run_app(root, script)
    assert any(key.startswith(f"attempt:{ids['triage_steps'][-1]}") for key in keys)


def test_s_steps_the_selected_thread(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["analyze"])
        await pilot.press("s")
        await settle(app, pilot, 1.0)
        return log_text(app), app.threads_view.statuses.get(ids["analyze"])

    log, status = run_app(root, script)
    info = thread_info(root, ids["analyze"])
    assert info.done and info.reason == "done"
    assert "✓ analyst" in log
    assert status == "done"


def test_keys_in_a_burst_act_on_what_is_selected_when_each_is_pressed(fixed):
    """`k s` typed fast steps the thread the cursor moved to, not the one selected before."""
    root, ids = fixed
    heads = {name: thread_info(root, ids[name]).head for name in ("analyze", "triage")}

    async def script(app, pilot):
        await select_thread(app, pilot, ids["triage"])
        table = app.query_one("#threads")
        above = str(table.coordinate_to_cell_key((table.get_row_index(ids["triage"]) - 1, 0)).row_key.value)
        from textual import events

        # One burst, as a fast typist sends it: both keys queued before either is handled
        # (Pilot.press would wait for the app to go idle between them).
        app.post_message(events.Key("k", "k"))
        app.post_message(events.Key("s", "s"))
        await settle(app, pilot, 1.0)
        return above

    above = run_app(root, script)
    assert above == ids["analyze"]
    assert thread_info(root, ids["analyze"]).head != heads["analyze"]  # the thread moved to was stepped
    assert thread_info(root, ids["triage"]).head == heads["triage"]  # not the one selected before


def test_a_finished_step_took_what_uwf_timed_and_started_means_the_start_on_every_row(fixed, tmp_path):
    """A step-protocol agent behind a slow wrapper: its StepNode's own times are the kit's inner
    call (about 0s); the timeline shows the attempt's duration from runs.jsonl."""
    from uwf_tui.formatting import clock

    root, ids = fixed
    wrapper = tmp_path / "slow-wrapper.sh"
    wrapper.write_text(f'#!/bin/sh\nsleep 1.5\nexec uwf-script --script-dir "{EXAMPLES}" "$@"\n')
    wrapper.chmod(0o755)
    config = Path(root.location, "config.yaml")
    config.write_text(config.read_text().replace('defaultAgent: "script"', f'defaultAgent: "{wrapper}"'))

    async def script(app, pilot):
        await select_thread(app, pilot, ids["analyze"])
        await pilot.press("s")
        await settle(app, pilot, 1.0)
        for _ in range(40):
            if ids["analyze"] not in app.running:
                break
            await pilot.pause(0.25)
        await settle(app, pilot)
        table = app.query_one("#timeline")
        labels = [str(column.label) for column in table.ordered_columns]
        (key,) = [key.value for key in table.rows if key.value.startswith("step:")]
        return labels, [str(cell) for cell in table.get_row(key)]

    labels, row = run_app(root, script)
    (run,) = [record for record in root.runs.read(ids["analyze"]) if record.ok]
    assert labels[3:5] == ["started", "took"]
    assert row[3] == clock(run.startedAt)  # the start, as on the running row and attempt rows
    assert float(row[4].rstrip("s")) >= 1.5, row


def test_s_on_a_finished_thread_says_why_it_does_nothing(fixed):
    root, ids = fixed
    done = next(info.thread for info in list_threads(root, include_archived=True) if not info.active)

    async def script(app, pilot):
        await select_thread(app, pilot, done)
        footer_offers_step = "s" in app.screen.active_bindings and app.screen.active_bindings["s"].binding.show
        await pilot.press("s")
        await pilot.pause(0.2)
        return footer_offers_step, [n.message for n in app._notifications], log_text(app), app.running

    offered, notes, log, running = run_app(root, script)
    assert not offered and not running  # no fake offer in the footer, nothing started
    assert f"{done[:10]} is done: nothing to step; f forks from a step" in notes, notes


def test_s_j_s_in_one_burst_steps_two_threads(fixed):
    """Each `s` steps the thread under the cursor when it is pressed: the burst steps the first
    thread, moves, and steps the second, though the first is still running when `j` comes."""
    from textual import events

    root, ids = fixed
    heads = {name: thread_info(root, ids[name]).head for name in ("analyze", "triage")}

    async def script(app, pilot):
        await select_thread(app, pilot, ids["analyze"])
        table = app.query_one("#threads")
        below = str(table.coordinate_to_cell_key((table.get_row_index(ids["analyze"]) + 1, 0)).row_key.value)
        for key in ("s", "j", "s"):  # queued before any is handled: no pause between them
            app.post_message(events.Key(key, key))
        await settle(app, pilot, 1.0)
        for _ in range(40):
            if not app.running:
                break
            await pilot.pause(0.25)
        return below

    below = run_app(root, script)
    assert below == ids["triage"]
    assert thread_info(root, ids["analyze"]).head != heads["analyze"]
    assert thread_info(root, ids["triage"]).head != heads["triage"]


def test_r_runs_until_done(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["triage"])
        await pilot.press("r")
        await settle(app, pilot, 1.0)
        for _ in range(40):
            if ids["triage"] not in app.running:
                break
            await pilot.pause(0.25)
        return log_text(app)

    log = run_app(root, script)
    info = thread_info(root, ids["triage"])
    assert info.done and info.reason == "done"
    assert "✓ fixer" in log


def test_f_forks_from_the_selected_step(fixed):
    root, ids = fixed
    before = {info.thread for info in list_threads(root, include_archived=True)}

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        timeline = app.query_one("#timeline")
        timeline.move_cursor(row=timeline.get_row_index(f"step:{ids['solve_steps'][1]}"))
        await pilot.pause(0.2)
        await pilot.press("f")
        await settle(app, pilot)
        return app.threads_view.selected_thread

    selected = run_app(root, script)
    after = {info.thread for info in list_threads(root, include_archived=True)}
    (new,) = after - before
    assert selected == new
    assert thread_info(root, new).head == ids["solve_steps"][1]


def test_e_edits_an_output_and_forks(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        timeline = app.query_one("#timeline")
        timeline.move_cursor(row=timeline.get_row_index(f"step:{ids['solve_steps'][2]}"))
        await pilot.pause(0.2)
        await pilot.press("e")
        await pilot.pause(0.3)
        editor = app.screen.query_one("#text")
        await pilot.press("ctrl+s")  # saved untouched: no fork of the same output as a person's
        await pilot.pause(0.2)
        unchanged = str(app.screen.query_one("#error").render())
        editor.text = "approved: nope\ncomments: x\n"
        await pilot.press("ctrl+s")
        await pilot.pause(0.2)
        error = str(app.screen.query_one("#error").render())
        editor.text = "approved: true\ncomments: Overruled by a person.\n"
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        return unchanged, error, app.threads_view.selected_thread

    unchanged, error, thread = run_app(root, script)
    assert "the output is unchanged" in unchanged
    assert "does not match" in error
    from uwf_core.api import thread_steps

    last = thread_steps(root, thread)[-1]
    assert last.agent == "human" and last.output == {"approved": True, "comments": "Overruled by a person."}


def test_capital_k_kills_after_confirmation(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["fork"])
        await pilot.press("K")
        await pilot.pause(0.2)
        await pilot.press("n")  # no: nothing happens
        await pilot.pause(0.2)
        alive = thread_info(root, ids["fork"]).active
        await pilot.press("K")
        await pilot.pause(0.2)
        await pilot.press("y")
        await settle(app, pilot)
        return alive

    alive_after_no = run_app(root, script)
    assert alive_after_no is True
    info = thread_info(root, ids["fork"])
    assert not info.active and info.reason == "killed"


def test_the_kill_dialog_defaults_to_no(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["fork"])
        await pilot.press("K")
        await pilot.pause(0.2)
        shown = type(app.screen).__name__
        await pilot.press("enter")  # the focused answer is No
        await settle(app, pilot)
        return shown, type(app.screen).__name__

    shown, after = run_app(root, script)
    assert shown == "ConfirmScreen" and after != "ConfirmScreen"
    assert thread_info(root, ids["fork"]).active


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_the_kill_dialog_says_it_all_and_only_what_is_true(fixed, size):
    """The question is whole inside the dialog at 80x24, and no running agent is claimed when
    none runs."""
    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["fork"])
        await pilot.press("K")
        await pilot.pause(0.3)
        question, dialog = app.screen.query_one(".question"), app.screen.query_one(".dialog")
        buttons = [button.region for button in app.screen.query("Button")]
        return str(question.render()), question.region, dialog.region, buttons

    text, question, dialog, buttons = run_app(root, script, size=size)
    assert text == f"Kill thread {ids['fork']}? It will be archived and it will take no more steps (its steps can still be forked)."
    assert dialog.contains_region(question) and question.height >= len(text) // question.width + 1
    assert all(dialog.contains_region(button) for button in buttons) and dialog.bottom <= size[1]


def test_killing_a_thread_whose_step_runs_here_says_killed_not_cancelled(fixed, tmp_path):
    root, ids = fixed
    _slow_default_agent(root, tmp_path, "tui-kill-marker")

    async def script(app, pilot):
        await _step_until_working(app, pilot, ids["analyze"])
        await pilot.press("K")
        await pilot.pause(0.3)
        await pilot.press("y")
        for _ in range(60):
            await pilot.pause(0.1)
            if ids["analyze"] not in app.running:
                break
        await settle(app, pilot)
        return log_text(app)

    log = run_app(root, script)
    assert "killed: the thread is archived and its step stopped" in log and "cancelled" not in log
    assert thread_info(root, ids["analyze"]).reason == "killed"


def test_quitting_with_an_agent_running_asks_first_and_no_is_the_default(fixed, tmp_path):
    root, ids = fixed
    _slow_default_agent(root, tmp_path, "tui-quit-marker")

    async def script(app, pilot):
        await _step_until_working(app, pilot, ids["analyze"])
        await pilot.press("q")
        await pilot.pause(0.3)
        asked = type(app.screen).__name__
        await pilot.press("enter")  # No: keep working
        await pilot.pause(0.3)
        still = app.is_running and ids["analyze"] in app.running
        await pilot.press("q")
        await pilot.pause(0.3)
        await pilot.press("y")
        for _ in range(40):
            if not app.is_running:
                break
            await pilot.pause(0.25)
        return asked, still

    asked, still = run_app(root, script)
    assert asked == "ConfirmScreen" and still
    assert root.runs.read(ids["analyze"])[-1].status == "killed"  # the stopped step is on record


def test_k_and_j_navigate_rather_than_kill(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        app.query_one("#threads").focus()
        first = app.query_one("#threads").cursor_row
        await pilot.press("j")
        await pilot.pause(0.1)
        second = app.query_one("#threads").cursor_row
        await pilot.press("k")
        await pilot.pause(0.1)
        return first, second, app.query_one("#threads").cursor_row

    first, second, back = run_app(root, script)
    assert second == first + 1 and back == first
    assert all(info.active or info.reason != "killed" for info in list_threads(root, include_archived=True))


def test_n_starts_a_new_thread(fixed):
    root, ids = fixed
    before = {info.thread for info in list_threads(root)}

    async def script(app, pilot):
        await settle(app, pilot)
        await pilot.press("n")
        await pilot.pause(0.3)
        app.screen.query_one("#prompt").text = "Summarise the design of uwf."
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        return app.threads_view.selected_thread

    selected = run_app(root, script)
    (new,) = {info.thread for info in list_threads(root)} - before
    assert selected == new


def test_esc_on_the_new_thread_dialog_keeps_the_prompt_for_next_time(fixed):
    root, ids = fixed
    before = {info.thread for info in list_threads(root)}

    async def script(app, pilot):
        await settle(app, pilot)
        await pilot.press("n")
        await pilot.pause(0.3)
        app.screen.query_one("#prompt").text = "Half a thought"
        await pilot.press("escape")
        await pilot.pause(0.3)
        await pilot.press("n")
        await pilot.pause(0.3)
        await pilot.press("space", "o", "n")  # typed on after what was kept
        kept = app.screen.query_one("#prompt").text
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        await pilot.press("n")
        await pilot.pause(0.3)
        return kept, app.screen.query_one("#prompt").text

    kept, after_start = run_app(root, script)
    assert kept == "Half a thought on" and after_start == ""  # a started prompt is not offered again
    (new,) = {info.thread for info in list_threads(root)} - before
    assert context_of(root, thread_info(root, new).head).start.prompt == "Half a thought on"


def test_a_refused_new_thread_keeps_the_dialog_and_what_was_typed(fixed, tmp_path):
    root, ids = fixed
    before = {info.thread for info in list_threads(root)}

    async def script(app, pilot):
        await settle(app, pilot)
        await pilot.press("n")
        await pilot.pause(0.3)
        dialog = app.screen
        dialog.query_one("#prompt").text = "A long prompt I do not want to type again."
        dialog.query_one("#workspace").value = str(tmp_path / "no-such-dir")
        await pilot.press("ctrl+s")
        await pilot.pause(0.3)
        error = str(dialog.query_one("#error").render())
        kept = dialog.query_one("#prompt").text
        still_open = app.screen is dialog
        dialog.query_one("#prompt").focus()
        await pilot.press("tab")  # Tab leaves the prompt instead of typing into it
        await pilot.pause(0.1)
        tabbed = app.focused is not dialog.query_one("#prompt") and "\t" not in dialog.query_one("#prompt").text
        await pilot.press("shift+tab")  # and shift+tab comes back to it
        await pilot.pause(0.1)
        tabbed = tabbed and app.focused is dialog.query_one("#prompt")
        await pilot.press("shift+tab")
        await pilot.pause(0.1)
        tabbed = tabbed and app.focused is dialog.query_one("#workflow")
        dialog.query_one("#workspace").value = str(tmp_path)
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        return error, kept, still_open, tabbed, app.screen is dialog

    error, kept, still_open, tabbed, open_after = run_app(root, script)
    assert "is not a directory" in error and still_open
    assert kept == "A long prompt I do not want to type again."
    assert tabbed, "tab"
    assert not open_after, "open"
    assert len({info.thread for info in list_threads(root)} - before) == 1


def test_x_cancels_the_running_agent(fixed, tmp_path):
    root, ids = fixed
    _slow_default_agent(root, tmp_path, "tui-cancel-marker")

    async def script(app, pilot):
        await _step_until_working(app, pilot, ids["analyze"])
        await pilot.press("x")
        await settle(app, pilot, 0.5)
        for _ in range(40):
            if ids["analyze"] not in app.running:
                break
            await pilot.pause(0.25)
        await settle(app, pilot)
        table = app.query_one("#timeline")
        attempt = next(str(table.get_row(key)[1]) for key in table.rows if key.value.startswith("attempt:"))
        return log_text(app), ids["analyze"] in app.running, app.threads_view.statuses[ids["analyze"]], attempt

    log, still_running, status, attempt = run_app(root, script)
    assert not still_running
    assert "cancelled" in log and "✗" not in log
    assert status == "cancelled" and attempt.startswith("■")  # a cancel is not a failure
    assert thread_info(root, ids["analyze"]).active  # head unchanged, thread still there
    assert root.runs.read(ids["analyze"])[-1].status == "killed"


def test_slash_filters_threads(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        await pilot.press("slash")
        await pilot.pause(0.2)
        await pilot.press(*"triage")
        await pilot.pause(0.3)
        return app.query_one("#threads").row_count

    assert run_app(root, script) == 1


def test_g_goes_to_a_hash_in_the_cas_view(fixed):
    root, ids = fixed
    target = ids["solve_steps"][0]

    async def script(app, pilot):
        await settle(app, pilot)
        await pilot.press("g")
        await pilot.pause(0.2)
        await pilot.press("z", "z", "z", "z", "z", "enter")  # no such node: said in the dialog, the text kept
        await pilot.pause(0.3)
        refused = str(app.screen.query_one("#error").render()), app.screen.query_one("#value").value
        await pilot.press(*["backspace"] * 5, *target[:6].lower(), "enter")
        await pilot.pause(0.3)
        from uwf_tui.widgets.cas_view import CasView

        tree = app.query_one("#cas-tree")
        return refused, app.current_view, app.query_one(CasView).shown, app.export_screenshot(), tree.cursor_node.data if tree.cursor_node else None

    refused, view, shown, screen, under_cursor = run_app(root, script)
    assert "no node matches 'zzzzz'" in refused[0] and refused[1] == "zzzzz"
    assert view == "cas"
    assert shown == target
    assert under_cursor == target  # the cursor is on the node found, not on the tree's root
    assert "step-node" in screen


def test_the_cas_tree_opens_with_its_cursor_on_the_first_line_so_j_reaches_a_thread(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await pilot.press("3")
        await settle(app, pilot)
        tree = app.query_one("#cas-tree")
        first = tree.cursor_node.label.plain if tree.cursor_node else None
        await pilot.press("j")
        await pilot.pause(0.1)
        return first, tree.cursor_node.data if tree.cursor_node else None, tree.root.children[0].children[0].data

    first, under_cursor, first_thread = run_app(root, script)
    assert first == "threads"
    assert under_cursor == first_thread  # the first j reaches a thread (it only showed the cursor on "threads")


def test_cas_tree_expands_references_lazily(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await pilot.press("3")
        await settle(app, pilot)
        tree = app.query_one("#cas-tree")
        threads = tree.root.children[0]
        node = next(child for child in threads.children if child.data == thread_info(root, ids["solve"]).head)
        before = [str(child.label) for child in node.children]
        node.expand()
        await settle(app, pilot)
        return before, [child.data for child in node.children]

    before, children = run_app(root, script)
    assert before == ["loading…"]
    assert children == root.nodes.refs(thread_info(root, ids["solve"]).head)


def test_numbers_switch_views(fixed):
    root, _ = fixed

    async def script(app, pilot):
        seen = []
        for key in ("1", "2", "3", "2"):
            await pilot.press(key)
            await pilot.pause(0.1)
            seen.append(app.current_view)
        return seen

    assert run_app(root, script) == ["workflows", "threads", "cas", "threads"]


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_tab_moves_between_panes_and_brackets_switch_tabs(fixed, size):
    """Tab and shift+tab go round the view's panes (list, timeline, step, log); [ and ] show the
    step's other tabs and, in the workflows view, the graph, roles and YAML, the focus following
    when it was in the tab. The footer offers [ ] only in views with tabs."""
    from textual.widgets._footer import FooterKey

    root, ids = fixed

    def where(app) -> str:
        node = app.focused
        while node is not None and not (node.id or "").startswith(("tab-", "threads", "timeline", "log", "workflows")):
            node = node.parent
        return node.id if node is not None else "?"

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        panes = []
        for key in ("tab", "tab", "tab", "tab", "shift+tab"):
            await pilot.press(key)
            panes.append(where(app))
        await pilot.press("shift+tab")  # from the log back to the step's Output tab
        tabs = []
        for key in ("right_square_bracket", "right_square_bracket", "left_square_bracket", "left_square_bracket", "left_square_bracket"):
            await pilot.press(key)
            tabs.append((app.query_one("#step-tabs").active, where(app)))
        footers = {}
        for view in ("2", "1", "3"):
            await pilot.press(view)
            await pilot.pause(0.2)
            footers[view] = [key.key for key in app.screen.query(FooterKey)]
        await pilot.press("1", "enter", "right_square_bracket", "right_square_bracket")
        await pilot.pause(0.1)
        return panes, tabs, footers, app.query_one("#workflow-tabs").active, where(app)

    panes, tabs, footers, workflow_tab, focus = run_app(root, script, size=size)
    assert panes == ["timeline", "tab-output", "log", "threads", "log"]
    assert tabs == [("tab-body", "tab-body"), ("tab-prompt", "tab-prompt"), ("tab-body", "tab-body"), ("tab-output", "tab-output"), ("tab-files", "tab-files")]  # round: before Output is the last tab, Files
    assert "right_square_bracket" in footers["2"] and "right_square_bracket" in footers["1"]
    assert "right_square_bracket" not in footers["3"]
    assert workflow_tab == "tab-yaml" and focus == "tab-yaml"


def test_question_mark_opens_help_and_escape_closes_it(fixed):
    root, _ = fixed

    async def script(app, pilot):
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        opened = type(app.screen).__name__
        text = str(app.screen.query_one("#help-text").render())
        await pilot.press("escape")
        await pilot.pause(0.2)
        return opened, text, type(app.screen).__name__

    opened, text, after = run_app(root, script)
    assert opened == "HelpScreen" and after == "Screen"
    for key in ("s step", "r run", "f fork", "K kill", "n new", "x cancel", "/ filter", "g go to", "e edit", "q quit", "enter", "esc", "h/l tab", "[ ] tabs"):
        assert key in text, key


def test_command_palette_offers_the_actions(fixed):
    root, _ = fixed

    async def script(app, pilot):
        return [(command.title, command.help) for command in app.get_system_commands(app.screen)]

    commands = run_app(root, script)
    titles = [title for title, _ in commands]
    for title in (
        "Run one step of the selected thread",
        "Step the selected thread until it is done",
        "Fork a new thread from the selected step",
        "Kill the selected thread (asks first)",
        "Start a thread: pick a workflow, type a prompt",
        "Stop the agent running for the selected thread",
        "Open any node by its hash or a prefix",
        "Show every key, grouped by view",
        "Show the Workflows view",
        "Filter the list of the current view",
        "Quit uwf-tui (asks first while agents run)",  # ours, which asks; not Textual's quit-at-once
        "Test an agent",
        "Change the colour theme",  # Textual's own that a user wants
    ):
        assert title in titles, title
    # no movement keys, no Textual noise, no raw key names as titles; each title once
    for noise in ("Down", "Up", "Pane left", "Back", "Keys", "Maximize", "Minimize", "Quit", "Theme"):
        assert noise not in titles, noise
    assert not any("as soon as possible" in (help or "") for _, help in commands)
    assert len(titles) == len(set(titles)) and all(title[0].isupper() and " " in title for title in titles)
    # each entry's help line says something of its own: Textual's theme and screenshot lines began
    # as their titles did ("Change the…" under "Change the colour theme"), reading as two commands
    for title, help_line in commands:
        assert help_line and help_line.split()[0].lower() != title.split()[0].lower(), (title, help_line)


def test_q_quits(fixed):
    root, _ = fixed

    async def script(app, pilot):
        await pilot.press("q")
        await pilot.pause(0.2)
        return app.is_running

    assert run_app(root, script) is False


def test_an_agent_crash_is_a_notification_not_a_crash(fixed):
    root, ids = fixed
    config = Path(root.location, "config.yaml")
    config.write_text(config.read_text().replace('defaultAgent: "script"', 'defaultAgent: "false"'))

    async def script(app, pilot):
        await select_thread(app, pilot, ids["analyze"])
        await pilot.press("s")
        await settle(app, pilot, 1.0)
        notes = [n.message for n in app._notifications]
        await pilot.press("2")
        return notes, log_text(app), app.threads_view.statuses.get(ids["analyze"]), app.is_running

    notes, log, status, running = run_app(root, script)
    assert running
    assert any(note.startswith("step failed: agent 'false' exited") and len(note) <= 56 for note in notes), notes  # brief
    assert "agent 'false' exited with code 1" in log  # whole in the log
    assert status == "failed"


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_a_long_error_is_one_toast_line_above_the_log_and_wraps_in_a_dialog(fixed, tmp_path, size):
    """Toasts cover neither the thread list nor the timeline, and say a long error in one line
    (the log has it whole); a long error in a dialog wraps inside it, not cut at its edge."""
    from textual.widgets._toast import Toast

    root, ids = fixed
    config = Path(root.location, "config.yaml")
    config.write_text(config.read_text().replace('defaultAgent: "script"', 'defaultAgent: "false"'))
    workspace = str(tmp_path / ("a-rather-long-directory-name-" * 4) / "that-does-not-exist")

    async def script(app, pilot):
        await select_thread(app, pilot, ids["analyze"])
        await pilot.press("s")
        for _ in range(30):
            await pilot.pause(0.1)
            if app.screen.query(Toast) and all(toast.region.height for toast in app.screen.query(Toast)):
                break  # shown, and laid out (a toast just mounted has no region yet)
        toasts = [toast.region for toast in app.screen.query(Toast)]
        covered = [app.query_one(name).region for name in ("#thread-list-pane", "#timeline")]
        if app.has_class("-short"):  # no free corner: over the log, which has the message whole, not the step's tabs
            covered += [app.query_one("#step-tabs").region]
        await pilot.press("n")
        await pilot.pause(0.3)
        app.screen.query_one("#prompt").text = "x"
        app.screen.query_one("#workspace").value = workspace
        await pilot.press("ctrl+s")
        await pilot.pause(0.3)
        error, dialog = app.screen.query_one("#error"), app.screen.query_one(".dialog")
        buttons = [button.region for button in app.screen.query("Button")]
        return toasts, covered, error.region, dialog.region, str(error.render()), buttons

    toasts, covered, error, dialog, said, buttons = run_app(root, script, size=size, toasts=True)
    assert all(dialog.contains_region(button) for button in buttons), (dialog, buttons, error)  # the buttons are on screen
    assert toasts and all(toast.height == 1 for toast in toasts)
    assert not any(toast.overlaps(region) for toast in toasts for region in covered)
    assert "is not a directory" in said and error.height >= 2  # wrapped, so the end is there
    assert dialog.contains_region(error)


def test_no_route_error_is_shown(fixed):
    root, ids = fixed
    config = Path(root.location, "config.yaml")
    config.write_text(config.read_text().replace('defaultAgent: "script"', ""))

    async def script(app, pilot):
        await select_thread(app, pilot, ids["analyze"])
        await pilot.press("s")
        await settle(app, pilot, 0.5)
        return [n.message for n in app._notifications], app.is_running

    notes, running = run_app(root, script)
    assert running and any("no agent is configured" in note for note in notes)


def test_changes_from_another_process_appear(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        before = app.query_one("#threads").row_count
        import subprocess

        env = dict(os.environ, UWF_STORAGE_ROOT=root.location)
        out = subprocess.run(
            [sys.executable, "-m", "uwf_core.cli.main", "thread", "start", "analyze-topic", "-p", "from another terminal"],
            env=env, capture_output=True, text=True, check=True,
        ).stdout
        for _ in range(30):
            await pilot.pause(0.2)
            if app.query_one("#threads").row_count > before:
                break
        return before, app.query_one("#threads").row_count, json.loads(out)["thread"] in app.threads_view.infos

    before, after, present = run_app(root, script)
    assert after == before + 1 and present


def _analyst_is_human(root) -> None:
    config = Path(root.location, "config.yaml")
    config.write_text(config.read_text() + 'agentOverrides:\n  "analyze-topic":\n    analyst: "human"\n')


async def _open_the_form(app, pilot, thread: str) -> bool:
    """`s` on `thread`, whose next role is a person's: whether its form opened."""
    await select_thread(app, pilot, thread)
    await pilot.press("s")
    return await until(pilot, lambda: type(app.screen).__name__ == "EditorScreen", timeout=4.0)


def test_human_role_gets_a_form(fixed):
    root, ids = fixed
    _analyst_is_human(root)

    async def script(app, pilot):
        await _open_the_form(app, pilot, ids["analyze"])
        screen = type(app.screen).__name__
        app.screen.query_one("#text").text = "---\nthesis: People decide.\nkeyPoints: [one, two]\n---\nWritten by hand.\n"
        await pilot.press("ctrl+s")
        await settle(app, pilot, 0.8)
        return screen

    assert run_app(root, script) == "EditorScreen"
    from uwf_core.api import thread_steps

    (step,) = thread_steps(root, ids["analyze"])
    assert step.agent == "human" and step.output == {"thesis": "People decide.", "keyPoints": ["one", "two"]}


def test_at_80x24_the_human_form_shows_the_prompt_s_lines_and_a_declined_form_reads_stopped(fixed):
    """At 80x24 the form showed 3 lines of a 93-line prompt, and the declined attempt's row read
    `killed: …` (runs.jsonl's word for any stopped attempt): now the prompt has half the screen,
    and the row reads `stopped`, its error saying the answer was cancelled."""
    root, ids = fixed
    _analyst_is_human(root)

    async def script(app, pilot):
        assert await _open_the_form(app, pilot, ids["analyze"])
        await pilot.pause(0.3)
        context = app.screen.query_one(".context")
        lines = context.size.height
        await pilot.press("escape")
        await settle(app, pilot, 0.5)
        timeline = app.query_one("#timeline")
        rows = [" ".join(str(cell) for cell in timeline.get_row(key.value)) for key in timeline.rows if str(key.value).startswith("attempt:")]
        return lines, rows

    lines, rows = run_app(root, script, size=(80, 24))
    assert lines >= 8, lines
    assert rows and "stopped: the human answer for role 'analyst' was cancelled" in rows[-1] and "killed" not in rows[-1], rows


def test_the_human_form_refuses_the_untouched_template(fixed):
    root, ids = fixed
    _analyst_is_human(root)

    async def script(app, pilot):
        await _open_the_form(app, pilot, ids["analyze"])
        await pilot.press("ctrl+s")  # save the template as it is
        await pilot.pause(0.3)
        still = type(app.screen).__name__
        error = str(app.screen.query_one("#error").render())
        await pilot.press("escape")
        await settle(app, pilot, 0.5)
        await settle(app, pilot)
        return still, error, log_text(app), app.threads_view.statuses[ids["analyze"]]

    still, error, log, status = run_app(root, script)
    assert still == "EditorScreen" and "still the template" in error
    assert "cancelled" in log and "✗" not in log  # escape cancels; the step is not called a failure
    assert status == "cancelled"
    assert not thread_info(root, ids["analyze"]).done


def test_uwf_tui_refuses_a_root_that_is_a_file_in_one_line(tmp_path):
    import subprocess
    import sys

    file = tmp_path / "not-a-dir"
    file.write_text("x")
    done = subprocess.run([sys.executable, "-m", "uwf_tui", "--root", str(file)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"uwf-tui: error: the root {file} is a file, not a directory (give a directory with --root or UWF_STORAGE_ROOT)"]


@pytest.mark.parametrize("kind", ["loop", "dangling"])
def test_a_root_that_is_a_symbolic_link_to_nowhere_says_so_in_one_line(tmp_path, kind):
    """A link loop, or a link to a directory that is gone: said as such by uwf-tui and uwf (it
    used to read "is a file")."""
    import subprocess

    link = tmp_path / "root"
    if kind == "loop":
        os.symlink(tmp_path / "other", link)
        os.symlink(link, tmp_path / "other")
        said = f"the root {link} is a symbolic link that loops back on itself"
    else:
        os.symlink(tmp_path / "gone", link)
        said = f"the root {link} is a symbolic link to {tmp_path / 'gone'}, which does not exist"
    for command in ([sys.executable, "-m", "uwf_tui"], [sys.executable, "-m", "uwf_core.cli.main", "thread", "list"]):
        done = subprocess.run([*command, "--root", str(link)], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        assert done.returncode == 1
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and said in lines[0], done.stderr


@pytest.mark.parametrize(
    ("root", "said"),
    [
        ("/etc/passwd/sub", "the root /etc/passwd/sub cannot be created: /etc/passwd is a file, not a directory"),
        ("/proc/newroot", "the root /proc/newroot cannot be created in /proc: "),
    ],
)
def test_uwf_tui_refuses_a_root_it_cannot_create_in_one_line(root, said):
    """A path under a file, or where no directory can be made, is a start-up error, not a
    damage banner or an empty root."""
    import subprocess

    top = "/" + root.split("/")[1]
    if not os.path.exists(top):
        pytest.skip(f"no {top} here")
    done = subprocess.run([sys.executable, "-m", "uwf_tui", "--root", root], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"uwf-tui: error: {said}"), line


def test_enter_opens_a_node_in_the_cas_tree(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await pilot.press("3")
        await settle(app, pilot)
        tree = app.query_one("#cas-tree")
        tree.focus()
        head = thread_info(root, ids["solve"]).head
        node = next(child for child in tree.root.children[0].children if child.data == head)
        tree.move_cursor(node)
        await pilot.pause(0.2)
        await pilot.press("enter")
        await settle(app, pilot)
        from uwf_tui.widgets.cas_view import CasView

        return node.is_expanded, [child.data for child in node.children], app.query_one(CasView).shown

    expanded, children, shown = run_app(root, script)
    head = thread_info(root, ids["solve"]).head
    assert expanded and children == root.nodes.refs(head)
    assert shown == head


def test_a_step_a_worker_runs_names_the_worker(fixed):
    """A thread a `uwf worker` is stepping (on any host) says which worker, in its title and its
    running row: its step lock names it."""
    root, ids = fixed
    with root.locks.acquire(ids["analyze"]) as lease:  # as the worker's step holds it
        lease.update(worker="gpu-box-2", role="analyst", agent="script")

        async def script(app, pilot):
            await select_thread(app, pilot, ids["analyze"])
            await settle(app, pilot, 0.5)
            table = app.query_one("#timeline")
            rows = [str(table.get_row_at(i)[-1]) for i in range(table.row_count)]
            return str(app.query_one("#thread-title").render()), rows

        title, rows = run_app(root, script)
    assert "running on worker gpu-box-2" in title
    assert any("running in another process: worker gpu-box-2, pid" in row for row in rows), rows


def test_x_on_a_step_started_elsewhere_says_so(fixed, tmp_path):
    """A step run by `uwf thread step` in another terminal: the row says so, and x explains
    what it can and cannot do instead of claiming to cancel."""
    import os
    import subprocess
    import sys

    root, ids = fixed
    slow = tmp_path / "slow.sh"
    slow.write_text("#!/bin/sh\necho working >&2\nsleep 60 # tui-elsewhere-marker\n")
    slow.chmod(0o755)
    env = dict(os.environ, UWF_STORAGE_ROOT=root.location)
    uwf = os.path.join(os.path.dirname(sys.executable), "uwf")
    step = subprocess.Popen([uwf, "thread", "step", ids["analyze"], "--agent", str(slow)], env=env, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(100):
            if root.locks.running(ids["analyze"]) is not None and root.locks.running(ids["analyze"]).pgid:
                break
            import time

            time.sleep(0.1)

        async def script(app, pilot):
            await select_thread(app, pilot, ids["analyze"])
            await settle(app, pilot, 0.5)
            rows = [str(app.query_one("#timeline").get_row_at(i)[-1]) for i in range(app.query_one("#timeline").row_count)]
            await pilot.press("x")
            await pilot.pause(0.3)
            return rows, [n.message for n in app._notifications]

        rows, notes = run_app(root, script)
    finally:
        running = root.locks.running(ids["analyze"])
        step.kill()
        step.wait()
        if running is not None and running.pgid:  # the agent has its own process group
            import signal

            try:
                os.killpg(running.pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert any("running in another process" in row for row in rows)
    assert any("started by another process" in note for note in notes)


def test_views_stay_current_cas_tree_follows_new_threads_and_ages_advance(fixed, monkeypatch):
    import uwf_tui.widgets.thread_list as thread_list_module
    from uwf_core.api import start_thread

    monkeypatch.setattr(thread_list_module, "AGE_SECONDS", 0.3)
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        info = start_thread(root, "analyze-topic", "started by someone else")  # as `uwf` in another terminal would
        for _ in range(20):
            await pilot.pause(0.2)
            if info.thread in app.threads_view.infos:
                break
        await settle(app, pilot)
        table = app.query_one("#threads")
        first = str(table.get_row(info.thread)[4])  # "updated"
        await until(pilot, lambda: str(table.get_row(info.thread)[4]) != first)
        later = str(table.get_row(info.thread)[4])
        hidden = [child.data for child in app.query_one("#cas-tree").root.children[0].children]
        await pilot.press("3")
        await pilot.pause(0.1)
        heads = [child.data for child in app.query_one("#cas-tree").root.children[0].children]
        return info.head, first, later, heads, hidden

    head, first, later, heads, hidden = run_app(root, script)
    assert head in heads  # the CAS tree shows the new thread without a restart, once it is shown
    assert head not in hidden  # not read while hidden: a stepping thread changes the root many times a second
    assert first.endswith("s ago") and later.endswith("s ago") and later != first


def test_views_follow_a_head_moved_by_the_cli(fixed):
    """`uwf thread step` in another terminal: the list's step count, the timeline and the CAS
    tree's head follow without a restart."""
    import subprocess

    root, ids = fixed
    thread = ids["analyze"]

    async def script(app, pilot):
        await select_thread(app, pilot, thread)
        env = dict(os.environ, UWF_STORAGE_ROOT=root.location)
        uwf = os.path.join(os.path.dirname(sys.executable), "uwf")
        moved = json.loads(subprocess.run([uwf, "thread", "step", thread], env=env, capture_output=True, text=True, check=True).stdout)
        table = app.query_one("#timeline")
        for _ in range(30):
            await pilot.pause(0.2)
            if any(key.value.startswith("step:") for key in table.rows):
                break
        await settle(app, pilot)
        steps = [key.value for key in table.rows if key.value.startswith("step:")]
        count = str(app.query_one("#threads").get_row(thread)[3])
        await pilot.press("3")  # the CAS tree is read again when it is shown
        await pilot.pause(0.1)
        heads = [child.data for child in app.query_one("#cas-tree").root.children[0].children]
        return moved["head"], steps, count, heads

    head, steps, count, heads = run_app(root, script)
    assert steps == [f"step:{head}"] and count == "1"
    assert head in heads


def test_the_palette_tests_an_agent_and_reports_the_result(fixed, tmp_path):
    """ctrl+p → "Test an agent" → pick one: a scratch step runs, a toast says how it went,
    and the root is as it was."""
    from conftest import snapshot_tree

    from uwf_core.config.agents import add_agent, new_agent

    root, ids = fixed
    broken = new_agent("broken", ["sh", "-c", "echo cannot reach the model >&2; exit 3"])
    root.save_config(add_agent(root.config, broken))
    before = snapshot_tree(Path(root.location))

    async def script(app, pilot):
        await settle(app, pilot)
        app.action_test_agent()
        await pilot.pause(0.3)
        options = app.screen.query_one("#choices")
        labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        index = next(i for i, label in enumerate(labels) if label.startswith("broken"))
        options.highlighted = index
        await pilot.press("enter")
        for _ in range(50):
            await pilot.pause(0.1)
            if any("failed" in (n.title or "") for n in app._notifications):
                break
        # an agent without a sandbox: the test's warning reaches the log too (run here, it would make
        # the test process every orphan's parent, so its result is posted as the worker would)
        from uwf_core.api import AgentCheck
        from uwf_tui.messages import AgentChecked

        app.post_message(AgentChecked(AgentCheck("open", True, 0.1, answer="pong", containment="process-group",
                                                 warning="agent 'open' runs without a sandbox (sandbox: false)")))
        await pilot.pause(0.3)
        return labels, [(n.title, n.message) for n in app._notifications], " ".join(log_text(app).split())

    labels, notes, log = run_app(root, script)
    assert any(label.startswith("script") for label in labels) and not any(label.startswith("human") for label in labels)
    assert [title for title, _ in notes if title == "agent 'broken' failed"]
    assert "agent 'broken' failed:" in log and "exited with code 3" in log and "stderr: cannot reach the model" in log
    assert "runs without a sandbox (sandbox: false)" in log  # said, as on the CLI
    assert snapshot_tree(Path(root.location)) == before


def test_enter_goes_in_and_escape_comes_back_out(fixed):
    """Enter on a thread focuses its timeline, Enter on a step its detail pane; Esc walks back;
    h/l move between the panes; j/k scroll the focused detail."""
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        await select_thread(app, pilot, ids["solve"])
        seen = []
        await pilot.press("enter")
        await pilot.pause(0.2)
        seen.append(app.focused.id)
        await pilot.press("k", "enter")  # a step row (the cursor starts on the last one)
        await pilot.pause(0.2)
        seen.append(app.focused.parent.id)  # the Output tab's scroll
        await pilot.press("j", "escape")
        await pilot.pause(0.1)
        seen.append(app.focused.id)
        await pilot.press("escape")
        await pilot.pause(0.1)
        seen.append(app.focused.id)
        await pilot.press("l", "l")
        await pilot.pause(0.1)
        seen.append(app.focused.parent.id)
        await pilot.press("h", "h", "h")
        await pilot.pause(0.1)
        seen.append(app.focused.id)
        return seen

    assert run_app(root, script) == ["timeline", "tab-output", "timeline", "threads", "tab-output", "threads"]


def test_enter_k_enter_in_one_burst_opens_the_step_above(fixed):
    from textual import events

    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["solve"])
        for key in ("enter", "k", "enter"):  # queued before any is handled
            app.post_message(events.Key(key, "\r" if key == "enter" else key))
        await settle(app, pilot)
        return app.focused.parent.id, app.threads_view.selected_step

    assert run_app(root, script) == ("tab-output", f"step:{ids['solve_steps'][-2]}")


def test_a_burst_into_another_threads_timeline_waits_for_its_rows(fixed):
    """`j … enter k enter` from another thread: k moves up from the new thread's newest step
    (its rows were still on their way when k was typed), and the Enter after it opens that step."""
    from textual import events

    root, ids = fixed

    async def script(app, pilot):
        await select_thread(app, pilot, ids["analyze"])
        await settle(app, pilot)
        table = app.query_one("#threads")
        delta = table.get_row_index(ids["solve"]) - table.get_row_index(ids["analyze"])
        moves = ["j"] * delta if delta > 0 else ["k"] * -delta
        for key in (*moves, "enter", "k", "enter"):  # queued before any is handled
            app.post_message(events.Key(key, "\r" if key == "enter" else key))
        await settle(app, pilot, 0.8)
        return app.threads_view.timeline.info.thread, app.focused.parent.id, app.threads_view.selected_step

    assert run_app(root, script) == (ids["solve"], "tab-output", f"step:{ids['solve_steps'][-2]}")


def test_a_filter_that_hides_the_selected_thread_shows_the_one_under_the_cursor(fixed):
    root, ids = fixed
    prompt = "Bug report: the app crashes"  # triage-bug's prompt: only that thread matches

    async def script(app, pilot):
        await select_thread(app, pilot, ids["analyze"])
        await settle(app, pilot)
        await pilot.press("slash", *prompt, "enter")
        await settle(app, pilot, 0.6)
        title = str(app.query_one("#thread-title").render())
        return app.threads_view.current_thread(), app.threads_view.timeline.info.thread, ids["triage"] in title

    assert run_app(root, script) == (ids["triage"], ids["triage"], True)


def test_enter_on_a_fork_row_opens_the_fork(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        await select_thread(app, pilot, ids["solve"])
        table = app.query_one("#timeline")
        fork_row = table.get_row_index(f"branch:{ids['fork']}")
        table.focus()
        table.move_cursor(row=fork_row)
        await pilot.pause(0.1)
        await pilot.press("enter")
        await settle(app, pilot)
        return app.threads_view.selected_thread, app.threads_view.current_thread(), app.focused.id

    assert run_app(root, script) == (ids["fork"], ids["fork"], "timeline")


@pytest.mark.parametrize("key", ["s", "r", "K"])
def test_a_key_after_a_jump_in_a_burst_acts_on_where_the_burst_ends(fixed, key, monkeypatch):
    """`Enter k Enter s` sent at once from a fork row: Enter opens the fork, whose rows are slow
    to come; `k Enter` wait for them, then move onto the row of the thread the fork left and open
    it. `s` waits behind them and acts on that thread, where the keys end — done, so it says so —
    not on the fork the keys passed through (it used to step the fork)."""
    import time

    import uwf_tui.widgets.threads_view as threads_view_module

    root, ids = fixed
    acted = []
    said = []
    slow = threads_view_module.thread_timeline

    def slow_timeline(*args, **kwargs):
        time.sleep(0.4)  # a long thread, a busy machine: the keys arrive before the rows
        return slow(*args, **kwargs)

    async def script(app, pilot):
        app._start = lambda thread, run: acted.append(thread)
        app.commands.kill = lambda thread: acted.append(thread)
        app.notify = lambda message, **_: said.append(message)
        await settle(app, pilot)
        await select_thread(app, pilot, ids["solve"])
        table = app.query_one("#timeline")
        table.focus()
        table.move_cursor(row=table.get_row_index(f"branch:{ids['fork']}"))
        await pilot.pause(0.1)
        monkeypatch.setattr(threads_view_module, "thread_timeline", slow_timeline)
        await pilot.press("enter", "k", "enter", key)  # one burst
        await settle(app, pilot, 1.5)
        return app.threads_view.current_thread()

    final = run_app(root, script)
    assert final == ids["solve"]  # the row above the fork's own step is the thread it left
    assert acted == []  # not the fork; and solve is done
    if key in ("s", "r"):
        assert any("is done: nothing to" in message for message in said), said


def test_backspace_in_a_burst_edits_where_it_was_typed(fixed):
    """Textual runs an Input's backspace as a binding, after the event has bubbled up to the app,
    so the keys typed after it used to land first (`x backspace w` gave `x`, not `w`)."""
    from textual import events

    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        await pilot.press("slash")
        await pilot.pause(0.2)
        for key in ("S", "l", "o", "x", "backspace", "w", "left", "left", "backspace", "a"):  # one burst
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await settle(app, pilot)
        typed = app.query_one("#thread-filter").value
        await pilot.press("escape", "escape")  # the filter cleared
        await select_thread(app, pilot, ids["solve"])
        await settle(app, pilot)
        await pilot.press("e")  # the edit dialog on the newest step: its text area too
        await settle(app, pilot)
        area = app.screen.query_one("#text")
        before = area.text
        area.move_cursor(area.document.end)
        for key in ("x", "backspace", "backspace", "Q"):
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await settle(app, pilot)
        return typed, before, area.text

    typed, before, after = run_app(root, script)
    assert typed == "Saow"
    assert after == before[:-1] + "Q"


def test_escape_clears_the_filter(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        await pilot.press("slash", *"triage")
        await pilot.pause(0.3)
        filtered = app.query_one("#threads").row_count
        await pilot.press("escape")
        await pilot.pause(0.3)
        return filtered, app.query_one("#threads").row_count, app.query_one("#thread-filter").has_class("hidden")

    filtered, after, hidden = run_app(root, script)
    assert filtered == 1 and after > 1 and hidden


def test_a_running_step_shows_a_spinner_and_its_elapsed_time(fixed, tmp_path):
    root, ids = fixed
    _slow_default_agent(root, tmp_path, "tui-spinner-marker")

    async def script(app, pilot):
        await _step_until_working(app, pilot, ids["analyze"])
        table = app.query_one("#timeline")
        for _ in range(30):  # the lock file's change reloads the timeline with the running row
            await pilot.pause(0.1)
            if "running:" in table.rows:
                break
        frames, took = set(), []
        for _ in range(3):
            await pilot.pause(1.05)
            row = table.get_row("running:")
            frames.add(str(row[0]))
            took.append(str(row[4]))
        header = app.sub_title
        app.action_cancel()
        for _ in range(40):
            await pilot.pause(0.25)
            if not app.running:
                break
        await pilot.pause(1.1)
        return frames, took, header, app.sub_title

    frames, took, header, after = run_app(root, script)
    assert len(frames) >= 2  # the spinner turns
    assert took[-1].endswith("s") and took[-1] != took[0]  # the elapsed time grows
    assert "1 agent running · " in header
    assert after == root.location  # back to the root once it ended


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_every_view_fits_the_terminal(fixed, size):
    """At 80x24 the panes stack and the step's output still has rows; the footer always shows
    `?` and `q` and no more than the keys that apply; the help fits on one screen."""
    from textual.widgets._footer import FooterKey

    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        await select_thread(app, pilot, ids["solve"])
        output_rows = app.query_one("#step-output").parent.size.height
        footer = [key.key for key in app.screen.query(FooterKey)]
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        dialog = app.screen.query_one(".dialog")
        fits = dialog.region.bottom <= size[1] and dialog.region.right <= size[0]
        return app.has_class("-narrow"), output_rows, footer, fits

    narrow, output_rows, footer, fits = run_app(root, script, size=size)
    assert narrow == (size[0] < 110)
    assert output_rows >= 3
    assert "question_mark" in footer and "q" in footer and len(footer) <= 9
    assert fits


def test_an_empty_root_says_what_to_do_next(tmp_path):
    from uwf_core.api import Repo

    empty = Repo.open(str(tmp_path / "empty"))

    async def script(app, pilot):
        await settle(app, pilot)
        return str(app.query_one("#step-output").render())

    text = run_app(empty, script, size=(80, 24))
    assert "No threads yet" in text and "uwf-tui --demo" in text and "uwf setup" in text


def test_the_graph_scrolls_sideways_and_colours_each_edge_with_its_label(fixed):
    """A graph wider than its pane (triage-bug at 60 columns) scrolls instead of being clipped; each
    labelled edge's label and lines share a colour of their own."""
    from uwf_core.api import load_workflow
    from uwf_tui.widgets.graph_layout import render_graph_rich

    root, _ = fixed
    drawing = render_graph_rich(load_workflow(root, "triage-bug"))
    label_colours = {str(span.style) for span in drawing.spans if str(span.style).startswith("bold ") and "cyan" not in str(span.style) and "magenta" not in str(span.style) and "white" not in str(span.style)}
    assert len(label_colours) >= 3  # several labelled edges, several colours

    async def script(app, pilot):
        await pilot.press("1")
        await pilot.pause(0.2)
        table = app.query_one("#workflows")
        table.move_cursor(row=table.get_row_index("triage-bug"))
        await pilot.pause(0.4)
        scroll = app.query_one("#graph-scroll")
        graph = app.query_one("#graph")
        return scroll.size.width, graph.size.width, scroll.max_scroll_x

    view_width, graph_width, max_scroll = run_app(root, script, size=(60, 24))
    assert graph_width > view_width and max_scroll > 0


def test_home_and_end_go_to_the_first_and_last_row(fixed):
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        table = app.query_one("#threads")
        seen = []
        await pilot.press("end")
        seen.append(table.cursor_row == table.row_count - 1)
        await pilot.press("home")
        seen.append(table.cursor_row == 0)
        await pilot.press("3", "end")
        tree = app.query_one("#cas-tree")
        seen.append(tree.cursor_line == tree.last_line)
        await pilot.press("home")
        seen.append(tree.cursor_line == 0)
        await pilot.press("2", "slash", *"solve", "home")  # in the filter box, home is the text's
        box = app.query_one("#thread-filter")
        seen.append(box.cursor_position == 0 and box.value == "solve")
        return seen

    assert run_app(root, script) == [True] * 5


def test_each_key_of_a_burst_acts_enter_then_j_scrolls_the_graph(fixed):
    from textual import events

    from uwf_tui.widgets.workflows_view import WorkflowsView

    root, _ = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        scroll = app.query_one("#graph-scroll")
        # One burst from the threads view: to the workflows, the last one (triage-bug), into its
        # graph, five lines down; each key acts where the keys before it left the focus.
        for key in ("1", "end", "enter", "j", "j", "j", "j", "j"):
            app.post_message(events.Key(key, "\r" if key == "enter" else key))
        await until(pilot, lambda: scroll.scroll_y >= 5)
        await pilot.pause(0.2)  # and no key left over to scroll further
        assert app.query_one(WorkflowsView).selected == "triage-bug"
        down = scroll.scroll_y
        for _ in range(2):
            app.post_message(events.Key("k", "k"))
        await until(pilot, lambda: scroll.scroll_y <= 3)
        await pilot.pause(0.2)
        return app.focused is scroll, down, scroll.scroll_y

    focused, down, up = run_app(root, script, size=(80, 24))
    assert focused and down == 5 and up == 3


@pytest.mark.parametrize(("view", "table", "needle"), [("1", "#workflows", "triage"), ("3", "#cas-tree", "triage")])
def test_slash_filters_the_list_of_the_current_view(fixed, view, table, needle):
    root, ids = fixed

    def count(app) -> int:
        widget = app.query_one(table)
        if table == "#cas-tree":
            return sum(len(branch.children) for branch in widget.root.children[:2])
        return widget.row_count

    async def script(app, pilot):
        await settle(app, pilot)
        await pilot.press(view)
        await pilot.pause(0.3)
        before = count(app)
        await pilot.press("slash", *needle)
        await pilot.pause(0.4)
        filtered = count(app)
        still = app.current_view
        await pilot.press("escape")
        await pilot.pause(0.4)
        return before, filtered, count(app), still

    before, filtered, after, still = run_app(root, script)
    assert filtered < before and filtered >= 1 and after == before
    assert still == {"1": "workflows", "3": "cas"}[view]  # it filtered here, not in the threads view


def test_a_long_thread_shows_its_newest_steps_and_more_on_enter(fixed, monkeypatch):
    """Only the newest timeline.WINDOW steps become rows (a 10,000-step thread stays quick);
    Enter on the row above them shows more, and the cursor lands on the oldest one shown."""
    import uwf_tui.widgets.timeline as timeline_module

    monkeypatch.setattr(timeline_module, "WINDOW", 2)
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        await select_thread(app, pilot, ids["solve"])
        table = app.query_one("#timeline")
        first = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        table.focus()
        table.move_cursor(row=table.get_row_index("more:"))
        await pilot.press("enter")
        await settle(app, pilot)
        second = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        cursor = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        return first, second, cursor

    first, second, cursor = run_app(root, script)
    assert [n for n in first if n.isdigit()] == ["4", "5"] and "…" in first
    assert [n for n in second if n.isdigit()] == ["2", "3", "4", "5"]
    assert cursor == f"step:{ids['solve_steps'][1]}"


def test_the_title_shows_a_root_under_home_as_tilde(monkeypatch, tmp_path):
    from uwf_tui.formatting import root_title

    monkeypatch.setenv("HOME", str(tmp_path))
    assert root_title(str(tmp_path / ".uwf-demo")) == "~/.uwf-demo"
    assert root_title(str(tmp_path) + "-other/x") == str(tmp_path) + "-other/x"  # a sibling, not under it
    assert root_title("postgresql://me:***@db/uwf") == "postgresql://me:***@db/uwf"


def test_a_thread_stepped_under_the_filter_stays_in_the_list(fixed):
    """The filter reads a thread's prompt, which a new head's chain was not yet read for: the
    stepped thread left the list ("No thread matches") and the next `s` had nothing to step."""
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        await pilot.press("slash", *"content-addressed", "enter")
        await until(pilot, lambda: app.query_one("#threads").row_count == 1)
        await pilot.press("s")
        await until(pilot, lambda: "✓ analyst" in log_text(app))
        await settle(app, pilot, 0.6)
        return list(app.query_one("#threads").rows), app.threads_view.thread_list.sort_by, [str(c.label) for c in app.query_one("#threads").columns.values()]

    rows, sort_by, labels = run_app(root, script, size=(80, 24))
    assert [row.value for row in rows] == [ids["analyze"]]
    assert sort_by is None and [label for label in labels if "▼" in label or "▲" in label] == ["id ▼"]  # the order it had


def test_the_same_message_toasts_once_while_it_shows(fixed):
    """A burst of `s` on a running thread: "already running" once on screen (a stack of them
    covered the timeline at 80x24), every time in the log."""
    root, ids = fixed

    async def script(app, pilot):
        for _ in range(4):
            app.notify("thread X is already running here (x cancels it)")
        app.notify("something else")
        await pilot.pause(0.1)
        return len(app._notifications), log_text(app).count("already running here")

    toasts, logged = run_app(root, script, size=(80, 24))
    assert toasts == 2 and logged == 4
