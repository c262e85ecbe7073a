"""Which view is shown and the moves inside it: the four views (1–4, i), their panes (tab, h/l)
and tabs ([ and ]), the cursor keys, zoom, filter, and `y`, the selection's hash to the clipboard.

Mixed into UwfApp (app.py): `self` is the app.
"""

from __future__ import annotations

from textual.widgets import TabbedContent

from . import moves
from .widgets.cas_view import CasView
from .widgets.inbox_view import InboxView
from .widgets.panes import focus_now, move_focus, switch_tab
from .widgets.threads_view import ThreadsView
from .widgets.workflows_view import WorkflowsView


class ViewKeys:
    @property
    def threads_view(self) -> ThreadsView:
        return self.held_views[1]

    @property
    def cas_view(self) -> CasView:
        return self.held_views[2]

    @property
    def inbox_view(self) -> InboxView:
        return self.held_views[3]

    @property
    def current_view(self) -> str:
        return self.query_one("#views", TabbedContent).active.removeprefix("pane-")

    def action_view(self, name: str, _twin: str = "") -> None:
        self.query_one("#views", TabbedContent).active = f"pane-{name}"
        focus = {"workflows": "#workflows", "threads": "#threads", "cas": "#cas-tree", "inbox": "#inbox"}[name]
        focus_now(self.query_one(focus))  # at once: the keys after `1` act in the view it opens

    def action_focus_pane(self, delta: int) -> None:
        """Tab / shift+tab (bound by each view, so they come in order with the other keys): the
        next or previous pane of the view, round. In a dialog they are the screen's: its fields."""
        move_focus(self.view_widget.panes(), self.focused, delta, wrap=True)

    def action_switch_tab(self, delta: int) -> None:
        """[ and ]: the previous or next tab of the view's tabbed pane; the focus follows when it
        was in the tab being left, so j/k scroll what is shown."""
        tabs = self.view_widget.tabs()
        if tabs is not None:
            switch_tab(tabs, self.focused, delta)

    @property
    def view_widget(self):
        return self.query_one({"workflows": WorkflowsView, "threads": ThreadsView, "cas": CasView, "inbox": InboxView}[self.current_view])

    def action_cursor_down(self) -> None:
        moves.step(self.focused, 1)

    def action_cursor_up(self) -> None:
        moves.step(self.focused, -1)

    def action_copy_hash(self) -> None:
        """y: the selected node's hash (a step, a start, a CAS node) or thread id, to the terminal's
        clipboard through OSC 52, which reaches the local clipboard over ssh and through tmux
        (with `set -g set-clipboard on`)."""
        self._after_keys("copy_hash", self._copy_hash)

    def _copy_hash(self) -> None:
        if self.current_view == "threads":
            view = self.threads_view
            on_list = self.focused is not None and view.thread_list in self.focused.ancestors_with_self
            value = view.current_thread() if on_list else view.selected_node() or view.current_thread()  # the list's row: its thread
        elif self.current_view == "cas":
            value = self.query_one(CasView).shown
        elif self.current_view == "inbox":
            item = self.inbox_view.selected()
            value = item.thread if item is not None else None
        else:
            value = None
        if not value:
            self.notify("nothing selected to copy", severity="warning")
            return
        self.copy_to_clipboard(value)
        self.notify(f"copied {value}")

    def action_zoom(self) -> None:
        moves.zoom(self.screen, self.focused)

    def action_half_page(self, direction: int) -> None:
        moves.half_page(self.focused, direction)

    def action_last_row(self) -> None:
        moves.last_row(self.focused)

    def action_pane(self, delta: int) -> None:
        """h/l: the pane left or right of the focused one, within the current view."""
        move_focus(self.view_widget.panes(), self.focused, delta)

    def action_back(self) -> None:
        """Esc: out of the step pane, the timeline, the filter, one level at a time."""
        self.view_widget.back()

    def action_filter(self) -> None:
        """`/` filters the list of the view you are in (threads, workflows, the CAS roots)."""
        self.view_widget.toggle_filter()
