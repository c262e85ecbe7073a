"""The selected thread's header and its forks: the title (workflow, status, what it spent, its
budget, id, head), the threads forked from it, and each fork's subtree total. The ledger is whole
chains, so it is read off the UI thread after the rows, one read at a time.

Mixed into ThreadsView (threads_view.py): `self` is the view.
"""

from __future__ import annotations

import threading
import time

from rich.text import Text
from textual import work
from textual.widgets import Static

from uwf_core.api import Timeline, UwfError, find_branches, thread_cost, tree_cost

from ..formatting import STATUS_STYLES, budget_text, spend_text

LEDGER_SHARE = 0.25  # of the time, at most, spent reading one thread's ledger again and again


class ThreadHeader:
    def load_ledger(self, timeline: Timeline) -> None:
        """Read the ledger of `timeline` behind its rows, one read at a time: a thread worker runs
        to its end (a 10,000-step ledger is a second of work), so while one reads, only the
        newest timeline asked for waits for it; the heads in between are never read. The same
        thread's ledger is read again only after a rest (LEDGER_SHARE), so a thread stepping
        many times a second does not spend the process's time on its totals."""
        if self.ledger_stop is not None or self.ledger_resting:
            self.ledger_next = timeline
            return
        if self.statuses.get(timeline.info.thread) == "running" or timeline.info.thread in self.app.runner:
            return  # its head moves on before a read ends (the title shows a ledger of its head only): read once it stops
        rest = self.ledger_rest.get(timeline.info.thread, 0.0) - time.monotonic()
        if rest > 0:
            self.ledger_next = timeline
            self.ledger_resting = True
            self.set_timer(rest, self.ledger_rested)
            return
        self.ledger_stop = (timeline.info.thread, threading.Event())
        self._read_ledger(timeline, self.ledger_stop[1])

    def stop_ledger(self, thread: str) -> None:
        """A step of `thread` begins: the ledger being read of it would be stale before it ends
        (on a 100,000-step thread it is seconds of CPU a run competes with); read it after."""
        if self.ledger_stop is not None and self.ledger_stop[0] == thread:
            self.ledger_stop[1].set()

    def ledger_read(self, thread: str, took: float) -> None:
        self.ledger_stop = None
        self.ledger_rest = {thread: time.monotonic() + took * (1 / LEDGER_SHARE - 1)}
        self.ledger_rested()

    def ledger_rested(self) -> None:
        self.ledger_resting = False
        waiting, self.ledger_next = self.ledger_next, None
        if waiting is not None and waiting is self.timeline:
            self.load_ledger(waiting)

    @work(thread=True, group="ledger", exit_on_error=False, description="read_ledger")
    def _read_ledger(self, timeline: Timeline, stop: threading.Event) -> None:
        started = time.monotonic()
        try:
            self._read_ledger_of(timeline, stop)
        finally:
            self.app.call_from_thread(self.ledger_read, timeline.info.thread, time.monotonic() - started)

    def _read_ledger_of(self, timeline: Timeline, stop: threading.Event) -> None:
        """The thread's total and budget and each fork's subtree: whole chains, so after the rows."""
        forks = [branch for found in timeline.branches.values() for branch in found]
        try:
            ledger = thread_cost(self.repo, timeline.info.thread, stop=stop.is_set)
            subtrees = {branch.thread: tree_cost(self.repo, branch.thread).total for branch in forks}
        except UwfError:
            return  # stopped, or a ledger it cannot read: the timeline shows the thread, the damage banner says why
        self.app.call_from_thread(self.show_ledger, timeline, ledger, subtrees)

    @work(thread=True, exclusive=True, group="forks", exit_on_error=False, description="load_forks")
    def load_forks(self, timeline: Timeline) -> None:
        """The threads forked from this one: the whole chain is read when some thread may be one."""
        try:
            branches = find_branches(self.repo, timeline, list(self.infos.values()))
        except UwfError:
            branches = timeline.branches
        self.app.call_from_thread(self.show_branches, timeline, branches)

    def show_branches(self, timeline: Timeline, branches: dict) -> None:
        """The forks are known: draw the rows again if they differ from those drawn (the cursor
        where it was), let the keys that waited for them act, then read the ledger."""
        if self.timeline is not timeline:
            return  # a newer timeline is shown: it reads its own
        table = self.timeline_table
        table.forks_pending = False
        if branches != timeline.branches:
            timeline.branches = branches
            table.drawn = None
            self.fill_timeline(timeline, self.step_costs, follow_up=False)
        else:
            table.ready()
        self.load_ledger(timeline)

    def show_ledger(self, timeline: Timeline, ledger, subtrees: dict) -> None:
        if self.timeline is not timeline:
            return  # another thread (or head) is shown by now
        self.ledger, self.subtrees = ledger, subtrees
        self.show_title(timeline)
        self.show_subtrees(timeline)
        if self.selected_step and self.selected_step.startswith("branch:"):
            self.show_entry(self.selected_step)

    def show_subtrees(self, timeline: Timeline) -> None:
        """Each fork row's subtree total, as the thread's last ledger read added them up."""
        if self.ledger is None or self.ledger.thread != timeline.info.thread:
            return
        for found in timeline.branches.values():
            for branch in found:
                if branch.thread in self.subtrees:
                    self.timeline_table.show_subtree(branch, self.subtrees[branch.thread])

    def show_unreadable(self, thread: str, message: str) -> None:
        """A thread whose chain cannot be read (a damaged root): its title says so and no rows
        stay of the thread shown before (they read as this one's)."""
        self.app.notify(message, severity="error")
        self.timeline_table.ready(False)  # nothing to wait for: drop the keys
        if thread != self.selected_thread:
            return
        self.timeline, self.timeline_head, self.ledger = None, None, None
        self.timeline_table.clear()
        self.timeline_table.drawn = None
        self.step_pane.show(Text(f"thread {thread} cannot be read: {message}", style="red"))
        text = Text.assemble(("cannot be read", "bold red"), f" · {message} · ", (thread, "dim"))
        self.title_shown = text
        self.query_one("#thread-title", Static).update(text)

    def show_title(self, timeline: Timeline) -> None:
        """The title, when it says something new (a new text lays the screen out again)."""
        title, text = self.query_one("#thread-title", Static), self.title_text(timeline)
        if text != self.title_shown:
            self.title_shown = text
            title.update(text)

    def title_text(self, timeline: Timeline) -> Text:
        """Workflow, status, what the thread spent and its budget (once the ledger has them), id, head."""
        info = timeline.info
        status = self.statuses.get(info.thread, "")
        shown = f"{status} on worker {self.running_worker}" if status == "running" and self.running_worker else status
        progress = self.map_progress.get((info.thread, info.head)) if status == "mapping" else None
        if progress is not None:
            shown = f"{status}: {progress[0]} of {progress[1]} children ended"
        parts: list = [(self._workflow_name(info.workflow), "bold"), " · ", (shown, STATUS_STYLES.get(status, ""))]
        ledger = self.ledger if self.ledger is not None and self.ledger.head == info.head and self.ledger.thread == info.thread else None
        if ledger is not None and ledger.total.steps:
            parts += [" · ", spend_text(ledger.total)]
        if ledger is not None and ledger.budget is not None:
            parts += [" · ", (budget_text(ledger.budget), "bold red" if ledger.budget.exceeded else "")]
        parts += [" · ", (info.thread, "dim"), f" · head {info.head}"]
        return Text.assemble(*parts)
