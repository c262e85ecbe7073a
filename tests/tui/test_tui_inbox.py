"""The Inbox view (issue 28): every thread waiting for a person, live, answered in the role's
form. Through Pilot on the fixed demo root, whose analyze-topic threads are made a person's
(agentOverrides: analyst is `human`), and in a real terminal with a `uwf worker` on the root."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_tui import log_text, run_app, settle, until
from textual import events
from tmux_pane import open_session, send_keys, wait_for_screen

from uwf_core.api import answer_thread, inbox, queue_thread, start_thread, thread_info, thread_steps

ANSWER = "---\nthesis: People decide.\nkeyPoints: [one, two]\n---\nWritten in the inbox.\n"
SIZES = [(80, 24), (160, 48)]


@pytest.fixture
def asking(fixed):
    """The fixed root, its analyze-topic thread waiting for a person."""
    root, ids = fixed
    config = Path(root.location, "config.yaml")
    config.write_text(config.read_text() + 'agentOverrides:\n  "analyze-topic":\n    analyst: "human"\n')
    root.reload_config()
    return root, ids


def burst(app, *keys: str) -> None:
    """Keys as a fast typist sends them: all queued before the first is handled."""
    for key in keys:
        app.post_message(events.Key(key, "\r" if key == "enter" else key))


def rows(app) -> list[str]:
    table = app.query_one("#inbox")
    return [str(row.value) for row in table.rows]


def tab_label(app) -> str:
    return str(app.query_one("#views").get_tab("pane-inbox").label)


def question(app) -> str:
    return str(app.query_one("#inbox-question").render())


def is_form(app) -> bool:
    return type(app.screen).__name__ == "EditorScreen"


async def open_inbox(app, pilot, count: int) -> None:
    await pilot.press("i")
    assert await until(pilot, lambda: len(rows(app)) == count), rows(app)
    await pilot.pause(0.1)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_the_inbox_lists_a_waiting_thread_with_its_question(asking, size):
    root, ids = asking

    async def script(app, pilot):
        await open_inbox(app, pilot, 1)
        return app.current_view, rows(app), tab_label(app), question(app), app.focused.id

    view, listed, label, text, focused = run_app(root, script, size=size)
    assert view == "inbox" and focused == "inbox"
    assert listed == [ids["analyze"]] and label == "i Inbox (1)"
    assert "analyst of analyze-topic" in text and ids["analyze"] in text
    assert "not queued: once answered, step it with s" in text
    assert "Why content-addressed storage suits agent workflows." in text  # the prompt, whole, below


def test_an_empty_inbox_says_nobody_is_asked_and_how_a_thread_gets_there(fixed):
    root, _ = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        await pilot.press("i")
        await pilot.pause(0.2)
        return rows(app), tab_label(app), question(app)

    listed, label, text = run_app(root, script, size=(80, 24))
    assert listed == [] and label == "i Inbox"
    assert text.startswith("Nobody is asked anything.") and "human" in text


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_i_is_in_the_footer_where_there_is_room_and_in_the_palette(asking, size):
    """The footer offers `i` while someone is asked something, where it fits (at 80 columns the
    Threads view's keys, ? and q fill it; the tab's title says "i Inbox (1)"); the palette has it."""
    root, _ = asking

    async def script(app, pilot):
        await settle(app, pilot)
        footer = [key.key for key in app.query("FooterKey")]
        titles = [command.title for command in app.get_system_commands(app.screen)]
        await app.press_binding("i")  # what the palette's command does
        await until(pilot, lambda: "a" in [key.key for key in app.query("FooterKey")])  # a loaded machine draws it late
        in_inbox = [key.key for key in app.query("FooterKey")]
        return footer, titles, app.current_view, in_inbox

    footer, titles, view, in_inbox = run_app(root, script, size=size)
    assert ("i" in footer) == (size[0] >= 110) and "q" in footer and "question_mark" in footer
    assert "Show the Inbox: every thread waiting for a person, to answer" in titles
    assert "Answer the thread selected in the Inbox (its role's form, prefilled)" in titles
    assert view == "inbox" and "a" in in_inbox and "i" not in in_inbox


def test_the_inbox_updates_when_another_thread_starts_waiting_and_keeps_the_cursor(asking):
    """A thread started in another process while the inbox is open comes in (the root is polled);
    when the one before the cursor is answered elsewhere, the cursor stays on its own thread."""
    root, ids = asking
    started = {}

    async def script(app, pilot):
        await open_inbox(app, pilot, 1)
        started["second"] = start_thread(root, "analyze-topic", "A second question for a person.").thread
        assert await until(pilot, lambda: len(rows(app)) == 2), rows(app)
        label = tab_label(app)
        await pilot.press("j")  # onto the second
        answer_thread(root, ids["analyze"], ANSWER)  # the first, answered elsewhere
        assert await until(pilot, lambda: rows(app) == [started["second"]]), rows(app)
        await pilot.pause(0.2)
        return label, app.inbox_view.selected().thread, tab_label(app)

    label, selected, after = run_app(root, script, size=(80, 24))
    assert label == "i Inbox (2)" and after == "i Inbox (1)"
    assert selected == started["second"]


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_answering_through_the_form_moves_the_head_and_the_item_goes(asking, size):
    root, ids = asking
    head = thread_info(root, ids["analyze"]).head

    async def script(app, pilot):
        await open_inbox(app, pilot, 1)
        await pilot.press("enter")
        assert await until(pilot, lambda: is_form(app))
        form = app.screen
        template = form.query_one("#text").text
        prompt = str(form.query_one(".context Static").render())
        form.query_one("#text").text = ANSWER
        await pilot.press("ctrl+s")
        assert await until(pilot, lambda: not rows(app)), rows(app)
        await settle(app, pilot)
        return template, prompt, tab_label(app), log_text(app)

    template, prompt, label, log = run_app(root, script, size=size)
    assert template.startswith("---\nthesis: '...'\nkeyPoints:\n- '...'\n")  # the role's frontmatter, to fill in
    assert "Why content-addressed storage suits agent workflows." in prompt
    info = thread_info(root, ids["analyze"])
    assert info.head != head
    (step,) = thread_steps(root, ids["analyze"])
    assert step.agent == "human" and step.output == {"thesis": "People decide.", "keyPoints": ["one", "two"]}
    assert label == "i Inbox"
    assert f"answered {ids['analyze'][:10]}'s analyst;" in log


def test_a_queued_thread_answered_says_a_worker_takes_it_up(asking):
    root, ids = asking
    queue_thread(root, ids["analyze"])

    async def script(app, pilot):
        await open_inbox(app, pilot, 1)
        cells = [str(cell) for cell in app.query_one("#inbox").get_row(ids["analyze"])]
        await pilot.press("a")  # a, as enter
        assert await until(pilot, lambda: is_form(app))
        app.screen.query_one("#text").text = ANSWER
        await pilot.press("ctrl+s")
        assert await until(pilot, lambda: not rows(app))
        await settle(app, pilot)
        return cells, log_text(app)

    cells, log = run_app(root, script)
    assert "⋯ queued" in cells
    assert f"answered {ids['analyze'][:10]}'s analyst; the thread is done" in log  # its only role: the thread ended


def test_a_bad_answer_shows_the_error_keeps_the_item_and_what_was_typed(asking):
    root, ids = asking
    head = thread_info(root, ids["analyze"]).head
    bad = "---\nthesis: 42\n---\nNo key points.\n"

    async def script(app, pilot):
        await open_inbox(app, pilot, 1)
        await pilot.press("enter")
        assert await until(pilot, lambda: is_form(app))
        app.screen.query_one("#text").text = bad
        await pilot.press("ctrl+s")
        await pilot.pause(0.3)
        still, error = is_form(app), str(app.screen.query_one("#error").render())
        await pilot.press("escape")  # closed: the text is kept for the next enter
        await settle(app, pilot)
        listed, text = rows(app), question(app)
        await pilot.press("enter")
        assert await until(pilot, lambda: is_form(app))
        again = app.screen.query_one("#text").text
        await pilot.press("escape")
        return still, error, listed, text, again

    still, error, listed, text, again = run_app(root, script)
    assert still and error  # the extractor's reason, in the form
    assert listed == [ids["analyze"]] and "your unsent answer is kept" in text
    assert again == bad
    assert thread_info(root, ids["analyze"]).head == head


def test_an_answer_the_core_refuses_is_an_error_notice_and_kept(asking):
    """The thread moved on while the person wrote (answered on another host): the answer is
    refused with the core's one line, said in a notice, and nothing else is recorded."""
    root, ids = asking
    said = []

    async def script(app, pilot):
        notify = app.notify
        app.notify = lambda message, **kw: (said.append((message, kw.get("severity"))), notify(message, **kw))
        await open_inbox(app, pilot, 1)
        await pilot.press("enter")
        assert await until(pilot, lambda: is_form(app))
        answer_thread(root, ids["analyze"], ANSWER.replace("People decide.", "Elsewhere."))
        app.screen.query_one("#text").text = ANSWER
        await pilot.press("ctrl+s")
        assert await until(pilot, lambda: any(severity == "error" for _, severity in said))
        await settle(app, pilot)
        return log_text(app), rows(app)

    log, listed = run_app(root, script)
    (message,) = [message for message, severity in said if severity == "error"]
    assert "is archived (done)" in message and "\n" not in message and "is in the log" in message
    assert ANSWER.strip() in log  # nothing typed is lost
    assert listed == []
    (step,) = thread_steps(root, ids["analyze"])
    assert step.output["thesis"] == "Elsewhere."


def test_an_answer_to_a_thread_that_moved_on_is_refused_and_kept_for_what_it_asks_now(asking):
    """Answered elsewhere while the form was open, the thread now asks its next person: the answer
    written for the old question is not recorded as the new one's; it is kept for the next enter."""
    root, _ = asking
    thread = start_thread(root, "solve-issue", "Two people in a row.", agents={"planner": "human", "developer": "human"}).thread
    plan = "---\nplan: Do it.\nsteps: [one]\n---\n"
    said = []

    async def script(app, pilot):
        notify = app.notify
        app.notify = lambda message, **kw: (said.append((message, kw.get("severity"))), notify(message, **kw))
        await open_inbox(app, pilot, 2)
        app.query_one("#inbox").move_cursor(row=app.query_one("#inbox").get_row_index(thread))
        await pilot.press("enter")
        assert await until(pilot, lambda: is_form(app))
        answer_thread(root, thread, plan)  # elsewhere: the planner's answer; it asks the developer now
        app.screen.query_one("#text").text = plan.replace("Do it.", "Do it my way.")
        await pilot.press("ctrl+s")
        assert await until(pilot, lambda: any(severity == "error" for _, severity in said))
        await settle(app, pilot)
        await pilot.press("enter")
        assert await until(pilot, lambda: is_form(app))
        title, text = str(app.screen.query_one(".title").render()), app.screen.query_one("#text").text
        await pilot.press("escape")
        return title, text

    title, text = run_app(root, script)
    (message,) = [message for message, severity in said if severity == "error"]
    assert "moved on while the answer was written (it now asks developer" in message and "is kept" in message
    assert title.startswith("developer of solve-issue") and "Do it my way." in text
    assert [step.output["plan"] for step in thread_steps(root, thread)] == ["Do it."]


def test_a_burst_answers_the_thread_it_lands_on(asking):
    """`i j enter` and the answer's first keys, sent at once from the Threads view: the form is
    the second thread's, and the keys after enter are its text."""
    root, ids = asking
    second = start_thread(root, "analyze-topic", "A second question for a person.").thread

    async def script(app, pilot):
        await settle(app, pilot)
        burst(app, "i", "j", "enter", "x", "y")
        assert await until(pilot, lambda: is_form(app))
        await pilot.pause(0.3)
        form = app.screen
        title, typed = str(form.query_one(".title").render()), form.query_one("#text").text
        form.query_one("#text").text = ANSWER
        await pilot.press("ctrl+s")
        assert await until(pilot, lambda: rows(app) == [ids["analyze"]])
        return title, typed

    title, typed = run_app(root, script, size=(80, 24))
    assert second[:10] in title and typed.startswith("xy---\n")
    assert thread_steps(root, second)[0].agent == "human"
    assert len(thread_steps(root, ids["analyze"])) == 0


def test_i_then_enter_at_start_waits_for_the_list(asking):
    """Enter pressed before the first read of the inbox is in opens the form once it is."""
    from uwf_tui.app import UwfApp
    import asyncio

    root, ids = asking

    async def main():
        app = UwfApp(root, poll_seconds=0.2)
        async with app.run_test(size=(80, 24)) as pilot:
            burst(app, "i", "enter")
            opened = await until(pilot, lambda: is_form(app) and bool(app.screen.query(".title")))  # mounted, not only pushed
            title = str(app.screen.query_one(".title").render()) if opened else ""
            await pilot.press("escape")
            return title

    assert ids["analyze"][:10] in asyncio.run(main())


def test_a_step_in_the_threads_view_still_asks_in_its_own_form(asking):
    """s on a thread whose next role is a person's: the step's own form (the step waits for it),
    not the inbox's; answered, the step is recorded by this session's step."""
    root, ids = asking

    async def script(app, pilot):
        await settle(app, pilot)
        table = app.query_one("#threads")
        table.move_cursor(row=table.get_row_index(ids["analyze"]))
        await settle(app, pilot)
        await pilot.press("s")
        assert await until(pilot, lambda: is_form(app))
        app.screen.query_one("#text").text = ANSWER
        await pilot.press("ctrl+s")
        assert await until(pilot, lambda: "thread finished" in log_text(app))
        await settle(app, pilot)
        return rows(app)

    assert run_app(root, script) == []
    (step,) = thread_steps(root, ids["analyze"])
    assert step.agent == "human" and step.output["thesis"] == "People decide."


# -- the real uwf-tui in tmux, a `uwf worker` on the same root -------------------------------------

tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")


@tmux
@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_answered_in_a_real_terminal_a_worker_takes_it_up(tmp_path, size):
    """Two threads wait for a person, one queued (a worker found its reviewer a person's and left
    it asking). In uwf-tui, `i enter`, the review typed and ctrl+s, in bursts: the reviewer rejects,
    so the worker takes the thread up, the developer steps again, and the reviewer asks again — the
    inbox shows it back at a new head, with the other thread still there."""
    from uwf_core.api import Repo, SetupRequest, apply_setup

    bin_dir = Path(sys.executable).parent
    root_path = tmp_path / "root"
    env = {**os.environ, "UWF_STORAGE_ROOT": str(root_path), "UWF_ENV_FILE": str(tmp_path / ".env")}
    examples = Path(__file__).resolve().parents[2] / "examples"
    root = Repo.open(str(root_path))
    from uwf_core.api import put_workflow

    for name in ("solve-issue", "analyze-topic"):
        put_workflow(root, str(examples / f"{name}.yaml"))
    apply_setup(root, SetupRequest(agents={"script": f"uwf-script --script-dir {examples}"}, default_agent="script"))
    queued = start_thread(root, "solve-issue", "Users can log in with an empty password.", agents={"reviewer": "human"}).thread
    queue_thread(root, queued)
    other = start_thread(root, "analyze-topic", "Why content-addressed storage suits agent workflows.", agents={"analyst": "human"}).thread
    worker = subprocess.Popen([bin_dir / "uwf", "worker"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    session = f"uwf-tui-inbox-{os.getpid()}-{size[0]}"
    try:
        asked = _until(lambda: next((item.head for item in inbox(root) if item.thread == queued), None))
        assert asked, "the worker did not leave the reviewer asking"  # it stepped planner and developer
        command = f"env -u COLUMNS -u LINES UWF_STORAGE_ROOT={root_path} UWF_ENV_FILE={tmp_path / '.env'} TERM=xterm-256color {bin_dir / 'uwf-tui'}"
        open_session(session, command, *size)
        wait_for_screen(session, "i Inbox (2)")
        position = [item.thread for item in inbox(root)].index(queued)  # the oldest wait first
        send_keys(session, "i", *["j"] * position, "Enter")
        wait_for_screen(session, "reviewer of solve-issue", "approved: true")
        send_keys(session, "Down", "End", "BSpace", "BSpace", "BSpace", "BSpace", "false", "Down", "Down", "Down", "Down", "Also reject whitespace.", "C-s")
        again = _until(lambda: next((item.head for item in inbox(root) if item.thread == queued and item.head != asked), None))
        assert again, "the worker did not take the thread up again"
        roles = [(step.role, step.agent) for step in thread_steps(root, queued)]
        assert roles == [("planner", "script"), ("developer", "script"), ("reviewer", "human"), ("developer", "script")]
        wait_for_screen(session, "i Inbox (2)", queued[:10], other[:10])  # back, asking at its new head
        send_keys(session, "q")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        worker.terminate()
        worker.wait(timeout=30)
    review = next(step for step in thread_steps(root, queued) if step.role == "reviewer")
    assert review.output == {"approved": False, "comments": "..."}


def _until(probe, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.2)
    return None


def test_the_inbox_over_postgresql_follows_another_host_at_once(pg_url, tmp_path):
    """A PostgreSQL root notifies: a thread that starts waiting for a person on another host is in
    the inbox at once (the poll is a minute), and answered there, its head moves."""
    import asyncio
    import json

    from conftest import EXAMPLES, REPO, _uwf_command

    from uwf_core.api import Repo
    from uwf_tui.app import UwfApp

    env = dict(os.environ, UWF_STORAGE_ROOT=pg_url, UWF_ENV_FILE=str(tmp_path / "host.env"))

    def uwf(*args):
        done = subprocess.run([*_uwf_command(), *args], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=60)
        assert done.returncode == 0, done.stderr
        return done

    uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml"))
    root = Repo.open(pg_url)

    async def session():
        app = UwfApp(root, poll_seconds=60)  # a poll too slow to matter: NOTIFY must do it
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.5)
            await pilot.press("i")
            started = await asyncio.to_thread(uwf, "thread", "start", "analyze-topic", "-p", "from another host", "--agent", "analyst=human")
            thread = json.loads(started.stdout)["thread"]
            seen = await until(pilot, lambda: rows(app) == [thread], timeout=5)
            await pilot.press("enter")
            assert await until(pilot, lambda: is_form(app))
            app.screen.query_one("#text").text = ANSWER
            await pilot.press("ctrl+s")
            gone = await until(pilot, lambda: rows(app) == [], timeout=10)  # (no settle: the listener works until the app ends)
            return thread, seen, gone

    thread, seen, gone = asyncio.run(session())
    assert seen and gone
    (step,) = thread_steps(root, thread)
    assert step.agent == "human" and step.output["thesis"] == "People decide."
