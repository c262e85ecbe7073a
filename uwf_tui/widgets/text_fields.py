"""Text fields whose editing keys keep their place in a burst.

Textual inserts a printable key in the field's own key handler, but runs backspace, delete and
the cursor keys as bindings, after the key event has bubbled up to the app: in a burst (a fast
typist, or a terminal that delivers `x<BS>w` in one read) the characters typed after them land
first, so `x backspace w` leaves `x`. These fields run their own bindings in their key handler,
in the order the keys came.

And a burst's keys follow the focus: the app hands each key to the widget focused when the key
arrives, so in `/thr` (or `n` and a prompt typed at once) `t h r` were queued on the list before
`/` moved the focus to the filter, and were lost there — or worse, ran as the list's keys (`r`
runs a thread). Every widget that can hand the focus on passes a key that reaches it after the
focus moved to the widget that has it now, in order.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input, TextArea, Tree


class KeysFollowFocus:
    """A key that reaches this widget after an earlier key of its burst moved the focus away goes
    on to the focused widget (a field, a dialog's field, another pane), as if typed after it.

    Textual calls the `_on_key` of each class in the MRO in turn, until one prevents the default:
    these mixins handle what is theirs and stop the rest, and otherwise leave the key to the
    classes after them (no super() call, which would run those twice)."""

    def _focus_elsewhere(self):
        """The widget that has the focus now, when it is not this one or inside it."""
        focused = self.app.focused
        return focused if focused is not None and focused is not self and self not in focused.ancestors else None

    async def _on_key(self, event: events.Key) -> None:
        focused = self._focus_elsewhere()
        if focused is not None:
            event.stop()
            event.prevent_default()
            screen = focused.screen  # its priority bindings come first, as they would for a key sent to it
            for binding in screen._bindings.key_to_bindings.get(event.key, ()):
                if binding.priority and await self.app.run_action(binding.action, screen):
                    return
            focused.post_message(events.Key(event.key, event.character))


class BindingsInOrder(KeysFollowFocus):
    """A pane (a row table, a tree) runs the binding of each key as the key reaches it — its own,
    its view's or the app's, as Textual would find it — rather than when the key has bubbled up
    to the app: by then the keys behind it were already handled here, as in `/thr`, where `t h r`
    acted on the list before `/` had opened the filter they were typed for."""

    async def _on_key(self, event: events.Key) -> None:
        if self.app.focused is self and await self.app._check_bindings(event.key, priority=False):
            event.stop()
            event.prevent_default()


class _OwnBindingsInOrder(KeysFollowFocus):
    """A field's own editing keys, and Tab and shift+tab to the next or previous field, in the order
    they came: a binding (a priority one above all) runs when the key arrives, before the
    characters typed ahead of it are in, so `Tab 1000 Tab 0.5` at once filled one field with
    `0.51000`."""

    async def _on_key(self, event: events.Key) -> None:
        if self._focus_elsewhere() is not None:
            return  # KeysFollowFocus, next in the MRO, passes it on
        if event.key in ("tab", "shift+tab") and getattr(self, "tab_behavior", "focus") == "focus":  # an editor's Tab indents
            event.stop()
            event.prevent_default()
            (self.screen.focus_next if event.key == "tab" else self.screen.focus_previous)()
            return
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                event.stop()
                event.prevent_default()
                return


class BurstInput(_OwnBindingsInOrder, Input):
    pass


class BurstTextArea(_OwnBindingsInOrder, TextArea):
    pass


class BurstTree(BindingsInOrder, Tree):
    pass
