"""Messages from the workers to the UI.

Workers run uwf_core calls in threads; they never touch widgets. They post
these messages, and the app's handlers change the UI. A question for the
person travels with a Future the screen resolves (as toad's permission
requests do), so the waiting worker needs no polling.
"""

from __future__ import annotations

from concurrent.futures import Future

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


class HumanAnswerRequested(Message):
    """A `human` role needs an answer: the handler shows the form and resolves `answer`
    with the text, or None when the person (or a cancel, or quitting) declines."""

    def __init__(self, thread: str, request, answer: Future) -> None:
        super().__init__()
        self.thread = thread
        self.request = request
        self.answer = answer


class KillDone(Message):
    """A kill finished (or failed with `error`)."""

    def __init__(self, thread: str, error: str | None = None) -> None:
        super().__init__()
        self.thread = thread
        self.error = error


class AgentChecked(Message):
    """`uwf agent test` from the palette finished; `result` is an AgentCheck."""

    def __init__(self, result) -> None:
        super().__init__()
        self.result = result


class FsckDone(Message):
    """`uwf cas fsck` ran because the root looked damaged; `summary` says what it found."""

    def __init__(self, summary: str) -> None:
        super().__init__()
        self.summary = summary


class RootChanged(Message):
    """The root notified a change (another host stepped, queued, killed): reload now."""


class ReportReady(Message):
    """A read-only report for a screen (a diff, a dry run) was computed: `value` is the core's
    record (ThreadDiff, DryRun), or `error` says why there is none."""

    def __init__(self, value, error: str | None = None) -> None:
        super().__init__()
        self.value = value
        self.error = error


class InboxLoaded(Message):
    """The threads waiting for a person were read (`items`: InboxItems, oldest wait first), or
    `error` says why they could not be."""

    def __init__(self, items: list, error: str | None = None) -> None:
        super().__init__()
        self.items = items
        self.error = error


class InboxAnswered(Message):
    """An answer from the inbox was recorded (`result`: the StepResult), or refused: `error` is
    the core's one line, `text` the answer, and `still_waiting` whether the thread still asks (the
    answer can be tried again)."""

    def __init__(self, item, text: str, result=None, error: str | None = None, still_waiting: bool = False) -> None:
        super().__init__()
        self.item = item
        self.text = text
        self.result = result
        self.error = error
        self.still_waiting = still_waiting
