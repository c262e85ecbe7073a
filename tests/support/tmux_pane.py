"""uwf-tui in a real terminal: a detached tmux session of a given size, its screen, keys sent to it
in bursts. Shared by the tmux tests of every view."""

from __future__ import annotations

import subprocess
import time


def open_session(session: str, command: str, columns: int, rows: int) -> None:
    """A detached tmux session of that size running `command` (detached sessions may start at the
    server's default size whatever -x/-y say: resized once more)."""
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(columns), "-y", str(rows), command], check=True)
    subprocess.run(["tmux", "resize-window", "-t", session, "-x", str(columns), "-y", str(rows)], capture_output=True)


def screen(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def wait_for_screen(session: str, *texts: str, timeout: float = 30) -> str:
    """Poll the pane until every text is on screen at once (a capture can catch a redraw half-done)."""
    deadline = time.monotonic() + timeout
    shown = ""
    while time.monotonic() < deadline:
        shown = screen(session)
        if all(text in shown for text in texts):
            return shown
        time.sleep(0.2)
    raise AssertionError(f"{texts!r} did not appear on screen:\n{shown}")


def send_keys(session: str, *keys: str) -> None:
    """Every key in one `send-keys`: a burst, with no pause between them."""
    subprocess.run(["tmux", "send-keys", "-t", session, *keys], check=True)
