"""The workbench kept live: the timers (a poll of the root's change token, a one-second tick for
the spinner and the ages), the reload of every view when the root changed, the damage banner.

Mixed into UwfApp (app.py): `self` is the app. Every timer and every late message asks
`live_views()` first: while the app shuts down (`q`, ctrl+c, SIGTERM) its views are removed one
by one before its timers stop, and a tick or a worker's message then finds nothing to draw on.
"""

from __future__ import annotations

import sys
import time

from uwf_core.api import UwfError

from .formatting import elapsed, spinner
from .messages import FsckDone, RootChanged
from .widgets.cas_view import CasView
from .widgets.damage import DamageBanner
from .widgets.inbox_view import InboxView
from .widgets.threads_view import ThreadsView
from .widgets.workflows_view import WorkflowsView

RUNNING_RELOAD = 1.0  # seconds between two reloads at least, while agents run here (a fast run: 0.5 s cost it a tenth of its pace)


class LiveRefresh:
    def start_timers(self) -> None:
        self._signature = self.repo.backend.change_token()
        self.set_interval(self.poll_seconds, self.poll_state)  # also the fallback where nothing notifies
        self.set_interval(1.0, self.tick)

    def live_views(self) -> tuple[ThreadsView, InboxView] | None:
        """The views a timer or a message draws on, or None once the app is closing (its views
        are being removed, or already are). Asked at every line a running agent writes: no query."""
        if not self.is_running:
            return None
        threads, inbox = self.threads_view, self.inbox_view
        if not (threads.is_attached and inbox.is_attached) or threads._closing or inbox._closing:
            return None
        return threads, inbox

    def _trace_warning(self, message: str) -> None:
        """Trace export's one-line warnings (a collector that is down) as a notice, from any thread."""
        try:
            self.call_from_thread(self.notify, message, title="traces", severity="warning")
        except RuntimeError:  # on the app's own thread, or once it has ended
            if self.is_running:
                self.notify(message, title="traces", severity="warning")
            else:
                sys.stderr.write(f"uwf-tui: warning: {message}\n")

    def on_root_changed(self, message: RootChanged) -> None:
        self.poll_state()

    def tick(self) -> None:
        """Once a second while agents run here: a spinner and the elapsed time in the header
        and on the running timeline row."""
        self._ticks += 1
        views = self.live_views()
        if views is None:
            return
        threads, inbox = views
        threads.tick_running(self._ticks)
        inbox.refresh_ages()
        self.running_title()

    def running_title(self) -> None:
        """The header: how many agents run here and for how long, or the root again once none does."""
        if self.running:
            if self._idle_title is None:
                self._idle_title = self.sub_title
            started = self.runner.oldest_start()
            count = len(self.running)
            self.sub_title = f"{spinner(self._ticks)} {count} agent{'s' if count > 1 else ''} running · {elapsed(time.time() - started)}"
        elif self._idle_title is not None:
            self.sub_title, self._idle_title = self._idle_title, None

    def poll_state(self, *, now: bool = False) -> None:
        """Reload the views when the root changed. While agents run here, at most every
        RUNNING_RELOAD seconds (`now`: at once): a thread that steps many times a second would
        otherwise have the screen laid out again at every poll, and take the time its steps need."""
        if self.live_views() is None:
            return
        if not now and self.running and time.monotonic() - self._reloaded < RUNNING_RELOAD:
            return
        try:
            signature = self.repo.backend.change_token()
        except UwfError as exc:
            self.notify(exc.message, severity="error")
            return
        if signature != self._signature:
            self._signature = signature
            self._reloaded = time.monotonic()
            self.repo.reload_config()  # config.yaml or .env may have changed too
            self.reload_views()

    def reload_views(self) -> None:
        if self.live_views() is None:
            return
        self.clear_damage()
        self.threads_view.reload()
        self.inbox_view.reload()  # read off the UI thread; on_inbox_loaded shows it (and the tab its count)
        self._stale = {"workflows", "cas"}  # hidden, they wait to be shown: a stepping thread changes the root often
        self._reload_shown()
        self.refresh_bindings()

    def _reload_shown(self) -> None:
        view = self.current_view
        if view in self._stale:
            self._stale.discard(view)
            if view == "workflows":
                self.query_one(WorkflowsView).reload()
            else:
                self.query_one(CasView).refresh_roots()

    def on_tabbed_content_tab_activated(self) -> None:
        if self.live_views() is not None:
            self._reload_shown()

    def show_damage(self, message: str) -> None:
        self.query_one(DamageBanner).show(message)

    def on_fsck_done(self, message: FsckDone) -> None:
        if self.live_views() is not None:
            self.query_one(DamageBanner).fsck_done(message.summary)

    def clear_damage(self) -> None:
        self.query_one(DamageBanner).clear()

    def _force_refresh(self) -> None:
        self._signature = None
        self.poll_state(now=True)
