"""The list of threads (active and archived): status, id, workflow name, step count, age, the
prompt's first words (what tells threads apart), and the `/` filter above it. Forks, candidates
of agents side by side and a map's children are drawn under their parent, each saying which it is
of whom. Step counts, prompts and lineage need whole chains, so they are read off the UI thread."""

from __future__ import annotations

import threading
from typing import Callable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input

from uwf_core.api import Lineage, LineageReader, Repo, ThreadInfo, UwfError, context_of, ulid_timestamp_ms

from ..formatting import STATUS_ICONS, STATUS_STYLES, TAG, age, tag
from .panes import RowTable, focus_now
from .timeline import row_at_cursor
from .text_fields import BurstInput

AGE_SECONDS = 5.0
COLUMNS = (("status", 12), ("id", TAG), ("workflow", 14), ("steps", 5), ("updated", 7))  # then the prompt
SORTS = ("status", "workflow", "steps", "updated", "prompt")  # what `o` sorts by, in turn
SORT_STATUS = ("asking", "running", "paused", "queued", "mapping", "waiting", "failed", "damaged", "budget", "max-steps", "cancelled", "killed", "done")  # what needs a person first


class ThreadList(Vertical):
    def __init__(self, repo: Repo, on_filter: Callable[[], None], on_lineage: Callable[[], None], **kwargs) -> None:
        super().__init__(**kwargs)
        self.repo = repo
        self.on_filter = on_filter  # the view reloads the list through the new filter
        self.on_lineage = on_lineage  # the view draws its timeline's fork rows again (whose fork each is)
        self.counts: dict[str, int] = {}  # head -> steps behind it (a head's count never changes)
        self.last_count: dict[str, int] = {}  # thread -> the count of its newest head read
        self.prompts: dict[str, str] = {}  # thread -> its prompt, on one line (known before a new head's chain is read)
        self.updated: dict[str, int | None] = {}  # thread -> when its head was written (ms)
        self.lineages: dict[str, Lineage] = {}  # thread -> where it came from, for those that have a parent
        self.lineage_reader = LineageReader(repo)
        self.reading = threading.Lock()  # a cancelled read may still be running: one reads lineage at a time
        self.filter_text = ""
        self.sort_by: str | None = None  # a column of SORTS, or None: the order the core lists
        self.shown: tuple | None = None  # fill's arguments, to draw the rows again for a new width
        # Held, not queried: timers and worker callbacks may land while the tree is torn down.
        self.table = RowTable(id="threads", cursor_type="row", zebra_stripes=True)
        self.filter_box = BurstInput(placeholder="filter threads (workflow, id, status, prompt)", id="thread-filter", classes="hidden")

    def compose(self) -> ComposeResult:
        yield self.filter_box
        yield self.table

    def on_mount(self) -> None:
        self.set_interval(AGE_SECONDS, self.refresh_ages)  # "updated 2s ago" must not stay 2s

    def _columns(self) -> None:
        """Status, the thread's tag (the end of its id: what tells threads of one workflow and
        prompt apart, at every width), workflow, steps, age, then the prompt as wide as the rest
        leaves."""
        if self.table.columns:
            return
        table = self.table
        columns = {label: table.add_column(label, width=width, key=label) for label, width in COLUMNS}
        self.steps_column, self.updated_column = columns["steps"], columns["updated"]
        self.prompt_column = table.add_flex_column("prompt")
        self._label_sort()

    def _label_sort(self) -> None:
        """The sorted column's header ends in ▼ (a Text label: never read as markup), its column
        widened for it where the header is as wide as the column (steps, updated). The default
        order is the ids' (ULIDs: newest first), so `id` says it."""
        widths = dict(COLUMNS)
        for key, column in self.table.columns.items():
            name = str(key.value)
            label = f"{name} ▼" if name == (self.sort_by or "id") else name
            column.label = Text(label)
            if name in widths:
                column.width = max(widths[name], len(label))
        self.table.fit_flex()
        self.table.refresh()

    def fill(self, infos: list[ThreadInfo], statuses: dict[str, str], name_of, keep: str | None) -> None:
        """Rows for the threads the filter lets through; the cursor stays on `keep` when it can."""
        self.shown = (infos, statuses, name_of, keep)
        table = self.table
        table.clear()
        self._columns()
        self.updated = {}
        self._label_sort()
        for info, depth in self._ordered(infos, statuses, name_of):
            status = statuses.get(info.thread, "")
            name = name_of(info.workflow)
            prompt = self._prompt(info.thread)
            if self.filter_text and self.filter_text.lower() not in f"{info.thread} {name} {status} {prompt}".lower():
                continue
            updated = self._changed_at(info)
            style = STATUS_STYLES.get(status, "")
            self.updated[info.thread] = updated
            table.add_row(
                Text(f"{STATUS_ICONS.get(status, '?')} {status}", style=style),
                Text(tag(info.thread), style="dim"),
                " " * min(depth, 2) + name,  # under its parent
                self._count(info),
                age(updated),
                Text(prompt, style="dim"),
                key=info.thread,
            )
        missing = [info for info in infos if info.head not in self.counts or info.thread not in self.prompts]  # a new thread at a known head too
        if missing:
            self.read_chains(missing, infos)
        if keep and keep in table.rows:
            table.move_cursor(row=table.get_row_index(keep))
        elif table.row_count:
            table.move_cursor(row=0)

    def _count(self, info: ThreadInfo) -> str:
        """Its head's step count; while a new head's is read, the last one known (a thread that
        runs would otherwise read `…` at every reload)."""
        count = self.counts.get(info.head, self.last_count.get(info.thread))
        return str(count) if count is not None else "…"

    def _prompt(self, thread: str) -> str:
        """The prompt's first words, after where the thread came from (a fork, a candidate, a child)."""
        prompt = self.prompts.get(thread, "…")
        lineage = self.lineages.get(thread)
        return f"{relation(lineage)}: {prompt}" if lineage is not None else prompt

    def _ordered(self, infos: list[ThreadInfo], statuses: dict[str, str], name_of) -> list[tuple[ThreadInfo, int]]:
        """The threads (each with how deep under a parent it is drawn) in the order `o` (or a
        click on a column's header) chose; by default newest first (by id), each thread's forks,
        candidates and children under it. Each sort's ties keep that order."""
        key = {
            "status": lambda info: SORT_STATUS.index(statuses.get(info.thread)) if statuses.get(info.thread) in SORT_STATUS else len(SORT_STATUS),
            "workflow": lambda info: name_of(info.workflow).lower(),
            "steps": lambda info: -self.counts.get(info.head, -1),
            "updated": lambda info: -(self._changed_at(info) or 0),
            "prompt": lambda info: (self.prompts.get(info.thread) or "").lower(),
        }.get(self.sort_by or "")
        if key is not None:
            return [(info, 0) for info in sorted(infos, key=key)]
        return grouped(infos, self.lineages)

    def sort(self, column: str | None = None) -> str:
        """Sort by `column`, or by the next one (`o`); returns what the list is sorted by now."""
        if column is None:
            order = [None, *SORTS]
            column = order[(order.index(self.sort_by) + 1) % len(order)]
        self.sort_by = column if column in SORTS else None
        if self.shown is not None:
            infos, statuses, name_of, _ = self.shown
            self.fill(infos, statuses, name_of, row_at_cursor(self.table))
        return self.sort_by or "id: newest first, forks under their parents"

    def on_data_table_header_selected(self, event) -> None:
        event.stop()
        label = str(event.label).rstrip(" ▲▼")
        self.app.notify(f"threads sorted by {self.sort(label)}")

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

    @work(thread=True, exclusive=True, group="counts", exit_on_error=False, description="read_chains")
    def read_chains(self, infos: list[ThreadInfo], every: list[ThreadInfo]) -> None:
        """Each new head's step count and prompt (a chain read once; the Repo caches it by head),
        and where every thread came from (read once per thread, then kept)."""
        found: list[tuple[str, str, int, str]] = []
        for info in infos:
            try:
                context = context_of(self.repo, info.head)
            except UwfError:
                continue  # the damage banner says why
            self.counts[info.head] = self.last_count[info.thread] = len(context.steps)
            self.prompts[info.thread] = " ".join(context.start.prompt.split())
            found.append((info.thread, info.head, self.counts[info.head], self.prompts[info.thread]))
        with self.reading:
            lineages = self.lineage_reader.read(every)
        self.app.call_from_thread(self._show_chains, found, lineages)

    def _show_chains(self, found: list[tuple[str, str, int, str]], lineages: dict[str, Lineage]) -> None:
        regroup = lineages != self.lineages
        self.lineages = lineages
        if regroup:
            self.on_lineage()
        if (regroup or (found and (self.sort_by in ("steps", "prompt") or self.filter_text))) and self.shown is not None:
            infos, statuses, name_of, _ = self.shown  # the order, or what the filter lets through, depends on what was just read
            self.fill(infos, statuses, name_of, row_at_cursor(self.table))
            return
        for thread, _head, count, prompt in found:
            if thread in self.table.rows:
                self.table.update_cell(thread, self.steps_column, str(count))
                self.table.update_cell(thread, self.prompt_column, Text(self._prompt(thread), style="dim"))

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


def relation(lineage: Lineage) -> str:
    """Where a thread came from, in a few words: `fork of 7Q4655`, `item 2 of 5SYCBY`,
    `codex, candidate of ZW4E1H`."""
    parent = tag(lineage.parent)
    if lineage.kind == "child":
        return f"↳ item {lineage.label} of {parent}"
    if lineage.kind == "candidate":
        return f"↳ {lineage.label or 'an agent'}, candidate of {parent}"
    return f"↳ fork of {parent}"


def grouped(infos: list[ThreadInfo], lineages: dict[str, Lineage]) -> list[tuple[ThreadInfo, int]]:
    """`infos` in their order, each thread's descendants right under it (depth first, oldest
    first), with their depth; a thread whose parent is not listed stands on its own."""
    listed = {info.thread for info in infos}
    under: dict[str, list[ThreadInfo]] = {}
    roots = []
    for info in infos:
        lineage = lineages.get(info.thread)
        if lineage is not None and lineage.parent in listed and lineage.parent != info.thread:
            under.setdefault(lineage.parent, []).append(info)
        else:
            roots.append(info)
    result: list[tuple[ThreadInfo, int]] = []
    placed: set[str] = set()

    def place(info: ThreadInfo, depth: int) -> None:
        if info.thread in placed:
            return
        placed.add(info.thread)
        result.append((info, depth))
        for child in sorted(under.get(info.thread, []), key=lambda child: child.thread):
            place(child, depth + 1)  # oldest first, as they were made: a map's children in item order

    for info in roots:
        place(info, 0)
    result.extend((info, 0) for info in infos if info.thread not in placed)  # a loop in damaged data: still listed
    return result
