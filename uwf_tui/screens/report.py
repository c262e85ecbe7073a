"""A read-only view over the app (the diff of two steps, the preview of a thread's next step): a
heading, a body that scrolls (j/k, home/end, the mouse) and esc back. Its report is one core call,
made in a worker that posts ReportReady; the body says "reading…" until it comes."""

from __future__ import annotations

from functools import partial
from typing import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Header, Static

from uwf_core.api import Repo

from .. import workers
from ..messages import ReportReady
from ..widgets.footer import SteadyFooter
from ..widgets.panes import focus_now


class ReportScreen(Screen[None]):
    # g: the top (there is no hash to go to from here; so `g g` is vim's top too)
    BINDINGS = [Binding("escape", "back", "Back", id="report-back", tooltip="close this view"), Binding("g", "top", show=False)]

    def __init__(self, repo: Repo, call: Callable, args: tuple, heading: Text | str) -> None:
        super().__init__()
        self.repo = repo
        self.call = call
        self.args = args
        self.heading = heading
        self.report = None  # the core's record, once read
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self.heading, classes="report-title")
        with VerticalScroll(id="report-body"):
            yield Static(Text("reading…", style="dim"), id="report-loading")
        yield SteadyFooter(compact=True)

    @property
    def body(self) -> VerticalScroll:
        return self.query_one("#report-body", VerticalScroll)

    def on_mount(self) -> None:
        focus_now(self.body)  # at once: j/k typed right after the key that opened this view scroll it
        self.run_worker(
            partial(workers.report, self.repo, self.call, self.args, self.post_message), thread=True, exit_on_error=False, group="report"
        )

    async def on_report_ready(self, message: ReportReady) -> None:
        self.report, self.error = message.value, message.error
        body = self.body
        await body.remove_children()
        if message.error is not None:
            await body.mount(Static(Text(message.error, style="bold red"), classes="report-error"))
        else:
            await body.mount_all(self.render_report(message.value))

    def render_report(self, report) -> list[Widget]:
        """The body's widgets for the core's record (each screen draws its own)."""
        raise NotImplementedError

    def action_top(self) -> None:
        self.body.scroll_home(animate=False)

    def action_back(self) -> None:
        self.dismiss()
