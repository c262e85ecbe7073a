"""Text fields whose editing keys keep their place in a burst.

Textual inserts a printable key in the field's own key handler, but runs backspace, delete and
the cursor keys as bindings, after the key event has bubbled up to the app: in a burst (a fast
typist, or a terminal that delivers `x<BS>w` in one read) the characters typed after them land
first, so `x backspace w` leaves `x`. These fields run their own bindings in their key handler,
in the order the keys came.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input, TextArea


class _OwnBindingsInOrder:
    async def _on_key(self, event: events.Key) -> None:
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                event.stop()
                event.prevent_default()
                return
        await super()._on_key(event)


class BurstInput(_OwnBindingsInOrder, Input):
    pass


class BurstTextArea(_OwnBindingsInOrder, TextArea):
    pass
