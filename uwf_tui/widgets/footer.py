"""The footer of the keys that apply, drawn again only when they change."""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class SteadyFooter(Footer):
    """Textual's Footer rebuilds every key widget on each refresh of the bindings, and the
    workbench refreshes them on every cursor move (what s, f or D may act on depends on the row):
    ~35 ms of work a keypress, and the footer flickers. This one rebuilds, when Textual's would,
    only if the keys it would show differ from those it shows."""

    shown: tuple | None = None

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        # Called after a refresh: the footer's screen may have been dismissed in between (an
        # attached widget always has one; a detached one raised NoScreen here).
        if not self.is_attached:
            return
        keys = tuple(
            (key, binding.action, binding.description, binding.key_display, enabled, tooltip)
            for key, (_, binding, enabled, tooltip) in self.screen.active_bindings.items()
            if binding.show
        )
        if keys != self.shown:
            self.shown = keys
            await self.recompose()
