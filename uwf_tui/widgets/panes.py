"""Moving focus between a view's panes with the keyboard (h/l, Enter, Esc), the same in every view."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.widget import Widget
from textual.widgets import DataTable, TabbedContent, TabPane

from ..formatting import literal
from .text_fields import BindingsInOrder

# Each view binds Tab itself (not the app with priority), so Tab keeps its place among the keys
# of a burst: a priority key is handled before the keys queued ahead of it.
PANE_KEYS = [
    Binding("tab", "app.focus_pane(1)", "Next pane", show=False),
    Binding("shift+tab", "app.focus_pane(-1)", "Previous pane", show=False),
]


class RowTable(BindingsInOrder, DataTable):
    """A row table whose Enter acts at once, calling its view's enter_row(): DataTable's own
    posts a message, which the keys queued behind Enter (`enter j j`) would overtake. Home and
    End go to the first and last row (a DataTable's scroll sideways), as a Tree's do. A str cell
    shows as written: DataTable reads a str as markup, so every one goes through `literal`. A key
    that comes after its burst moved the focus on goes there (text_fields.KeysFollowFocus)."""

    flex_column = None  # the column (its key) that takes the width the others leave
    FLEX_MIN = 12

    def add_row(self, *cells, height=1, key=None, label=None):
        return super().add_row(*map(_cell, cells), height=height, key=key, label=label)

    def update_cell(self, row_key, column_key, value, *, update_width=False) -> None:
        super().update_cell(row_key, column_key, _cell(value), update_width=update_width)  # update_cell_at comes here too

    def add_flex_column(self, label: str):
        """The last column, as wide as the table leaves it (never less than FLEX_MIN): a wide
        terminal shows more of a prompt or an output, and a cut one ends in an ellipsis."""
        self.flex_column = self.add_column(label, width=self.FLEX_MIN, key=label)
        self.fit_flex()
        self.call_after_refresh(self.fit_flex)  # a table not laid out yet has no width to share
        return self.flex_column

    def on_resize(self) -> None:
        """A new width for the flex column; and the cursor's row stays in sight when the pane
        shrinks (at 80x24 the list gives its rows to the timeline while that has the focus)."""
        self.fit_flex()
        if self.row_count:
            self.call_after_refresh(self._scroll_cursor_into_view)

    def _update_dimensions(self, new_rows) -> None:
        """DataTable measures new rows' cells here (when idle): a column sized to its content may
        have grown, so the flex column takes what is left again."""
        super()._update_dimensions(new_rows)
        self.fit_flex()

    def fit_flex(self) -> None:
        """Give the flex column the width left, in place: no row is drawn again."""
        column = self.columns.get(self.flex_column) if self.flex_column is not None else None
        if column is None or not self.size.width:
            return
        others = sum(other.get_render_width(self) for key, other in self.columns.items() if key != self.flex_column)
        width = max(self.FLEX_MIN, self.scrollable_content_region.width - others - 2 * self.cell_padding)
        if width != column.width:
            column.width = width
            self._clear_caches()
            self.refresh()  # the same height and, sideways, nothing to scroll: no new layout

    def action_scroll_home(self) -> None:
        self.move_cursor(row=0)

    def action_scroll_end(self) -> None:
        self.move_cursor(row=self.row_count - 1)

    def action_select_cursor(self):
        """Enter: the view's enter_row(); what it returns (a dialog's mount) Textual awaits, so
        the keys typed after Enter reach the dialog it opened."""
        view = next((node for node in self.ancestors if hasattr(node, "enter_row")), None)
        if view is None:
            return super().action_select_cursor()
        return view.enter_row(self)


def _cell(value: object) -> object:
    """A cell as written (`literal`), cut at its column's edge with an ellipsis."""
    cell = literal(value)
    if isinstance(cell, Text) and cell.overflow is None:
        cell.no_wrap, cell.overflow = True, "ellipsis"
    return cell


def focus_now(widget: Widget) -> None:
    """Focus at once: Widget.focus() waits behind the queued events, so in a burst (`enter j j`)
    the keys after it would still act on the old focus."""
    widget.screen.set_focus(widget)


def active_scroll(tabs: TabbedContent) -> Widget:
    """The scrollable body of a TabbedContent's active tab (what h/l and Enter focus)."""
    pane = tabs.get_pane(tabs.active) if tabs.active else None
    if pane is None:
        return tabs
    found = pane.query(ScrollableContainer)  # VerticalScroll is one too
    return found.first() if found else pane


def pane_index(panes: list[Widget], focused: Widget | None) -> int | None:
    """Which of `panes` holds the focus (the pane itself or a widget inside it)."""
    node = focused
    while node is not None:
        if node in panes:
            return panes.index(node)
        node = node.parent
    return None


def move_focus(panes: list[Widget], focused: Widget | None, delta: int, *, wrap: bool = False) -> bool:
    """Focus the pane `delta` steps from the focused one (clamped: h/l; round with `wrap`: Tab);
    False when nothing moved."""
    index = pane_index(panes, focused)
    if index is None:
        target = 0
    elif wrap:
        target = (index + delta) % len(panes)
    else:
        target = max(0, min(len(panes) - 1, index + delta))
    if index == target:
        return False
    focus_now(panes[target])
    return True


def switch_tab(tabs: TabbedContent, focused: Widget | None, delta: int) -> None:
    """Show the tab `delta` away from the active one (round); a focus inside the old tab moves
    into the new one."""
    ids = [pane.id for pane in tabs.query(TabPane) if pane.id]
    if not ids or tabs.active not in ids:
        return
    inside = focused is not None and pane_index([active_scroll(tabs)], focused) is not None
    tabs.active = ids[(ids.index(tabs.active) + delta) % len(ids)]
    if inside:
        focus_now(active_scroll(tabs))
