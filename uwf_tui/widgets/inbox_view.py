"""The Inbox view: every thread waiting for a person (`uwf inbox`), oldest wait first, and the
selected one's question — what the role is, why it is asked, the whole prompt. Enter (or `a`)
answers it in a form. The list is read off the UI thread whenever the root changes (the app's
poll, or a PostgreSQL root's notification), one read at a time; the cursor stays on its thread
when rows come and go, and moves to the next in line when its own is answered."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Input, Static

from uwf_core.api import InboxItem, Repo

from ..formatting import literal, short, waited, when
from .panes import PANE_KEYS, RowTable, focus_now
from .text_fields import BurstInput
from .timeline import row_at_cursor

# Each as wide as its widest cell, up to these; then the question, as wide as the rest leaves.
# `worker`: the one that asked (queued: it takes the thread up again once answered), or — where
# none will (s steps it in the Threads view).
COLUMNS = (("thread", 10), ("workflow", 14), ("role", 12), ("waits", 5), ("worker", 14))


class InboxTable(RowTable):
    """The inbox's rows. Until the first read is in, Enter and `a` wait (in order) rather than
    act on an empty list: in `i enter` pressed at start, Enter answers the first thread."""

    def __init__(self, **kwargs) -> None:
        super().__init__(id="inbox", cursor_type="row", zebra_stripes=True, **kwargs)
        self.loaded = False
        self.waiting: list = []

    def when_ready(self, action) -> None:
        if self.loaded and not self.waiting:
            action()
        else:
            self.waiting.append(action)

    def ready(self) -> None:
        self.loaded = True
        while self.waiting:
            self.waiting.pop(0)()


class InboxView(Horizontal):
    BINDINGS = PANE_KEYS

    def __init__(self, repo: Repo, **kwargs) -> None:
        super().__init__(**kwargs)
        self.repo = repo
        self.items: dict[str, InboxItem] = {}  # thread -> what it asks, in the order listed
        self.answering: set[str] = set()  # threads whose answer is being recorded now
        self.drafts: dict[str, str] = {}  # thread -> an answer typed and not recorded (esc, or refused)
        self.filter_text = ""
        self.reading = False  # a read of the inbox is under way
        self.read_again = False  # the root changed during it: read once more when it ends
        self.shown: str | None = None  # the thread whose question the right pane shows
        self.widths: list[int] = []  # the columns' widths before the question's
        self.signature: object = None  # what the rows show, to draw them only when it changes
        self.shown_as: tuple | None = None  # what the question pane shows of its thread (show())
        # Held, not queried: a read may land while the tree is torn down.
        self.table = InboxTable()
        self.question = Static("", id="inbox-question")
        self.filter_box = BurstInput(placeholder="filter the inbox (thread, workflow, role, question)", id="inbox-filter", classes="hidden")

    def compose(self) -> ComposeResult:
        with Vertical(id="inbox-list-pane"):
            yield self.filter_box
            yield self.table
        with VerticalScroll(id="inbox-question-scroll"):
            yield self.question

    def on_mount(self) -> None:
        """The first read is the app's to start (app.on_mount), once its worker threads are set up."""
        self._columns([])
        self.question.update(Text("reading the inbox…", style="dim"))

    def _columns(self, rows: list[tuple]) -> None:
        """Columns as wide as their cells (up to COLUMNS' widths), so at 80 columns the question
        keeps the room names shorter than the widest do not take."""
        widths = [max([len(label), *(Text(cell).cell_len if isinstance(cell, str) else cell.cell_len for cell in column)])
                  for (label, _), column in zip(COLUMNS, zip(*rows) if rows else [()] * len(COLUMNS))]
        widths = [min(width, most) for width, (_, most) in zip(widths, COLUMNS)]
        table = self.table
        if table.columns and widths == self.widths:
            return
        self.widths = widths
        table.clear(columns=True)
        for (label, _), width in zip(COLUMNS, widths):
            table.add_column(label, width=width, key=label)
        table.add_flex_column("question")

    # -- reading: one read at a time, off the UI thread -----------------------------------

    def reload(self) -> None:
        """Read the inbox again (the app calls this on every change to the root)."""
        if self.reading:
            self.read_again = True  # a burst of changes costs one more read, not one each
            return
        self.reading = True
        from functools import partial

        from .. import workers

        self.app.run_worker(partial(workers.load_inbox, self.repo, self.app.post_message), thread=True, exit_on_error=False, group="inbox")

    def loaded(self, items: list[InboxItem], error: str | None) -> None:
        """A read is in (InboxLoaded, through the app): the rows, the question, the tab's count."""
        self.reading = False
        if error is not None:
            self.app.notify(f"the inbox could not be read: {error}", severity="error")
        else:
            self.fill(items)
        self.table.ready()
        if self.read_again:
            self.read_again = False
            self.reload()

    def fill(self, items: list[InboxItem]) -> None:
        """The rows again, unless nothing they show changed (a root changes often while agents run)."""
        self.items = {item.thread: item for item in items}
        signature = ([(item.thread, item.head, item.since, item.queued, item.asked_by) for item in items], sorted(self.answering), self.filter_text)
        if signature == self.signature:
            return
        self.signature = signature
        table = self.table
        keep = row_at_cursor(table)
        index = table.cursor_row if table.row_count else 0
        rows = [(item.thread, self._cells(item)) for item in self.listed()]
        table.clear()
        self._columns([cells[:-1] for _, cells in rows])
        for thread, cells in rows:
            table.add_row(*cells, key=thread)
        if keep in table.rows:
            table.move_cursor(row=table.get_row_index(keep))
        elif table.row_count:  # its thread was answered: the next in line, where it was
            table.move_cursor(row=min(index, table.row_count - 1))
        self.show(row_at_cursor(table))

    def listed(self) -> list[InboxItem]:
        needle = self.filter_text.lower()
        return [item for item in self.items.values() if not needle or needle in _haystack(item)]

    def _cells(self, item: InboxItem) -> tuple:
        return (
            short(item.thread, 10),
            item.workflow,
            Text(item.role, style="bold"),
            waited(item.since),
            self._then(item),
            Text(" ".join(_question(item).split()), style="dim"),
        )

    def _then(self, item: InboxItem) -> Text:
        """What happens once it is answered: a worker takes it up (queued), or it waits to be stepped."""
        if item.thread in self.answering:
            return Text("answering…", style="bold green")
        if item.queued:
            return Text(f"⋯ {item.asked_by or 'queued'}", style="blue")
        return Text("—", style="dim")

    def refresh_ages(self) -> None:
        """The waits grow with no change to the root (the app's clock calls this each second)."""
        for thread, item in self.items.items():
            if thread in self.table.rows:
                self.table.update_cell(thread, "waits", waited(item.since))

    def mark_answering(self, thread: str, answering: bool) -> None:
        (self.answering.add if answering else self.answering.discard)(thread)
        if thread in self.table.rows:
            self.fill(list(self.items.values()))  # its worker column may need the room

    @property
    def count(self) -> int:
        return len(self.items)

    # -- the question -------------------------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table is self.table and event.row_key is not None:
            self.show(row_at_cursor(self.table))

    def show(self, thread: str | None) -> None:
        """The question of `thread` in the right pane (drawn again only when it changed: a long
        prompt is not laid out anew on every read), or why there is none."""
        item = self.items.get(thread or "")
        if item is None:
            self.shown = self.shown_as = None
            self.question.update(EMPTY if not self.items else _no_match(self.filter_text))
            return
        if thread != self.shown:
            self.query_one("#inbox-question-scroll", VerticalScroll).scroll_home(animate=False)
        self.shown = thread
        shown_as = (thread, item.head, item.since, item.queued, item.asked_by, thread in self.drafts)
        if shown_as != self.shown_as:
            self.shown_as = shown_as
            self.question.update(question_text(item, thread in self.drafts))

    def selected(self) -> InboxItem | None:
        """The item under the cursor now (not the last highlight handled)."""
        return self.items.get(row_at_cursor(self.table) or "")

    # -- keys: Enter answers, Esc comes back out, / filters --------------------------------

    def panes(self) -> list:
        return [self.table, self.query_one("#inbox-question-scroll", VerticalScroll)]

    def tabs(self) -> None:
        return None  # one question, no tabs

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """A click on the cursor's row: what Enter does (Enter itself calls enter_row() at once)."""
        if event.data_table is self.table:
            self.enter_row(self.table)

    def enter_row(self, table: DataTable):
        """Enter on a thread: its answer form. Returns the form's mount, which Textual awaits, so
        the keys typed right after Enter are the answer's text."""
        if table is self.table:
            return self.app.answer_selected()
        return None

    def back(self) -> bool:
        question = self.panes()[1]
        if self.app.focused is question:
            focus_now(self.table)
        elif self.filter_text or not self.filter_box.has_class("hidden"):
            self.filter_box.value = ""
            self.filter_box.add_class("hidden")
            self.filter_text = ""
            self.fill(list(self.items.values()))
            focus_now(self.table)
        else:
            return False
        return True

    def toggle_filter(self) -> None:
        self.filter_box.remove_class("hidden")
        focus_now(self.filter_box)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input is self.filter_box:
            event.stop()
            self.filter_text = event.value.strip()
            self.fill(list(self.items.values()))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input is self.filter_box:
            event.stop()
            if not event.value.strip():
                self.filter_box.add_class("hidden")
            focus_now(self.table)


def _question(item: InboxItem) -> str:
    """What the row says it asks: the moderator's instruction for this step, else the thread's own
    task (the role's description is the same on every thread of a workflow)."""
    task = next((line.strip() for line in item.task.splitlines() if line.strip()), "")
    return item.instruction or task or item.description or f"answer as {item.role}"


def _haystack(item: InboxItem) -> str:
    return f"{item.thread} {item.workflow} {item.role} {_question(item)}".lower()


def question_text(item: InboxItem, drafted: bool) -> Text:
    """The selected thread's question: who asks what, since when, what happens once answered, then the whole prompt."""
    text = Text()
    text.append(f"{item.role}", style="bold cyan")
    text.append(f" of {item.workflow}", style="bold")
    text.append(f"  ·  thread {item.thread}\n", style="dim")
    if item.description:
        text.append(f"{item.description}\n", style="italic")
    task = next((line.strip() for line in item.task.splitlines() if line.strip()), "")
    if task:
        text.append("task: ", style="bold")
        text.append_text(literal(task + "\n"))  # as the thread's starter wrote it: never markup
    if item.instruction:
        text.append("instruction: ", style="bold")
        text.append(f"{item.instruction}\n")
    text.append("waiting since ", style="bold")
    text.append(f"{when(item.since)}, at head {item.head}\n")
    if item.queued:
        text.append("queued: ", style="bold blue")
        by = f" ({item.asked_by} asked)" if item.asked_by else ""
        text.append(f"once answered, a `uwf worker` takes it up again{by}\n")
    else:
        text.append("not queued: ", style="bold")
        text.append("once answered, step it with s in the Threads view (or d queues it for workers)\n")
    text.append("enter", style="bold yellow")
    text.append(" or ")
    text.append("a", style="bold yellow")
    text.append(" answers it" + (" (your unsent answer is kept)" if drafted else "") + "\n\n")
    text.append("── the prompt ──\n", style="dim")
    text.append_text(literal(item.prompt))  # a prompt as written: never markup
    return text


def _no_match(needle: str) -> Text:
    return Text.assemble(("No thread in the inbox matches ", "bold"), (repr(needle), "bold yellow"), (": esc clears the filter.", "bold"))


EMPTY = Text.assemble(
    ("Nobody is asked anything.\n\n", "bold"),
    "A thread comes here when its next role's agent is ",
    ("human", "bold"),
    " and nobody is stepping it: one started with ",
    ("--agent reviewer=human", "bold"),
    " (or with human typed for a role after n), or a role that agentOverrides gives to ",
    ("human", "bold"),
    ". A ",
    ("uwf worker", "bold"),
    " that reaches such a role leaves the thread here, asking; once it is answered, the worker takes it up again.",
)
