"""The real `uwf-tui` in a real terminal (tmux): press s, the new step is on screen."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixed_root import build_fixed_root  # noqa: E402
from tmux_pane import open_session as _open  # noqa: E402
from tmux_pane import wait_for_screen as _wait_for  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")


def _quit(session: str) -> None:
    """q, then wait (up to 10 s) for the session to end with the app."""
    subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode == 0:
        time.sleep(0.2)


def test_step_by_keypress_in_a_real_terminal(tmp_path):
    root = tmp_path / "root"
    ids = build_fixed_root(str(root))
    tui = Path(sys.executable).with_name("uwf-tui")
    session = f"uwf-tui-test-{os.getpid()}"
    scripts = os.environ["UWF_SCRIPT_DIR"]  # set by build_fixed_root; a running tmux server has its own env
    # COLUMNS/LINES from the test runner would override the pane size.
    command = f"env -u COLUMNS -u LINES UWF_STORAGE_ROOT={root} UWF_SCRIPT_DIR={scripts} TERM=xterm-256color {tui}"
    _open(session, command, 160, 48)
    try:
        _wait_for(session, "analyze-topic", "solve-issue", "triage-bug", "prompt")
        subprocess.run(["tmux", "send-keys", "-t", session, "s"], check=True)
        # The new step: in the timeline (role, output summary) and in the agent log.
        _wait_for(session, "✓ analyst", "1    analyst", "thesis:")
        _quit(session)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    from uwf_core.api import Repo
    from uwf_core.api import thread_info

    assert thread_info(Repo.open(str(root)), ids["analyze"]).reason == "done"


def test_a_root_that_does_not_exist_says_it_is_new_and_where(tmp_path):
    """`uwf-tui --root` with a typo opens a workbench that says the root is new and where it
    would be created, at 80x24; quitting creates nothing."""
    missing = tmp_path / "no" / "such-root"
    tui = Path(sys.executable).with_name("uwf-tui")
    session = f"uwf-tui-new-{os.getpid()}"
    command = f"env -u COLUMNS -u LINES -u UWF_STORAGE_ROOT HOME={tmp_path} TERM=xterm-256color {tui} --root {missing}"
    _open(session, command, 80, 24)
    try:
        screen = _wait_for(session, "A new root", "does not exist yet")
        assert str(tmp_path / "no") in screen.replace("\n", "")  # where, as far as the width shows it
        _quit(session)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    assert not missing.exists()


def test_quitting_while_a_python_function_runs_does_not_hang(tmp_path):
    """A python agent's function in uwf-tui's own process that neither returns nor checks its
    context: quitting (q, then Quit) waits a few seconds for it, then leaves and says so."""
    from conftest import EXAMPLES, REPO

    from uwf_core.api import Config, Repo, put_workflow, start_thread
    from uwf_core.config.model import AgentConfig

    root = tmp_path / "root"
    repo = Repo.open(str(root))
    put_workflow(repo, str(EXAMPLES / "solve-issue.yaml"))
    repo.save_config(Config(agents={"stuck": AgentConfig("stuck", "", (), "python", python="tests.engine.python_agents_fixture:stuck")}))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    start_thread(repo, "solve-issue", "hang", str(workspace), agents={"planner": "stuck"})
    tui = Path(sys.executable).with_name("uwf-tui")
    session = f"uwf-tui-stuck-{os.getpid()}"
    command = f"env -u COLUMNS -u LINES UWF_STORAGE_ROOT={root} PYTHONPATH={REPO} TERM=xterm-256color sh -c '{tui}; echo EXITED; sleep 60'"
    _open(session, command, 80, 24)
    try:
        _wait_for(session, "solve-issue")
        subprocess.run(["tmux", "send-keys", "-t", session, "s"], check=True)
        _wait_for(session, "running")
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        _wait_for(session, "quit and stop")
        subprocess.run(["tmux", "send-keys", "-t", session, "y"], check=True)
        started = time.monotonic()
        screen = _wait_for(session, "EXITED", timeout=30)
        assert time.monotonic() - started < 15
        assert "did not stop within 5s" in screen.replace("\n", "")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
