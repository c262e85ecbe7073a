"""The Threads view: the thread list, the selected thread's timeline, a row's output/body/prompt/
detail, and the log where running agents' stderr streams. This module keeps the selection and
the keyboard path through them (Enter goes in, Esc comes back out); the parts draw themselves."""

from __future__ import annotations

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
    list_threads,
    step_body,
    step_details,
    thread_statuses,
    thread_timeline,
    workflow_of,
)

from ..formatting import STATUS_STYLES, short
from . import timeline as timeline_rows
from .panes import PANE_KEYS, focus_now
from .step_pane import StepPane
from .thread_list import ThreadList
from .timeline import TimelineTable, row_at_cursor


class ThreadsView(Horizontal):
    """Owns no agent: stepping is the app's; this view shows what the core says."""

    BINDINGS = PANE_KEYS

    def __init__(self, repo: Repo, **kwargs) -> None:
        super().__init__(**kwargs)
        self.repo = repo
        self.infos: dict[str, ThreadInfo] = {}
        self.statuses: dict[str, str] = {}
        self.names: dict[str, str] = {}
        self.timeline: Timeline | None = None
        self.timeline_head: tuple[str, str] | None = None
        self.selected_thread: str | None = None
        self.selected_step: str | None = None
        self.welcomed = False
        self.window = timeline_rows.WINDOW  # how many of the selected thread's newest steps are rows
        # Held, not queried: timers and worker callbacks may land while the tree is torn down.
        self.thread_list = ThreadList(repo, self.reload, id="thread-list-pane")
        self.timeline_table = TimelineTable()
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
            yield RichLog(id="log", max_lines=2000, wrap=True, markup=False)

    def on_mount(self) -> None:
        self.query_one("#log", RichLog).border_title = "log: agents' stderr, and every message whole"
        self.reload()

    # -- the thread list -------------------------------------------------------------

    def _workflow_name(self, workflow_hash: str) -> str:
        if workflow_hash not in self.names:
            try:
                self.names[workflow_hash] = workflow_of(self.repo, workflow_hash).name
            except UwfError:
                self.names[workflow_hash] = short(workflow_hash)
        return self.names[workflow_hash]

    def reload(self) -> None:
        try:
            infos = list_threads(self.repo, include_archived=True)
            self.statuses = thread_statuses(self.repo, infos)
        except UwfError as exc:
            self.app.show_damage(exc.message)
            return
        for info in infos:
            if info.problem:
                self.app.show_damage(f"thread {info.thread}: {info.problem}")
        self.infos = {info.thread: info for info in infos}
        if not infos:
            self.show_first_run()
        self.thread_list.fill(infos, self.statuses, self._workflow_name, keep=self.selected_thread)
        first = self.thread_list.first_thread()
        if self.selected_thread is None and first:
            self.select_thread(first)
        elif self.selected_thread:
            # The head moved, a step started or ended: redraw the timeline.
            self.select_thread(self.selected_thread)

    def show_first_run(self) -> None:
        """An empty root says exactly what to do next, in the pane a thread's output would fill."""
        from uwf_core.api import list_workflows

        try:
            workflows = list_workflows(self.repo)
            agent = self.repo.config.default_agent
        except UwfError:
            return  # the damage banner says what is wrong
        text = Text()
        text.append("No threads yet.\n\n", style="bold")
        if workflows:
            text.append("• Press ")
            text.append("n", style="bold yellow")
            text.append(f" to start one from a workflow ({', '.join(entry.name for entry in workflows[:4])}).\n")
        else:
            text.append("• No workflows here: register one with ")
            text.append("uwf workflow put FILE", style="bold")
            text.append(",\n  or try the demo, the examples stepping offline: ")
            text.append("uwf-tui --demo", style="bold")
            text.append("\n")
        if not agent:
            text.append("• No agent is configured to step threads: ")
            text.append("uwf setup", style="bold")
            text.append("\n  (e.g. ")
            text.append("uwf setup --agent-preset claude --default-agent claude", style="bold")
            text.append("; `uwf agent presets` lists the others).\n")
        text.append("\n? shows every key.", style="dim")
        if not self.welcomed:  # once, where a short terminal shows it whole
            self.welcomed = True
            hint = "n starts one" if workflows else "`uwf-tui --demo` opens the examples"
            self.app.notify(f"{hint}{'' if agent else '; `uwf setup` configures an agent'}. ? shows every key.", title="No threads yet", timeout=12)
        self.query_one("#thread-title", Static).update(Text("welcome to uwf", style="bold"))
        self.step_pane.show(text)

    def show_new_thread(self, thread: str) -> None:
        """A thread this session just made (fork, edit, new): list it and open its timeline."""
        self.selected_thread = thread
        self.selected_step = None
        self.reload()
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
        if kind == "branch":
            self.open_thread(rest)
        elif kind == "more" and self.timeline is not None:
            steps = self.timeline.context.steps
            self.window += timeline_rows.WINDOW
            first = max(0, len(steps) - self.window)
            self.selected_step = f"step:{steps[first].hash}"  # the cursor lands on the oldest step now shown
            self.fill_timeline(self.timeline)
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
        elif focused is self.timeline_table:
            focus_now(self.thread_table)
        elif self.thread_list.filter_open:
            self.thread_list.clear_filter()
        else:
            return False
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
            if event.row_key.value != self.selected_thread:
                self.select_thread(event.row_key.value)
        elif event.data_table is self.timeline_table:
            self.show_entry(event.row_key.value)

    def select_thread(self, thread: str) -> None:
        if thread != self.selected_thread:
            self.window = timeline_rows.WINDOW
        self.selected_thread = thread
        self.app.refresh_bindings()  # step/run/kill depend on the selected thread
        self.load_timeline(thread)

    @work(thread=True, exclusive=True, group="timeline", exit_on_error=False)
    def load_timeline(self, thread: str) -> None:
        try:
            timeline = thread_timeline(self.repo, thread, others=list(self.infos.values()))
        except UwfError as exc:
            self.app.call_from_thread(self.app.notify, exc.message, severity="error")
            return
        self.app.call_from_thread(self.fill_timeline, timeline)

    # -- the timeline ------------------------------------------------------------------

    @work(exclusive=True, group="timeline-fill", exit_on_error=False)
    async def fill_timeline(self, timeline: Timeline) -> None:
        info = timeline.info
        if info.thread != self.selected_thread:
            return
        self.timeline = timeline
        status = self.statuses.get(info.thread, "")
        self.query_one("#thread-title", Static).update(Text.assemble(
            (self._workflow_name(info.workflow), "bold"), " · ", (info.thread, "dim"), " · ",
            (status, STATUS_STYLES.get(status, "")), f" · head {info.head}",
        ))
        moved = self.timeline_head != (info.thread, info.head)
        self.timeline_head = (info.thread, info.head)
        keep = None if moved else self.selected_step
        running = self.repo.locks.running(info.thread) if info.active else None
        newest = await self.timeline_table.fill(
            timeline, self.window, running, info.thread in self.app.runner, lambda: info.thread == self.selected_thread
        )
        if newest is None:
            return
        table = self.timeline_table
        target = keep if keep and keep in table.rows else newest
        table.move_cursor(row=table.get_row_index(target))
        self.show_entry(target)

    def tick_running(self, tick: int) -> None:
        self.timeline_table.tick(tick)

    def show_entry(self, key: str) -> None:
        kind, _, rest = key.partition(":")
        self.selected_step = key
        self.app.refresh_bindings()  # fork/edit depend on the selected row
        timeline, pane = self.timeline, self.step_pane
        if kind == "step":
            try:
                details = step_details(self.repo, rest)
            except UwfError as exc:
                self.app.notify(exc.message, severity="error")
                return
            step = next((s for s in timeline.steps if s.hash == rest), None) if timeline else None
            pane.show_step(details, step_body(self.repo.nodes, step) if step is not None else "")
        elif kind == "start" and timeline is not None:
            start = timeline.context.start
            pane.show_start(start, self._workflow_name(start.workflow))
        elif kind == "attempt" and timeline is not None:
            head, _, index = rest.rpartition(":")
            pane.show_attempt(timeline.attempts.get(head, [])[int(index)])
        elif kind == "branch":
            pane.show(f"Fork: thread {rest}. Enter opens it.")
        elif kind == "more":
            pane.show("Earlier steps are not listed yet: enter shows more of them.")
        else:
            pane.show()

    # -- what the keys act on ----------------------------------------------------------

    def current_thread(self) -> str | None:
        """The thread under the list's cursor now. Keys act on this, not on the last handled
        highlight event: in a burst like `j s` the event of `j` is still queued when `s` runs."""
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

    def selected_output_step(self) -> str | None:
        """The StepNode under the cursor (a start has no output to edit): what e edits."""
        kind, _, rest = (self.current_entry() or "").partition(":")
        return rest if kind == "step" else None

    def log_line(self, thread: str, line: str, style: str = "") -> None:
        self.query_one("#log", RichLog).write(Text.assemble((short(thread, 10) + " ", "dim"), (line, style)))

    def log_note(self, line: str, style: str = "") -> None:
        """What the app said (its toasts are brief): kept whole in the log."""
        self.query_one("#log", RichLog).write(Text.assemble(("uwf".ljust(11), "dim"), (line, style)))
