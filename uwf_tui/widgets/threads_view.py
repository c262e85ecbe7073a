"""The Threads view: the thread list, the selected thread's timeline (steps,
failed attempts, forks as branches), a step's output/body/prompt/detail, and
the log panel where running agents' stderr streams."""

from __future__ import annotations

import json
import time

from rich.syntax import Syntax
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Input, RichLog, Static, TabbedContent, TabPane

from uwf_core.api import (
    Repo,
    ThreadInfo,
    Timeline,
    UwfError,
    list_threads,
    step_body,
    step_counts,
    step_details,
    thread_statuses,
    thread_timeline,
    workflow_of,
)

from ..formatting import STATUS_ICONS, STATUS_STYLES, age, clock, elapsed, short, spinner, summary, took, when
from .panes import active_scroll

TIMELINE_BATCH = 100
TIMELINE_WINDOW = 500  # the newest steps shown at first; a row above them shows more on Enter
AGE_SECONDS = 5.0


class ThreadsView(Horizontal):
    """Owns no agent: stepping is the app's; this view shows what the core says."""

    def __init__(self, repo: Repo, **kwargs) -> None:
        super().__init__(**kwargs)
        self.repo = repo
        self.store = repo.nodes
        self.infos: dict[str, ThreadInfo] = {}
        self.statuses: dict[str, str] = {}
        self.names: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        self.timeline: Timeline | None = None
        self.timeline_head: tuple[str, str] | None = None
        self.updated: dict[str, int | None] = {}  # thread -> when its head was written (ms)
        self.filter_text = ""
        self.selected_thread: str | None = None
        self.selected_step: str | None = None
        self.running_since: int | None = None  # ms: when the selected thread's running step began
        self.welcomed = False
        self.window = TIMELINE_WINDOW  # how many of the selected thread's newest steps are in the timeline
        # Held, not queried: timers and worker callbacks may land while the tree is torn down.
        self.thread_table = DataTable(id="threads", cursor_type="row", zebra_stripes=True)
        self.timeline_table = DataTable(id="timeline", cursor_type="row")

    def compose(self) -> ComposeResult:
        with Vertical(id="thread-list-pane"):
            yield Input(placeholder="filter threads (workflow, id, status)", id="thread-filter", classes="hidden")
            yield self.thread_table
        with Vertical(id="thread-main"):
            yield Static("", id="thread-title")
            yield self.timeline_table
            with TabbedContent(id="step-tabs"):
                with TabPane("Output", id="tab-output"):
                    yield VerticalScroll(Static("", id="step-output"))
                with TabPane("Body", id="tab-body"):
                    yield VerticalScroll(Static("", id="step-body"))
                with TabPane("Prompt", id="tab-prompt"):
                    yield VerticalScroll(Static("", id="step-prompt"))
                with TabPane("Detail", id="tab-detail"):
                    yield VerticalScroll(Static("", id="step-detail"))
            yield RichLog(id="log", max_lines=2000, wrap=True, markup=False)

    def on_mount(self) -> None:
        threads = self.thread_table
        for label, width in ((" ", 1), ("thread", 10), ("workflow", 14), ("status", 9), ("steps", 5), ("updated", 8)):
            key = threads.add_column(label, width=width)
            if label == "steps":
                self.steps_column = key
            elif label == "updated":
                self.updated_column = key
        timeline = self.timeline_table
        self.timeline_columns = {
            label: timeline.add_column(label, width=width)
            for label, width in (("#", 3), ("role", 12), ("agent", 12), ("when", 8), ("took", 6), ("output", 64))
        }
        self.query_one("#log", RichLog).border_title = "agent log"
        self.set_interval(AGE_SECONDS, self.refresh_ages)  # "updated 2s ago" must not stay 2s
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
        table = self.thread_table
        keep = self.selected_thread
        table.clear()
        self.updated = {}
        for info in infos:
            status = self.statuses.get(info.thread, "")
            name = self._workflow_name(info.workflow)
            haystack = f"{info.thread} {name} {status}".lower()
            if self.filter_text and self.filter_text.lower() not in haystack:
                continue
            try:
                updated = self.store.get(info.head).timestamp
            except UwfError:
                updated = None
            style = STATUS_STYLES.get(status, "")
            self.updated[info.thread] = updated
            table.add_row(
                Text(STATUS_ICONS.get(status, "?"), style=style),
                short(info.thread, 10),
                name,
                Text(status, style=style),
                str(self.counts[info.head]) if info.head in self.counts else "…",
                age(updated),
                key=info.thread,
            )
        missing = [info for info in infos if info.head not in self.counts]
        if missing:
            self.count_steps(missing)
        if keep and keep in table.rows:
            table.move_cursor(row=table.get_row_index(keep))
        elif table.row_count:
            table.move_cursor(row=0)
        if self.selected_thread is None and table.row_count:
            self.select_thread(str(table.coordinate_to_cell_key((0, 0)).row_key.value))
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
            text.append("• Press ", style="")
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
        self.query_one("#step-output", Static).update(text)

    @work(thread=True, exclusive=True, group="counts", exit_on_error=False)
    def count_steps(self, infos: list[ThreadInfo]) -> None:
        """Step counts need whole chains: done off the UI thread, cells filled in after."""
        counts = step_counts(self.repo, [info.head for info in infos])
        self.counts.update(counts)
        counted = [(info.thread, counts[info.head]) for info in infos if info.head in counts]
        self.app.call_from_thread(self._show_counts, counted)

    def refresh_ages(self) -> None:
        """Advance the "updated" column (ages grow with no change to the root)."""
        table = self.thread_table
        for thread, updated in self.updated.items():
            if thread in table.rows:
                table.update_cell(thread, self.updated_column, age(updated))

    def tick_running(self, tick: int) -> None:
        """Once a second: the running row's spinner and elapsed time, so a long step looks alive."""
        table = self.timeline_table
        if "running:" not in table.rows:
            return
        table.update_cell("running:", self.timeline_columns["#"], Text(spinner(tick), style="bold green"))
        if self.running_since:
            table.update_cell("running:", self.timeline_columns["took"], elapsed(time.time() - self.running_since / 1000))

    def _show_counts(self, counted: list[tuple[str, int]]) -> None:
        table = self.thread_table
        for thread, count in counted:
            if thread in table.rows:
                table.update_cell(thread, self.steps_column, str(count))

    # -- keyboard navigation: Enter goes in, Esc comes back out ---------------------------

    def panes(self) -> list:
        return [self.thread_table, self.timeline_table, active_scroll(self.query_one("#step-tabs", TabbedContent))]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter: a thread opens its timeline; a step or attempt its detail; a fork row its thread."""
        key = str(event.row_key.value) if event.row_key is not None and event.row_key.value is not None else ""
        if event.data_table is self.thread_table:
            self.timeline_table.focus()
            return
        if event.data_table is not self.timeline_table:
            return
        kind, _, rest = key.partition(":")
        if kind == "branch":
            self.open_thread(rest)
        elif kind == "more" and self.timeline is not None:
            steps = self.timeline.context.steps
            self.window += TIMELINE_WINDOW
            first = max(0, len(steps) - self.window)
            self.selected_step = f"step:{steps[first].hash}"  # the cursor lands on the oldest step now shown
            self.fill_timeline(self.timeline)
        elif kind in ("step", "start", "attempt", "running"):
            tabs = self.query_one("#step-tabs", TabbedContent)
            if kind in ("attempt", "start"):
                tabs.active = "tab-output"
            active_scroll(tabs).focus()

    def back(self) -> bool:
        """Esc: from the step back to the timeline, from there to the list, then clear the filter.
        False when there was nothing to go back from."""
        panes = self.panes()
        focused = self.app.focused
        if focused is not None and (focused is panes[2] or panes[2] in focused.ancestors):
            self.timeline_table.focus()
        elif focused is self.timeline_table:
            self.thread_table.focus()
        elif self.filter_text or not self.query_one("#thread-filter", Input).has_class("hidden"):
            self.clear_filter()
        else:
            return False
        return True

    def open_thread(self, thread: str) -> None:
        """Select `thread` in the list (clearing a filter that hides it) and show its timeline."""
        if thread not in self.thread_table.rows and self.filter_text:
            self.clear_filter()
        if thread not in self.thread_table.rows:
            self.app.notify(f"thread {thread} is not in the list", severity="warning")
            return
        self.thread_table.move_cursor(row=self.thread_table.get_row_index(thread))
        self.select_thread(thread)
        self.timeline_table.focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is None or event.row_key.value is None:
            return
        if event.data_table.id == "threads":
            if event.row_key.value != self.selected_thread:
                self.select_thread(event.row_key.value)
        elif event.data_table.id == "timeline":
            self.show_entry(event.row_key.value)

    def select_thread(self, thread: str) -> None:
        if thread != self.selected_thread:
            self.window = TIMELINE_WINDOW
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
        self.app.call_from_thread(self.show_timeline, timeline)

    # -- the timeline ------------------------------------------------------------------

    def show_timeline(self, timeline: Timeline) -> None:
        self.fill_timeline(timeline)

    @work(exclusive=True, group="timeline-fill", exit_on_error=False)
    async def fill_timeline(self, timeline: Timeline) -> None:
        """Rows go in batches, yielding between them, so keys are handled while a long thread loads."""
        import asyncio

        if timeline.info.thread != self.selected_thread:
            return
        self.timeline = timeline
        info = timeline.info
        status = self.statuses.get(info.thread, "")
        name = self._workflow_name(info.workflow)
        self.query_one("#thread-title", Static).update(
            Text.assemble((name, "bold"), " · ", (info.thread, "dim"), " · ", (status, STATUS_STYLES.get(status, "")), f" · head {info.head}")
        )
        table = self.timeline_table
        moved = self.timeline_head != (info.thread, info.head)
        self.timeline_head = (info.thread, info.head)
        keep = None if moved else self.selected_step
        table.clear()
        context = timeline.context
        prompt_line = " ".join(context.start.prompt.split())
        table.add_row("", Text("prompt", style="bold magenta"), "", "", "", prompt_line[:64], key=f"start:{context.start_hash}")
        self._add_extras(table, context.start_hash)
        # A long thread shows its newest steps: rows (and the output nodes their summaries read)
        # stay bounded however long the chain, and Enter on the row above them shows more.
        first = max(0, len(context.steps) - self.window)
        if first:
            more = f"{first:,} earlier step{'s' if first > 1 else ''}: enter shows {min(first, TIMELINE_WINDOW):,} more"
            table.add_row("…", Text("earlier", style="dim"), "", "", "", Text(more, style="dim"), key="more:")
        for number, step in enumerate(context.steps[first:], first + 1):
            if number % TIMELINE_BATCH == 0:
                await asyncio.sleep(0)
                if timeline.info.thread != self.selected_thread:
                    return
            table.add_row(
                str(number),
                Text(step.role, style="bold cyan"),
                Text(step.agent, style="green" if step.agent != "human" else "bold yellow"),
                clock(step.completed_at),
                took(step.started_at, step.completed_at),
                summary(step.output, 64),
                key=f"step:{step.hash}",
            )
            self._add_extras(table, step.hash)
        running = self.repo.locks.running(info.thread) if info.active else None
        self.running_since = running.started_at if running is not None else None
        if running is not None:
            table.add_row(
                "▶",
                Text(running.role or "…", style="bold green"),
                running.agent or "",
                clock(running.started_at),
                elapsed(time.time() - running.started_at / 1000) if running.started_at else "",
                Text(
                    "running… (x cancels)" if info.thread in self.app.running else f"running in another process (pid {running.pid})",
                    style="green",
                ),
                key="running:",
            )
        target = keep if keep and keep in table.rows else (f"step:{context.steps[-1].hash}" if context.steps else f"start:{context.start_hash}")
        table.move_cursor(row=table.get_row_index(target))
        self.show_entry(target)

    def _add_extras(self, table: DataTable, after: str) -> None:
        timeline = self.timeline
        for index, attempt in enumerate(timeline.attempts.get(after, [])):
            error = attempt.error or attempt.status
            table.add_row(
                "",
                Text(f"✗ {attempt.role or ''}", style="bold red"),
                attempt.agent or "",
                clock(attempt.completedAt),
                took(attempt.startedAt, attempt.completedAt),
                Text(f"{attempt.status}: {error}"[:120], style="red"),
                key=f"attempt:{after}:{index}",
            )
        for branch in timeline.branches.get(after, []):
            state = "active" if branch.active else (branch.reason or "done")
            table.add_row(
                "",
                Text("↳ fork", style="bold yellow"),
                short(branch.thread, 10),
                "",
                "",
                Text(f"thread {branch.thread} ({state}, {branch.own_steps} own step{'s' if branch.own_steps != 1 else ''})", style="yellow"),
                key=f"branch:{branch.thread}",
            )

    def show_entry(self, key: str) -> None:
        kind, _, rest = key.partition(":")
        output, body, prompt, detail = "", "", "", ""
        self.selected_step = key
        self.app.refresh_bindings()  # fork/edit depend on the selected row
        if kind == "step":
            try:
                details = step_details(self.repo, rest)
            except UwfError as exc:
                self.app.notify(exc.message, severity="error")
                return
            output = Syntax(_yaml(details.output), "yaml", word_wrap=True)  # in the schema's field order
            step = next((s for s in self.timeline.steps if s.hash == rest), None) if self.timeline else None
            body = step_body(self.store, step) if step is not None else ""
            prompt = details.prompt or "(the agent did not record its prompt)"
            detail = _detail_view(details)
        elif kind == "start":
            start = self.timeline.context.start if self.timeline else None
            output = Syntax(_yaml(start.to_payload()), "yaml", word_wrap=True) if start else ""
            body = start.prompt if start else ""
        elif kind == "attempt":
            head, _, index = rest.rpartition(":")
            attempt = self.timeline.attempts.get(head, [])[int(index)] if self.timeline else None
            output = _attempt_view(attempt) if attempt else ""
            body = (attempt.stderr if attempt else None) or "(no stderr recorded)"
        elif kind == "branch":
            output = f"Fork: thread {rest}. Enter opens it."
        elif kind == "more":
            output = "Earlier steps are not listed yet: enter shows more of them."
        self.query_one("#step-output", Static).update(output)
        self.query_one("#step-body", Static).update(body)
        self.query_one("#step-prompt", Static).update(prompt)
        self.query_one("#step-detail", Static).update(detail)

    def current_thread(self) -> str | None:
        """The thread under the list's cursor now. Keys act on this, not on the last handled
        highlight event: in a burst like `j s` the event of `j` is still queued when `s` runs."""
        return _row_at_cursor(self.thread_table) or self.selected_thread

    def current_entry(self) -> str | None:
        """The timeline row under the cursor now, when it belongs to the current thread."""
        if self.timeline is None or self.timeline.info.thread != self.current_thread():
            return None
        return _row_at_cursor(self.timeline_table)

    def selected_step_hash(self) -> str | None:
        key = self.current_entry() or ""
        kind, _, rest = key.partition(":")
        return rest if kind in ("step", "start") else None

    # -- filter and log ------------------------------------------------------------------

    def toggle_filter(self) -> None:
        box = self.query_one("#thread-filter", Input)
        box.remove_class("hidden")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "thread-filter":
            self.filter_text = event.value.strip()
            self.reload()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "thread-filter":
            if not event.value.strip():
                event.input.add_class("hidden")
            self.thread_table.focus()

    def clear_filter(self) -> None:
        box = self.query_one("#thread-filter", Input)
        box.value = ""
        box.add_class("hidden")
        self.filter_text = ""
        self.reload()
        self.thread_table.focus()

    def log_line(self, thread: str, line: str, style: str = "") -> None:
        self.query_one("#log", RichLog).write(Text.assemble((short(thread, 10) + " ", "dim"), (line, style)))


def _row_at_cursor(table: DataTable) -> str | None:
    if not table.row_count:
        return None
    try:
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
    except Exception:  # the cursor is past the rows while the table refills
        return None
    return str(key) if key is not None else None


def _attempt_view(attempt) -> Text:
    """A failed attempt from runs.jsonl as a person reads it: what, when, how long, why."""
    text = Text()
    style = STATUS_STYLES.get("killed" if attempt.status == "killed" else "failed", "")
    text.append(f"✗ {attempt.status}", style=style)
    text.append(f"   {when(attempt.startedAt)} → {clock(attempt.completedAt)} ({took(attempt.startedAt, attempt.completedAt) or '—'})\n\n")
    for label, value in (("role", attempt.role), ("agent", attempt.agent), ("head", f"{attempt.head} (it did not move)")):
        text.append(f"{label:<7}", style="bold")
        text.append(f"{value or '—'}\n")
    text.append("error  ", style="bold")
    text.append(f"{attempt.error or attempt.status}\n", style="red")
    if attempt.stderr:
        text.append("\nstderr (whole, in the Body tab):\n", style="dim")
        text.append("\n".join(attempt.stderr.strip().splitlines()[-12:]), style="grey70")
    return text


def _yaml(value: object) -> str:
    import yaml

    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True)


def _detail_view(details) -> Text:
    """The detail node made readable: agent, extract layer, usage, then each turn."""
    payload = details.detail if isinstance(details.detail, dict) else {"value": details.detail}
    text = Text()
    text.append(f"detail {details.detail_hash} ({details.detail_type or 'untyped'})\n", style="dim")
    for key in ("agent", "protocol", "model", "extract", "corrections", "child", "childThread"):
        if key in payload:
            text.append(f"{key}: ", style="bold")
            text.append(f"{payload[key]}\n")
    usage = payload.get("usage")
    if isinstance(usage, dict):
        text.append("tokens: ", style="bold")
        text.append(f"{usage.get('totalTokens', 0):,} ({usage.get('promptTokens', 0):,} prompt, {usage.get('completionTokens', 0):,} completion, {usage.get('requests', 0)} requests)\n")
    for turn in payload.get("turns") or []:
        if not isinstance(turn, dict):
            continue
        if turn.get("role") == "tool":
            mark = "✓" if turn.get("ok") else "✗"
            text.append(f"  {mark} {turn.get('name')}: ", style="green" if turn.get("ok") else "red")
            text.append(f"{' '.join(str(turn.get('result', '')).split())[:200]}\n", style="dim")
        else:
            for call in turn.get("toolCalls") or []:
                text.append(f"→ {call.get('name')}({str(call.get('arguments'))[:160]})\n", style="yellow")
            content = " ".join(str(turn.get("content") or "").split())
            if content:
                text.append(f"{turn.get('role')}: {content[:300]}\n")
    rest = {k: v for k, v in payload.items() if k != "turns"}
    text.append("\n")
    text.append(json.dumps(rest, indent=2, ensure_ascii=False), style="grey70")
    return text
