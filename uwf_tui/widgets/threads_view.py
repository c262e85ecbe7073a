"""The Threads view: the thread list, the selected thread's timeline, a row's output/body/prompt/
detail, and the log where running agents' stderr streams. This module keeps the selection, the
node marked to diff against (`m`), and the keyboard path through them (Enter goes in, Esc comes
back out); the parts draw themselves. What the steps cost comes from the ledger, read off the UI
thread: the rows' in the timeline's worker, the thread's total and its forks' subtrees after
(thread_header.py, with the title)."""

from __future__ import annotations

import threading

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, RichLog, Static

from uwf_core.api import (
    Repo,
    ThreadInfo,
    Timeline,
    UwfError,
    damaged_entries,
    list_threads,
    map_progress,
    step_body,
    step_cost,
    step_details,
    step_files_text,
    thread_statuses,
    thread_timeline,
    workflow_of,
)

from ..formatting import short, spend_text
from . import timeline as timeline_rows
from .panes import PANE_KEYS, focus_now
from .step_pane import StepPane, child_text
from .thread_header import ThreadHeader
from .thread_log import LOG_LINES, AgentLog
from .thread_list import ThreadList
from .timeline import TimelineTable, row_at_cursor
from .welcome import Welcome


class ThreadsView(ThreadHeader, AgentLog, Horizontal):
    """Owns no agent: stepping is the app's; this view shows what the core says."""

    BINDINGS = PANE_KEYS

    def __init__(self, repo: Repo, **kwargs) -> None:
        super().__init__(**kwargs)
        self.repo = repo
        self.infos: dict[str, ThreadInfo] = {}
        self.statuses: dict[str, str] = {}
        self.paused: dict[str, int] = {}  # thread -> since (ms): no step starts on it
        self.running_worker: str | None = None  # the `uwf worker` stepping the shown thread, if one is
        self.names: dict[str, str] = {}
        self.timeline: Timeline | None = None
        self.timeline_head: tuple[str, str] | None = None
        self.selected_thread: str | None = None
        self.selected_step: str | None = None
        self.newest_row: str | None = None  # the timeline's newest row as last drawn (the cursor follows from it)
        self.welcomed = False
        self.refit_pending = False  # a redraw for a new width is scheduled
        self.ledger_stop: tuple[str, threading.Event] | None = None  # while a worker reads a ledger: whose, and what stops the read
        self.ledger_resting = False  # a timer waits to read the next (load_ledger)
        self.ledger_rest: dict[str, float] = {}  # the thread last read -> when its ledger may be read again
        self.map_progress: dict[tuple[str, str], tuple[int, int] | None] = {}  # (thread, head) -> a map's (ended, total)
        self.ledger_next: Timeline | None = None  # the timeline whose ledger is to be read after it
        self.window = timeline_rows.WINDOW  # how many of the selected thread's newest steps are rows
        self.step_costs: dict = {}  # step hash -> StepCost, for the timeline's rows
        self.shown_steps: dict = {}  # step hash -> (its number, StepContext), for the timeline's rows
        self.ledger = None  # the shown thread's ThreadCost (its total and budget), once read
        self.subtrees: dict = {}  # fork thread -> what its subtree spent (a Spend)
        self.mark: str | None = None  # the node (or thread) `m` marked: one side of a diff (D)
        self.mark_label = ""
        self.stream: list[Text] = []  # agents' lines not yet written to the log (log_stream)
        self.pane_shows: tuple | None = None  # the step row (and its cost) the step pane shows
        self.title_shown: Text | None = None  # what the thread's title shows
        self.came_from: list[tuple[str, str, str | None]] = []  # (thread opened, from thread, its row) for Escape
        self.cursor_to: tuple[str, str] | None = None  # (thread, row): where its timeline's cursor goes when drawn
        # Held, not queried: timers and worker callbacks may land while the tree is torn down.
        self.thread_list = ThreadList(repo, self.reload, self.redraw_forks, id="thread-list-pane")
        self.timeline_table = TimelineTable()
        self.timeline_table.shows_current = lambda: self.timeline is not None and self.timeline.info.thread == self.current_thread()
        self.step_pane = StepPane()

    @property
    def thread_table(self) -> DataTable:
        return self.thread_list.table

    def compose(self) -> ComposeResult:
        yield self.thread_list
        with Vertical(id="thread-main"):
            yield Static("", id="thread-title")
            yield self.timeline_table
            yield self.step_pane
            yield RichLog(id="log", max_lines=LOG_LINES, wrap=True, markup=False)

    def on_mount(self) -> None:
        self.query_one("#log", RichLog).border_title = "log: agents' stderr, and every message whole"
        self.set_class(True, "-at-list")
        self.reload()

    def on_descendant_focus(self, event) -> None:
        """Where the focus is says which pane a short, narrow terminal gives its rows to (app.tcss):
        at 80x24 the timeline shows 8 rows while it has the focus, the list its filter and 3."""
        widget = event.widget
        if self.thread_list in widget.ancestors_with_self:
            at = "list"
        elif widget is self.timeline_table:
            at = "timeline"
        else:
            at = "detail"
        for name in ("list", "timeline", "detail"):
            self.set_class(name == at, f"-at-{name}")

    # -- the thread list -------------------------------------------------------------

    def _workflow_name(self, workflow_hash: str) -> str:
        if workflow_hash not in self.names:
            try:
                self.names[workflow_hash] = workflow_of(self.repo, workflow_hash).name
            except UwfError:
                self.names[workflow_hash] = short(workflow_hash)
        return self.names[workflow_hash]

    def workflow_name(self, thread: str | None) -> str | None:
        """The name of `thread`'s workflow (None for no thread, or one not listed)."""
        info = self.infos.get(thread or "")
        return self._workflow_name(info.workflow) if info is not None and info.workflow else None

    def reload(self, keep: str | None = None) -> None:
        """List and timeline again; the cursor stays on `keep`, else on its thread (a burst's keys act there)."""
        keep = keep or (row_at_cursor(self.thread_table) if self.thread_table.row_count else None) or self.selected_thread
        try:
            infos = list_threads(self.repo, include_archived=True)
            self.statuses = thread_statuses(self.repo, infos)
            self.paused = self.repo.threads.paused()
            for thread in self.app.runner.running:  # between two steps of a run here its lock is free: still running
                if self.statuses.get(thread) == "waiting":
                    self.statuses[thread] = "running"
            damaged = damaged_entries(self.repo)
        except UwfError as exc:
            self.app.show_damage(exc.message)
            return
        problems = [f"thread {info.thread}: {info.problem}" for info in infos if info.problem]
        problems += [entry.message for entry in damaged if entry.hides]
        if problems:  # one banner for all: shown one after another, they would alternate on every reload
            self.app.show_damage(problems[0] + (f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""))
        self.infos = {info.thread: info for info in infos}
        if not infos:
            self.show_first_run()
        self.thread_list.fill(infos, self.statuses, self._workflow_name, keep=keep)
        shown = row_at_cursor(self.thread_table)  # where a filter hid `keep`: the timeline shows what the keys act on
        target = keep if keep in self.thread_table.rows else shown
        if target:
            self.select_thread(target)
        elif infos and self.thread_list.filter_text:
            self.show_no_match()

    def show_no_match(self) -> None:
        """A filter that hides every thread: no timeline (the keys would act on a thread the list
        no longer shows), and what to do about it."""
        self.selected_thread = None
        self.timeline = None
        self.timeline_table.clear()
        self.timeline_table.drawn = None
        self.timeline_table.ready(replay=False)  # keys waiting for rows: there will be none
        text = Text.assemble(("No thread matches ", "bold"), (repr(self.thread_list.filter_text), "bold yellow"), (": esc clears the filter.", "bold"))
        self.query_one("#thread-title", Static).update(text)
        self.step_pane.show(text)
        self.title_shown = self.pane_shows = None
        self.app.refresh_bindings()

    def show_first_run(self) -> None:
        """An empty root says exactly what to do next, in the pane a thread's output would fill."""
        try:
            welcome = Welcome(self.repo)
        except UwfError:
            return  # the damage banner says what is wrong
        if not self.welcomed:  # once
            self.welcomed = True
            message, title = welcome.toast()
            self.app.notify(message, title=title, timeout=12)
        self.query_one("#thread-title", Static).update(Text("welcome to uwf", style="bold"))
        self.step_pane.show(welcome.text())
        self.title_shown = self.pane_shows = None

    def show_new_thread(self, thread: str) -> None:
        """A thread this session just made (fork, edit, new): list it and open its timeline."""
        self.selected_thread = thread
        self.selected_step = None
        self.reload(keep=thread)
        self.select_thread(thread)

    # -- keyboard navigation: Enter goes in, Esc comes back out ---------------------------

    def panes(self) -> list:
        return [self.thread_table, self.timeline_table, self.step_pane.scroll, self.query_one("#log", RichLog)]

    def tabs(self) -> StepPane:
        return self.step_pane

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """A click on the cursor's row: what Enter does (Enter itself calls enter_row() at once)."""
        self.enter_row(event.data_table)

    def enter_row(self, table: DataTable) -> None:
        """Enter: a thread opens its timeline; a step or attempt its detail; a fork row its thread."""
        if table is self.thread_table:
            focus_now(self.timeline_table)
            return
        if table is not self.timeline_table:
            return
        kind, _, rest = (row_at_cursor(table) or "").partition(":")
        if kind in ("branch", "child"):
            came_from = (self.selected_thread, self.selected_step)
            self.open_thread(rest)
            if self.selected_thread == rest and came_from[0] not in (None, rest):
                self.came_from.append((rest, *came_from))  # Escape goes back there
        elif kind == "more" and self.timeline is not None:
            steps = self.timeline.context.steps
            self.window += timeline_rows.WINDOW
            first = max(0, len(steps) - self.window)
            self.cursor_to = (self.timeline.info.thread, f"step:{steps[first].hash}")  # the oldest step now shown
            self.load_timeline(self.timeline.info.thread)  # the new rows' costs are read too
        elif kind in ("step", "start", "attempt", "running"):
            if kind in ("attempt", "start"):
                self.step_pane.active = "tab-output"
            focus_now(self.step_pane.scroll)

    def back(self) -> bool:
        """Esc: from the step back to the timeline, from there to the list, then clear the filter.
        False when there was nothing to go back from."""
        step, log = self.step_pane.scroll, self.query_one("#log", RichLog)
        focused = self.app.focused
        if focused is not None and (focused is log or focused is step or step in focused.ancestors):
            focus_now(self.timeline_table)
        elif focused is self.timeline_table and self._back_to_where_opened():
            pass
        elif focused is self.timeline_table:
            focus_now(self.thread_table)
        elif self.thread_list.filter_open:
            self.thread_list.clear_filter()
        else:
            return False
        return True

    def _back_to_where_opened(self) -> bool:
        """Escape in a thread opened from a fork (or map child) row: the timeline it was opened
        from, at that row's step. Only while the thread shown is the one opened (the list moved
        since: Escape goes to the list)."""
        while self.came_from and self.came_from[-1][0] != self.current_thread():
            self.came_from.pop()
        if not self.came_from:
            return False
        _, thread, step = self.came_from.pop()
        if thread not in self.infos:
            return False
        self.cursor_to = (thread, step) if step else None  # the cursor goes back to the row Enter was pressed on
        self.open_thread(thread)
        return True

    def toggle_filter(self) -> None:
        self.thread_list.open_filter()

    def open_thread(self, thread: str) -> None:
        """Select `thread` in the list (clearing a filter that hides it) and show its timeline."""
        if thread not in self.thread_table.rows and self.thread_list.filter_text:
            self.thread_list.clear_filter()
        if thread not in self.thread_table.rows:
            self.app.notify(f"thread {thread} is not in the list", severity="warning")
            return
        self.thread_table.move_cursor(row=self.thread_table.get_row_index(thread))
        self.select_thread(thread)
        focus_now(self.timeline_table)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is None or event.row_key.value is None:
            return
        if event.data_table is self.thread_table:
            # Only the row under the cursor now: a highlight queued by an earlier fill (a burst
            # typed into the filter, `/tri`, fills the list once a key) names a thread it hides.
            if event.row_key.value != self.selected_thread and event.row_key.value == row_at_cursor(self.thread_table):
                self.select_thread(event.row_key.value)
        elif event.data_table is self.timeline_table and event.row_key.value == row_at_cursor(self.timeline_table):
            self.show_entry(event.row_key.value)  # not a highlight a refill queued on its way (the start row, as it cleared)

    def select_thread(self, thread: str) -> None:
        if thread != self.selected_thread:
            self.window = timeline_rows.WINDOW
        self.selected_thread = thread
        self.app.refresh_bindings()  # step/run/kill depend on the selected thread
        self.load_timeline(thread)

    @work(thread=True, exclusive=True, group="timeline", exit_on_error=False, description="load_timeline")
    def load_timeline(self, thread: str) -> None:
        """The newest `window` steps only, so a 10,000-step thread opens as fast as a short one;
        its forks are found after the rows are on screen (load_forks), the last ones found meanwhile."""
        try:
            timeline = thread_timeline(self.repo, thread, with_branches=False, window=self.window)
            shown = self.timeline
            if shown is not None and shown.info.thread == thread:
                timeline.branches = shown.branches
            costs = {step.hash: step_cost(self.repo, step, number) for number, step in timeline.numbered()}
            if self.statuses.get(thread) == "mapping":  # read here, off the UI thread: the title says it
                self.map_progress[(thread, timeline.info.head)] = map_progress(self.repo, timeline.info)
        except UwfError as exc:
            self.app.call_from_thread(self.show_unreadable, thread, exc.message)
            return
        self.app.call_from_thread(self.fill_timeline, timeline, costs)

    # -- the timeline ------------------------------------------------------------------

    @work(exclusive=True, group="timeline-fill", exit_on_error=False, description="fill_timeline")
    async def fill_timeline(self, timeline: Timeline, costs: dict | None = None, follow_up: bool = True) -> None:
        """Draw `timeline` (extending the rows drawn when it can); with `follow_up`, then find its
        forks (the keys wait for them: a fork row may be what the next key lands on) and its ledger."""
        info = timeline.info
        if follow_up:
            self.timeline_table.forks_pending = False  # this timeline's are read after its rows
        if info.thread != self.selected_thread:
            return
        self.timeline = timeline
        self.shown_steps = {step.hash: (number, step) for number, step in timeline.numbered()}
        self.step_costs = costs or {}
        running = self.repo.locks.running(info.thread) if info.active else None
        self.running_worker = running.worker if running is not None else None
        self.show_title(timeline)
        moved = self.timeline_head != (info.thread, info.head)
        same_thread = self.timeline_head is not None and self.timeline_head[0] == info.thread
        self.timeline_head = (info.thread, info.head)
        # A new step takes the cursor along only from the newest row (as `tail -f`): moved up to
        # read an older step while a run goes, it stays there while that row is drawn.
        # The row under the cursor now, not the last highlight handled: a key that moved the cursor
        # may have its highlight still queued behind this fill (a CI run saw the cursor taken back).
        table = self.timeline_table
        at = (row_at_cursor(table) or self.selected_step) if same_thread else self.selected_step
        following = at in (None, self.newest_row, "running:")
        keep = at if not moved or (same_thread and not following) else None
        table.mark, table.lineages = self.mark, self.thread_list.lineages
        newest = table.extend(timeline, running, info.thread in self.app.runner, self.step_costs)
        if newest is None:
            table.filling = True
            try:
                newest = await table.fill(
                    timeline, running, info.thread in self.app.runner, lambda: info.thread == self.selected_thread, self.step_costs
                )
            finally:
                table.filling = False
        if newest is None:
            return
        self.newest_row = newest
        target = keep if keep and keep in table.rows else newest
        wanted = self.cursor_to[1] if self.cursor_to is not None and self.cursor_to[0] == info.thread else None
        if wanted is not None and (wanted in table.rows or not follow_up):  # a fork row comes with the forks, after the rows
            target = wanted if wanted in table.rows else target
            self.cursor_to = None
        table.move_cursor(row=table.get_row_index(target))
        self.show_subtrees(timeline)  # the last totals until the ledger is read again
        self.show_entry(target)
        if follow_up:
            table.forks_pending = True
            self.load_forks(timeline)
        table.ready()  # the keys typed while the rows were on their way act on them now (or once the forks are known)

    def redraw_forks(self) -> None:
        """Whose fork each fork row is became known: draw the timeline's rows again."""
        if self.timeline is not None and self.timeline.branches:
            self.timeline_table.drawn = None
            self.fill_timeline(self.timeline, self.step_costs, follow_up=False)

    def on_resize(self) -> None:
        """Across the width where the timeline gains (or loses) its cost column: draw it again,
        once for the resizes of one layout (a terminal's resize reaches a view several times)."""
        if not self.refit_pending:
            self.refit_pending = True
            self.call_after_refresh(self._refit)

    def _refit(self) -> None:
        self.refit_pending = False
        table = self.timeline_table
        if self.timeline is not None and table.with_cost is not None and table.with_cost != table.wants_cost():
            self.fill_timeline(self.timeline, self.step_costs, follow_up=False)  # the same head: its forks and ledger are read

    def tick_running(self, tick: int) -> None:
        self.timeline_table.tick(tick)

    def show_entry(self, key: str) -> None:
        kind, _, rest = key.partition(":")
        self.selected_step = key
        self.app.refresh_bindings()  # fork/edit depend on the selected row
        timeline, pane = self.timeline, self.step_pane
        shown = (key, self.step_costs.get(rest)) if kind == "step" else None
        if shown is not None and shown == self.pane_shows:
            return  # a step is what it was (its cost too): the panes stay, the screen is not laid out again
        self.pane_shows = shown
        if kind == "step":
            run = timeline.step_runs.get(rest) if timeline is not None else None
            runs = None if timeline is None else [run] if run is not None else []  # the timeline read the runs log
            try:
                details = step_details(self.repo, rest, runs)
                files = step_files_text(self.repo, rest, outside=run.outside if run is not None else None)
            except UwfError as exc:
                self.app.notify(exc.message, severity="error")
                return
            step = self.shown_steps.get(rest, (0, None))[1] if timeline else None
            pane.show_step(details, step_body(self.repo.nodes, step) if step is not None else "", self.step_costs.get(rest), files)
        elif kind == "start" and timeline is not None:
            start = timeline.context.start
            try:
                files = step_files_text(self.repo, timeline.context.start_hash)
            except UwfError as exc:
                files = f"# {exc.message}"
            pane.show_start(start, self._workflow_name(start.workflow), files)
        elif kind == "attempt" and timeline is not None:
            head, _, index = rest.rpartition(":")
            pane.show_attempt(timeline.attempts.get(head, [])[int(index)])
        elif kind == "branch":
            subtree = self.subtrees.get(rest)
            spent = f"\nIts subtree (the fork and the threads forked from it, each step once): {spend_text(subtree)}." if subtree else ""
            pane.show_thread_row(f"Fork: thread {rest}. Enter opens it.{spent}", rest, "This fork")
        elif kind == "child":
            pane.show_thread_row(child_text(rest, self.timeline_table.map_children.get(rest, {})), rest, "This child of the map step")
        elif kind == "more":
            pane.show("Earlier steps are not listed yet: enter shows more of them.")
        else:
            pane.show()

    # -- what the keys act on ----------------------------------------------------------

    def current_thread(self) -> str | None:
        """The thread under the list's cursor now (None: the list is empty). Keys act on this, not on
        the last highlight event: in a burst like `j s` the event of `j` is still queued when `s` runs."""
        if not self.thread_table.row_count:
            return None
        return row_at_cursor(self.thread_table) or self.selected_thread

    def current_entry(self) -> str | None:
        """The timeline row under the cursor now, when it belongs to the current thread."""
        if self.timeline is None or self.timeline.info.thread != self.current_thread():
            return None
        return row_at_cursor(self.timeline_table)

    def selected_step_hash(self) -> str | None:
        """The StepNode (or StartNode) under the timeline's cursor: what f forks from."""
        kind, _, rest = (self.current_entry() or "").partition(":")
        return rest if kind in ("step", "start") else None

    def selected_candidate(self) -> tuple[str, str] | None:
        """(fork, its head) when the cursor is on the row of an active fork that branches off the
        thread's head (a candidate of `thread step --agents`): what P picks."""
        kind, _, fork = (self.current_entry() or "").partition(":")
        timeline = self.timeline
        if kind != "branch" or timeline is None:
            return None
        for branch in timeline.branches.get(timeline.info.head, []):
            info = self.infos.get(fork)
            if branch.thread == fork and branch.active and branch.own_steps and info is not None:
                return fork, info.head
        return None

    def selected_node(self) -> str | None:
        """What `m` marks and `D` compares with the mark: the step (or start) under the timeline's
        cursor, a fork row's thread, or, when the timeline is not yet the current thread's (a key
        right after moving in the list), the current thread itself."""
        entry = self.current_entry()
        if entry is None:
            return self.current_thread()
        kind, _, rest = entry.partition(":")
        return rest if kind in ("step", "start", "branch", "child") else None

    def node_label(self, node: str) -> str:
        """The node as a person reads it: `step 3 (reviewer) of solve-issue`, or a thread."""
        timeline = self.timeline
        if timeline is not None and timeline.info.thread == self.current_thread():
            name = self._workflow_name(timeline.info.workflow)
            if node in self.shown_steps:
                number, step = self.shown_steps[node]
                return f"step {number} ({step.role}) of {name} {short(timeline.info.thread, 10)}"
            if node == timeline.context.start_hash:
                return f"the start of {name} {short(timeline.info.thread, 10)}"
        if node in self.infos:
            return f"thread {short(node, 10)} ({self._workflow_name(self.infos[node].workflow)})"
        return f"node {node}"

    def set_mark(self, node: str | None) -> None:
        """Mark `node` (None: unmark); the timeline shows it."""
        self.mark = node
        self.mark_label = self.node_label(node) if node else ""
        self.timeline_table.set_mark(node)
        self.app.refresh_bindings()

    def selected_output_step(self) -> str | None:
        """The StepNode under the cursor (a start has no output to edit): what e edits."""
        kind, _, rest = (self.current_entry() or "").partition(":")
        return rest if kind == "step" else None
