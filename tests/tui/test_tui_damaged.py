"""uwf-tui on a damaged root shows the damage and keeps going: garbage state files, a missing,
truncated or unreadable head, a bad archive line, paths of the wrong kind. Keys still work."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess

import pytest
from fixed_root import build_fixed_root
from node_file import delete_node
from tui_capture import workers_settled

from uwf_core.api import Repo


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    path = tmp_path_factory.mktemp("fixed") / "root"
    ids = build_fixed_root(str(path))
    fork_head = Repo.open(str(path)).threads.heads()[ids["fork"]]
    return path, ids, fork_head


# Damage inside the node file, done by hand as a broken disk or a careless hand would.
SQL = "python3 -c \"import sqlite3; c = sqlite3.connect('cas/nodes.sqlite'); c.execute(\\\"{}\\\"); c.commit()\""

DAMAGES = {
    "threads.yaml is garbage": "echo 'garbage: [' > threads.yaml",
    "registry.yaml is garbage": "echo 'workflows: [' > registry.yaml",
    "registry.yaml is not text": "printf '\\377\\376' > registry.yaml",
    "history.jsonl has a bad line": "echo '{{not json' >> history.jsonl && echo '{{}}' >> history.jsonl",
    "a head is missing": SQL.format("delete from nodes where hash = '{fork_head}'"),
    "a head is truncated": SQL.format("update nodes set data = substr(data, 1, 10) where hash = '{fork_head}'"),
    "a loose head file is a directory": "mkdir cas/{fork_head}.bin",
    "the node file is garbage": "rm -f cas/nodes.sqlite-* && printf 'not sqlite' > cas/nodes.sqlite",
    "runs.jsonl is garbled": "printf '\\377\\376\\n{{{{\\n' >> runs.jsonl",
    "config.yaml is garbage": "echo 'agents: [' > config.yaml",
    "threads.yaml is a directory": "rm threads.yaml && mkdir threads.yaml",
    "cas is a file": "rm -rf cas && touch cas",
    "locks is a file": "rm -rf locks && touch locks",
}

KEYS = ["2", "j", "j", "j", "s", "enter", "1", "j", "3", "enter", "j", "2", "k", "question_mark", "escape"]


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_the_workbench_shows_damage_and_keeps_working(healthy, tmp_path, damage):
    from uwf_tui.app import UwfApp

    base, ids, fork_head = healthy
    root = tmp_path / "root"
    shutil.copytree(base, root)
    subprocess.run(["sh", "-c", DAMAGES[damage].format(fork_head=fork_head)], cwd=root, check=True)

    async def session():
        app = UwfApp(Repo.open(str(root)), poll_seconds=0.2)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.5)
            for key in KEYS:
                await pilot.press(key)
                await pilot.pause(0.1)
            await workers_settled(app)
            await pilot.pause(0.3)
            banner = app.query_one("#damage")
            return app.is_running, banner.has_class("hidden"), str(banner.render()), [n.message for n in app._notifications]

    running, hidden, banner, notes = asyncio.run(session())
    assert running  # still up after every key
    # a garbled runs line is skipped; config and locks only matter when stepping
    if damage not in ("config.yaml is garbage", "locks is a file", "runs.jsonl is garbled"):
        assert not hidden, f"no damage shown; notifications: {notes}"
        assert "uwf cas fsck" in banner
        if damage == "a head is missing":
            assert "uwf cas fsck: 1 error" in banner and ids["fork"] in banner, banner  # what fsck found, named
        if damage == "a head is truncated":  # the corrupt node, and the thread that needs it
            assert "uwf cas fsck: 2 errors" in banner and ids["fork"] in banner, banner
    assert not [note for note in notes if "internal error" in note or "Traceback" in note]


def test_a_thread_whose_head_is_gone_is_listed_as_damaged(healthy, tmp_path, uwf):
    base, ids, fork_head = healthy
    root = tmp_path / "damaged"
    shutil.copytree(base, root)
    delete_node(root, fork_head)
    listed = {item["thread"]: item for item in json.loads(uwf("--root", str(root), "thread", "list").out)}
    assert "problem" in listed[ids["fork"]] and fork_head in listed[ids["fork"]]["problem"]
    assert "problem" not in listed[ids["analyze"]]  # the others are listed as usual


def _truncated_head(healthy, tmp_path):
    """A copy of the healthy root whose fork's head is cut short: (root, ids)."""
    base, ids, fork_head = healthy
    root = tmp_path / "root"
    shutil.copytree(base, root)
    subprocess.run(["sh", "-c", DAMAGES["a head is truncated"].format(fork_head=fork_head)], cwd=root, check=True)
    return root, ids


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_the_banner_fits_its_width_and_the_log_has_it_whole(healthy, tmp_path, size):
    """At 80 columns the banner's wrapped message pushed what fsck found and what to do off its
    three lines: now each line is cut with … where the screen ends, and the log has the damage
    and fsck's findings whole."""
    from test_tui import log_text, screen_text

    from uwf_tui.app import UwfApp

    root, ids = _truncated_head(healthy, tmp_path)

    async def session():
        app = UwfApp(Repo.open(str(root)), poll_seconds=0.2)
        async with app.run_test(size=size) as pilot:
            for _ in range(50):
                await pilot.pause(0.1)
                if app.query_one("#damage").fsck_summary:
                    break
            await pilot.pause(0.3)
            return screen_text(app), log_text(app)

    shown, log = asyncio.run(session())
    lines = shown.splitlines()
    at = next(index for index, line in enumerate(lines) if "⚠" in line)
    assert "uwf cas fsck: 2 errors" in lines[at + 1] and "The views show what can still be read" in lines[at + 2], lines[at : at + 3]
    assert ids["fork"] in " ".join(log.split()) and "uwf cas fsck: 2 errors" in log


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_a_thread_that_cannot_be_read_shows_so_not_the_thread_shown_before(healthy, tmp_path, size):
    """Moved from a healthy thread to one whose head is damaged, the timeline kept the healthy
    thread's title and rows (a trial took them for the damaged one's): now its title says it
    cannot be read, and no row of the other thread stays."""
    from test_tui import select_thread, until

    from uwf_tui.app import UwfApp

    root, ids = _truncated_head(healthy, tmp_path)

    async def session():
        app = UwfApp(Repo.open(str(root)), poll_seconds=0.2)
        async with app.run_test(size=size) as pilot:
            await pilot.pause(0.5)
            await select_thread(app, pilot, ids["solve"])
            assert await until(pilot, lambda: app.threads_view.timeline is not None and app.threads_view.timeline.info.thread == ids["solve"])
            await select_thread(app, pilot, ids["fork"])
            title = app.query_one("#thread-title")
            assert await until(pilot, lambda: "cannot be read" in str(title.render()))
            await pilot.pause(0.5)  # a reload meanwhile draws no other thread's rows
            return str(title.render()), app.query_one("#timeline").row_count, app.threads_view.timeline

    said, rows, timeline = asyncio.run(session())
    assert ids["fork"] in said and ids["solve"] not in said
    assert rows == 0 and timeline is None
