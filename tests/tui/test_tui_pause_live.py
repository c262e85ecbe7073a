"""The workbench's keys for the seeds' pause and live (issue 42): space pauses the selected thread
(s and r then say why they do nothing) and unpauses it; L follows steps another process runs,
their agent's lines in the log as they come."""

from __future__ import annotations

import os
import subprocess
import sys

from test_tui import log_text, run_app, select_thread, settle, until

from uwf_core.api import thread_info

TALKER = "#!/bin/sh\nfor n in 1 2 3; do echo \"elsewhere says $n\" >&2; sleep 0.3; done\nexec {script} \"$UWF_THREAD\" \"$UWF_ROLE\"\n"  # then the canned answer


def test_space_pauses_and_unpauses_and_s_says_why_while_paused(fixed):
    root, ids = fixed
    thread = ids["analyze"]

    async def script(app, pilot):
        await select_thread(app, pilot, thread)
        await pilot.press("space")
        await settle(app, pilot)
        paused = (app.threads_view.statuses.get(thread), dict(root.threads.paused()))
        await pilot.press("s")
        await settle(app, pilot)
        said = log_text(app)
        steps_before = len(root.runs.read(thread))
        await pilot.press("space")
        await settle(app, pilot)
        return paused, said, steps_before, app.threads_view.statuses.get(thread), root.threads.paused()

    (status, paused), said, attempts, after, still = run_app(root, script)
    assert status == "paused" and thread in paused
    assert "‖ paused" in said and "is paused: space unpauses it" in said
    assert attempts == len(root.runs.read(thread))  # s started nothing
    assert after != "paused" and still == {}


def test_l_follows_a_step_another_process_runs(fixed, tmp_path):
    root, ids = fixed
    thread = ids["analyze"]
    agent = tmp_path / "talker.sh"
    agent.write_text(TALKER.format(script=os.path.join(os.path.dirname(sys.executable), "uwf-script")))
    agent.chmod(0o755)
    uwf = os.path.join(os.path.dirname(sys.executable), "uwf")
    env = dict(os.environ, UWF_STORAGE_ROOT=root.location)

    async def script(app, pilot):
        await select_thread(app, pilot, thread)
        await pilot.press("L")
        await settle(app, pilot)
        following = thread in app.followers
        step = subprocess.Popen([uwf, "thread", "step", thread, "--agent", str(agent)], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            seen = await until(pilot, lambda: "elsewhere says 3" in log_text(app) and "✓ " in log_text(app), timeout=30)
        finally:
            step.wait(timeout=60)
        text = log_text(app)
        await pilot.press("L")
        await settle(app, pilot)
        return following, seen, text, thread in app.followers

    following, seen, text, still = run_app(root, script)
    assert following and seen, text
    head = thread_info(root, thread).head
    flat = text.replace("\n", "")  # the log wraps long lines
    assert "is running (another process)" in flat and f"✓ analyst (uwf-script) → {head}" in flat
    assert "■ thread ended (done); no longer following" in flat and not still  # its end ends the following


def test_a_reload_in_the_middle_of_a_burst_keeps_the_cursor_where_the_keys_left_it(fixed):
    """`Home space s` with a reload landing between Home and its highlight event: space and s act
    on the thread Home went to (a reload used to put the cursor back on the last highlighted one)."""
    root, ids = fixed
    from uwf_core.api import start_thread

    async def script(app, pilot):
        table = app.query_one("#threads")
        await select_thread(app, pilot, list(table.rows)[1].value)
        before = app.threads_view.selected_thread
        start_thread(root, "solve-issue", "a new thread, listed first")  # another process's, say
        table.move_cursor(row=0)  # Home, its highlight event not handled yet
        moved_to = app.threads_view.current_thread()
        app.threads_view.reload()  # the poll's reload lands first
        return before, moved_to, app.threads_view.current_thread()

    before, moved_to, after = run_app(root, script)
    assert moved_to != before and after == moved_to
