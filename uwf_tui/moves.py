"""Moving in the focused pane, the same in every view: j/k, ctrl+d/ctrl+u, g g and G, and z's zoom. A
row table or tree moves its cursor (a timeline waiting for its rows first, like every key of a
burst); a text pane scrolls."""

from __future__ import annotations

from textual.widgets import DataTable, TabbedContent, Tree


def step(widget, delta: int) -> None:
    """j/k: one row, or one line of a text pane."""
    if isinstance(widget, (DataTable, Tree)):
        (widget.action_cursor_down if delta > 0 else widget.action_cursor_up)()
    elif widget is not None:
        scroll_by(widget, delta)


def half_page(widget, direction: int) -> None:
    """ctrl+d / ctrl+u: half the pane's height down or up, as in vim, less and lazygit."""
    if widget is None:
        return
    lines = max(1, widget.size.height // 2) * direction
    if isinstance(widget, DataTable):
        move = lambda: widget.move_cursor(row=max(0, min(widget.row_count - 1, widget.cursor_row + lines)))  # noqa: E731
        getattr(widget, "when_ready", lambda action: action())(move)
    elif isinstance(widget, Tree):
        widget.move_cursor_to_line(max(0, min(widget.last_line, widget.cursor_line + lines)))
    else:
        scroll_by(widget, lines)


def first_row(widget) -> None:
    """g g: the first row (vim's), like home."""
    if isinstance(widget, (DataTable, Tree)):
        widget.action_scroll_home()
    elif widget is not None:
        widget.scroll_home(animate=False)


def last_row(widget) -> None:
    """G: the last row (vim's), like end."""
    if isinstance(widget, (DataTable, Tree)):
        widget.action_scroll_end()
    elif widget is not None:
        widget.scroll_end(animate=False)


def zoom(screen, widget) -> None:
    """z: the focused pane over the whole screen (the others hidden), and back. A pane of tabs
    (a step's Output, Body…; a workflow's Graph, Roles, YAML) zooms whole, its tabs with it:
    Textual would not zoom the scrolling body inside (it cannot be maximized on its own)."""
    if screen.maximized is not None:
        screen.minimize()
        return
    if widget is None:
        return
    if widget.allow_maximize:
        screen.maximized = widget
    else:
        screen.maximized = next((node for node in widget.ancestors if isinstance(node, TabbedContent)), widget)


def scroll_by(widget, lines: int) -> None:
    """j/k in a text pane. After the next layout, so content shown by the keys before it (Enter
    on a workflow) can be scrolled; immediate, so each j of a burst starts from the last one's
    target (a deferred scroll starts from the old one, and a burst scrolled once)."""

    def scroll() -> None:
        if widget.allow_vertical_scroll:
            widget.scroll_to(y=widget.scroll_target_y + lines, animate=False, immediate=True)

    widget.call_after_refresh(scroll)
