"""The list of threads (active and archived): status, workflow name, step count, age, the
prompt's first words (what tells threads apart), and the `/` filter above it. Step counts and
prompts need whole chains, so they are read off the UI thread."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input

from uwf_core.api import Repo, ThreadInfo, UwfError, context_of, ulid_timestamp_ms

from ..formatting import STATUS_ICONS, STATUS_STYLES, age, short
from .panes import RowTable, focus_now
from .text_fields import BurstInput

AGE_SECONDS = 5.0


class ThreadList(Vertical):
    def __init__(self, repo: Repo, on_filter: Callable[[], None], **kwargs) -> None:
        super().__init__(**kwargs)
        self.repo = repo
        self.on_filter = on_filter  # the view reloads the list through the new filter
        self.counts: dict[str, int] = {}  # head -> steps behind it (a head's count never changes)
        self.prompts: dict[str, str] = {}  # head -> its thread's prompt, on one line
        self.updated: dict[str, int | None] = {}  # thread -> when its head was written (ms)
        self.filter_text = ""
        # Held, not queried: timers and worker callbacks may land while the tree is torn down.
        self.table = RowTable(id="threads", cursor_type="row", zebra_stripes=True)
        self.filter_box = BurstInput(placeholder="filter threads (workflow, id, status, prompt)", id="thread-filter", classes="hidden")

    def compose(self) -> ComposeResult:
        yield self.filter_box
        yield self.table

    def on_mount(self) -> None:
        # The prompt comes last and is cut at the pane's edge: as many of its words as the width allows.
        columns = {label: self.table.add_column(label, width=width) for label, width in
                   ((" ", 1), ("thread", 10), ("workflow", 14), ("status", 9), ("steps", 5), ("updated", 8), ("prompt", 60))}
        self.steps_column, self.updated_column, self.prompt_column = columns["steps"], columns["updated"], columns["prompt"]
        self.set_interval(AGE_SECONDS, self.refresh_ages)  # "updated 2s ago" must not stay 2s

    def fill(self, infos: list[ThreadInfo], statuses: dict[str, str], name_of, keep: str | None) -> None:
        """Rows for the threads the filter lets through; the cursor stays on `keep` when it can."""
        table = self.table
        table.clear()
        self.updated = {}
        for info in infos:
            status = statuses.get(info.thread, "")
            name = name_of(info.workflow)
            prompt = self.prompts.get(info.head)
            if self.filter_text and self.filter_text.lower() not in f"{info.thread} {name} {status} {prompt or ''}".lower():
                continue
            updated = self._changed_at(info)
            style = STATUS_STYLES.get(status, "")
            self.updated[info.thread] = updated
            table.add_row(
                Text(STATUS_ICONS.get(status, "?"), style=style),
                short(info.thread, 10),
                name,
                Text(status, style=style),
                str(self.counts[info.head]) if info.head in self.counts else "…",
                age(updated),
                Text(prompt if prompt is not None else "…", style="dim"),
                key=info.thread,
            )
        missing = [info for info in infos if info.head not in self.counts]
        if missing:
            self.read_chains(missing)
        if keep and keep in table.rows:
            table.move_cursor(row=table.get_row_index(keep))
        elif table.row_count:
            table.move_cursor(row=0)

    def first_thread(self) -> str | None:
        return str(self.table.coordinate_to_cell_key((0, 0)).row_key.value) if self.table.row_count else None

    def _changed_at(self, info: ThreadInfo) -> int | None:
        """When the thread last changed: its head was written, it was created (a fork's head is
        an old node, its id is new) or it was archived."""
        try:
            written = self.repo.nodes.get(info.head).timestamp
        except UwfError:
            written = None
        return max(filter(None, (written, ulid_timestamp_ms(info.thread), info.completed_at)), default=None)

    @work(thread=True, exclusive=True, group="counts", exit_on_error=False)
    def read_chains(self, infos: list[ThreadInfo]) -> None:
        """Each head's step count and prompt (a chain read once; the Repo caches it by head)."""
        found: list[tuple[str, str, int, str]] = []
        for info in infos:
            try:
                context = context_of(self.repo, info.head)
            except UwfError:
                continue  # the damage banner says why
            self.counts[info.head] = len(context.steps)
            self.prompts[info.head] = " ".join(context.start.prompt.split())
            found.append((info.thread, info.head, self.counts[info.head], self.prompts[info.head]))
        self.app.call_from_thread(self._show_chains, found)

    def _show_chains(self, found: list[tuple[str, str, int, str]]) -> None:
        for thread, _head, count, prompt in found:
            if thread in self.table.rows:
                self.table.update_cell(thread, self.steps_column, str(count))
                self.table.update_cell(thread, self.prompt_column, Text(prompt, style="dim"))

    def refresh_ages(self) -> None:
        """Advance the "updated" column (ages grow with no change to the root)."""
        for thread, updated in self.updated.items():
            if thread in self.table.rows:
                self.table.update_cell(thread, self.updated_column, age(updated))

    # -- the filter ----------------------------------------------------------------------

    @property
    def filter_open(self) -> bool:
        return bool(self.filter_text) or not self.filter_box.has_class("hidden")

    def open_filter(self) -> None:
        self.filter_box.remove_class("hidden")
        self.add_class("-filtering")  # a short terminal gives the list the rows the field takes (app.tcss)
        focus_now(self.filter_box)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.filter_text = event.value.strip()
        self.on_filter()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value.strip():
            self.filter_box.add_class("hidden")
            self.remove_class("-filtering")
        focus_now(self.table)

    def clear_filter(self) -> None:
        self.filter_box.value = ""
        self.filter_box.add_class("hidden")
        self.remove_class("-filtering")
        self.filter_text = ""
        self.on_filter()
        focus_now(self.table)

