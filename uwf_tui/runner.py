"""Messages between step workers and the UI.

Workers call uwf_core.engine.step in a thread; they never touch widgets, they post
these messages, and the app's handlers change the UI.
"""

from __future__ import annotations

from textual.message import Message


class AgentOutput(Message):
    """One stderr line of a running agent."""

    def __init__(self, thread: str, line: str) -> None:
        super().__init__()
        self.thread = thread
        self.line = line


class StepDone(Message):
    """A step (or a run) finished; `error` is set when it failed."""

    def __init__(self, thread: str, summary: str, error: str | None = None) -> None:
        super().__init__()
        self.thread = thread
        self.summary = summary
        self.error = error
