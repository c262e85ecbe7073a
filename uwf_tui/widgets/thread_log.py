"""The Threads view's log: running agents' stderr lines and every message of the app, whole
(its toasts are brief). A thread stepping many times a second writes dozens of lines a second:
they are written together, one redraw for all.

Mixed into ThreadsView (threads_view.py): `self` is the view.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import RichLog

from ..formatting import short

LOG_LINES = 2000  # the log keeps the newest
STREAM_SECONDS = 0.1  # agents' lines are written to the log together, this often at most


class AgentLog:
    def log_line(self, thread: str, line: str, style: str = "") -> None:
        self.flush_stream()
        self.query_one("#log", RichLog).write(Text.assemble((short(thread, 10) + " ", "dim"), (line, style)))

    def log_note(self, line: str, style: str = "") -> None:
        """What the app said (its toasts are brief): kept whole in the log."""
        self.flush_stream()
        self.query_one("#log", RichLog).write(Text.assemble(("uwf".ljust(11), "dim"), (line, style)))

    def log_stream(self, thread: str, line: str) -> None:
        """A running agent's line: written with the others of the same tenth of a second, one
        redraw for all (a thread stepping fast writes dozens a second); before any other line."""
        self.stream.append(Text.assemble((short(thread, 10) + " ", "dim"), line))
        if len(self.stream) == 1:
            self.set_timer(STREAM_SECONDS, self.flush_stream)

    def flush_stream(self) -> None:
        lines, self.stream = self.stream[-LOG_LINES:], []
        if lines:  # one write: each write lays the screen out again (its size changed), 200 a second during `r`
            self.query_one("#log", RichLog).write(Text("\n").join(lines))
