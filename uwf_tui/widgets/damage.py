"""The banner a damaged root gets: what could not be read, and what `uwf cas fsck` says of it
(checked once per damage, in a worker). A damaged root is shown, not fatal."""

from __future__ import annotations

from functools import partial

from rich.text import Text
from textual.widgets import Static

from .. import workers


class DamageBanner(Static):
    def __init__(self) -> None:
        super().__init__("", id="damage", classes="hidden")
        self.damage: str | None = None
        self.fsck_summary: str | None = None  # what fsck said of the damage shown
        self.fsck_running = False

    def show(self, message: str) -> None:
        """Stays until a reload reads cleanly (`clear`)."""
        first = self.has_class("hidden")
        if message != self.damage and not self.fsck_running:
            self.fsck_summary = None  # another damage: check again
        self.damage = message
        checking = self.fsck_summary or "`uwf cas fsck` is checking the whole root…"
        # Three lines, each cut where the screen ends (app.tcss): the damage, what fsck says, and
        # what to do; the log has the first two whole.
        lines = ("⚠ " + " ".join(message.split()), "  " + " ".join(checking.split()), "  The views show what can still be read; the log has it whole.")
        self.update(Text("\n".join(lines)))  # literal: it quotes files
        self.remove_class("hidden")
        if first:
            self.app.notify(message, title="the root is damaged", severity="error", timeout=10, markup=False)
        if self.fsck_summary is None and not self.fsck_running:
            self.fsck_running = True
            self.app.run_worker(partial(workers.check_root, self.app.repo, self.app.post_message), thread=True, exit_on_error=False, group="fsck")

    def fsck_done(self, summary: str) -> None:
        self.fsck_running = False
        self.fsck_summary = summary
        if self.damage:
            self.app.note(summary, severity="error")  # whole, where the banner cuts it
        if not self.has_class("hidden") and self.damage:
            self.show(self.damage)

    def clear(self) -> None:
        self.add_class("hidden")
