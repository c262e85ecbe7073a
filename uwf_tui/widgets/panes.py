"""Moving focus between a view's panes with the keyboard (h/l, Enter, Esc), the same in every view."""

from __future__ import annotations

from textual.containers import ScrollableContainer
from textual.widget import Widget
from textual.widgets import TabbedContent


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


def move_focus(panes: list[Widget], focused: Widget | None, delta: int) -> bool:
    """Focus the pane `delta` steps from the focused one (clamped); False when nothing moved."""
    index = pane_index(panes, focused)
    target = 0 if index is None else max(0, min(len(panes) - 1, index + delta))
    if index == target:
        return False
    panes[target].focus()
    return True
