"""Moving focus between a view's panes with the keyboard (h/l, Enter, Esc), the same in every view."""

from __future__ import annotations

from textual.containers import ScrollableContainer
from textual.widget import Widget
from textual.widgets import TabbedContent, TabPane


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
    panes[target].focus()
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
        active_scroll(tabs).focus()
