"""`uwf-tui`: the Textual workbench over uwf_core.

Workflows as graphs, threads as step timelines, CAS nodes as expandable
trees; step, run, fork and kill by keypress. This module is the app: its
layout, its keys (keys.py says where each applies) and the handlers that hand
them on. Its parts: view_keys.py (which view, panes, tabs, cursor keys),
stepping.py (s, r, x and what a step's end says), live.py (the timers and the
reload when the root changes), commands.py (fork, edit, kill, new thread,
diff, preview: the dialogs), launch.py (`uwf-tui` itself). The views are in
widgets/, the dialogs in screens/, and the long calls into the core in
workers.py, which post messages (messages.py). Changes made by `uwf` in
another terminal show up within a fraction of a second (the root's change
token is polled; a PostgreSQL root notifies).
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Iterable

from textual.app import App, ComposeResult, SystemCommand
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import (
    DataTable,
    Header,
    TabbedContent,
    TabPane,
)

from uwf_core.api import Repo, display_location, set_trace_warning_handler, speak_cli

from . import keys, workers
from .commands import Commands
from .formatting import brief, root_title
from .keys import HELP, TEXTUAL_COMMANDS, key_applies, why_not
from .live import LiveRefresh
from .messages import AgentChecked, HumanAnswerRequested, InboxAnswered, InboxLoaded
from .following import Followers
from .runner import AgentRunner, WorkerThreads, resolve
from .screens.modals import ConfirmScreen, HelpScreen
from .stepping import Stepping
from .view_keys import ViewKeys
from .widgets.cas_view import CasView
from .widgets.damage import DamageBanner
from .widgets.footer import SteadyFooter
from .widgets.inbox_view import InboxView
from .widgets.threads_view import ThreadsView
from .widgets.workflows_view import WorkflowsView

NARROW_COLUMNS = 110
SAYS_WHY_NOT = ("step", "run", "preview", "diff", "queue", "cancel", "fork", "pick")  # keys that say why they cannot act, rather than nothing
SHORT_ROWS = 34
INBOX_TITLE = "i Inbox"
VIEW_TABS = (("1 Workflows", "pane-workflows"), ("2 Threads", "pane-threads"), ("3 CAS", "pane-cas"), (INBOX_TITLE, "pane-inbox"))


class UwfApp(ViewKeys, Stepping, LiveRefresh, App):
    TITLE = "uwf"
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses defined elsewhere find it
    BINDINGS = keys.BINDINGS  # every key, where each applies and its help: keys.py
    running_count: reactive[int] = reactive(0, bindings=True)

    def __init__(self, repo: Repo, *, poll_seconds: float | None = None) -> None:
        super().__init__()
        speak_cli()  # its users read commands and keys, not the API's functions
        self.repo = repo  # the one opened root of this session, shared by every view and worker
        # A directory root is polled often (a few stat calls): another process's step shows within
        # ~0.2 s. A database notifies; its poll is only the fallback.
        notifies = getattr(repo.backend, "notifies", False)
        self.poll_seconds = poll_seconds if poll_seconds is not None else (1.0 if notifies else 0.2)
        self.runner = AgentRunner(self)  # the agents this session runs
        self.followers = Followers(repo, self.post_message)  # threads followed live (L): steps others run
        self.worker_threads = WorkerThreads(lambda: len(self.runner) > 0)  # the loop's default executor: quitting waits for steps, briefly
        self.toasted: dict[tuple[str, str, str], float] = {}  # a toast on screen -> until when
        self.commands = Commands(self)
        self._ticks = 0
        self._idle_title: str | None = None  # the sub-title to restore when no agent runs any more
        self._signature: object = None
        self._reloaded = 0.0  # when the views were last reloaded (time.monotonic())
        self._stale: set[str] = set()  # views not shown when the root changed: reloaded when they are (live.py)
        self.sub_title = root_title(display_location(repo.location))

    def compose(self) -> ComposeResult:
        yield Header()
        yield DamageBanner()
        # Held, not queried: a running agent's messages reach them many times a second (view_keys.py).
        self.held_views = (
            WorkflowsView(self.repo, id="workflows-view"), ThreadsView(self.repo, id="threads-view"),
            CasView(self.repo, id="cas-view"), InboxView(self.repo, id="inbox-view"),
        )
        with TabbedContent(initial="pane-threads", id="views"):
            for view, (label, pane) in zip(self.held_views, VIEW_TABS):
                with TabPane(label, id=pane):
                    yield view
        yield SteadyFooter(compact=True)  # every key that applies fits at 80 columns

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None, markup: bool = False) -> None:
        """Every message goes whole to the log of the Threads view; its toast is one brief line,
        which covers little at 80x24. Never markup: messages quote paths and `[redacted:…]`."""
        self.note(message, title, severity)
        self._toast(brief(message), title, severity, timeout or (6 if severity == "error" else 3))

    def toast(self, message: str, *, severity="information") -> None:
        """A brief toast for what the log already says (a step's outcome)."""
        self._toast(brief(message), "", severity, 4 if severity == "error" else 2)

    def _toast(self, text: str, title: str, severity: str, timeout: float) -> None:
        """One toast per message while it shows: a burst of `s` on a running thread says "already
        running" once, not in a stack that covers the timeline at 80x24 (the log has each)."""
        now = time.monotonic()
        key = (text, title, severity)
        if self.toasted.get(key, 0.0) > now:
            return
        self.toasted = {shown: until for shown, until in self.toasted.items() if until > now}
        self.toasted[key] = now + timeout
        super().notify(text, title=title, severity=severity, timeout=timeout, markup=False)

    def note(self, message: str, title: str = "", severity: str = "information") -> None:
        views = self.live_views()
        if views is not None:  # not while the app is closing
            style = {"error": "bold red", "warning": "yellow"}.get(severity, "")
            views[0].log_note(f"{title}: {message}" if title else message, style)

    async def action_quit(self) -> None:
        """Leave; with agents running, ask first (No by default), then stop them: their
        workers would keep the app alive."""
        if not self.running:
            await super().action_quit()
            return
        if isinstance(self.screen, ConfirmScreen):
            return  # already asking
        count = len(self.running)

        async def confirmed(yes: bool | None) -> None:
            if yes:
                self.runner.stop_all()
                self.exit()

        question = f"{count} agent{'s' if count > 1 else ''} running: quit and stop {'them' if count > 1 else 'it'}? (a step in flight is stopped and recorded as stopped; one that ends first is kept; the threads are not killed)"
        self.push_screen(ConfirmScreen(question, yes="Quit"), confirmed)

    def on_unmount(self) -> None:
        self.runner.stop_all()
        self.followers.stop_all()

    def on_resize(self, event) -> None:
        self._fit(event.size)

    def _fit(self, size) -> None:
        """Below 110 columns the panes stack; below 34 rows the timeline and log shrink. One
        restyle; Textual restyles only the screens on top (down to the first opaque one), so the
        screens under a diff, a preview or the cost view are restyled too, or they would come back
        in the layout of the old size."""
        before = set(self.classes)
        self.update_classes({"-narrow": size.width < NARROW_COLUMNS, "-short": size.height < SHORT_ROWS})
        if set(self.classes) != before:
            for screen in self.screen_stack[:-1]:
                screen.update_node_styles(animate=False)
            self.refresh_bindings()  # the footer's `i` shows only where there is room

    def on_mount(self) -> None:
        import asyncio

        asyncio.get_running_loop().set_default_executor(self.worker_threads)  # before any thread worker starts
        self.inbox_view.reload()  # the first read of the inbox, in one of them
        self._fit(self.size)
        self.start_timers()
        if getattr(self.repo.backend, "notifies", False):  # another host's change reloads at once
            self.run_worker(partial(workers.listen, self.repo, self.post_message), thread=True, exit_on_error=False, group="listen")
        self.query_one("#threads", DataTable).focus()
        set_trace_warning_handler(self._trace_warning)

    # -- views ---------------------------------------------------------------------------

    def action_help_quit(self) -> None:
        """ctrl+c: Textual says how to quit in markup, which this app's toasts show as written."""
        self.notify("ctrl+c does not quit here (in a field it copies): q quits")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """False hides a key from the footer (and ignores it) where it cannot apply (keys.py)."""
        return key_applies(self, action, parameters)

    def action_queue(self) -> None:
        self._after_keys("queue", lambda: self.commands.queue(self.threads_view.current_thread()))

    def _after_keys(self, name: str, action) -> None:
        """Keys act in the order they came: after the earlier keys of a burst still waiting for a
        timeline's rows (timeline.after_keys), on the selection those keys leave, where the key
        still applies to it (s on a thread the burst jumped to that is done says so instead)."""

        def act() -> None:
            if key_applies(self, name, ()):
                action()
            elif name in SAYS_WHY_NOT:
                self._say_why_not(name)

        self.threads_view.timeline_table.after_keys(act)

    def action_why_not(self, action: str) -> None:
        """The twin of s, r, p, d, x, f or D, which takes the key where it cannot act on the
        selection as it is when pressed. The keys before it in a burst may still move the
        selection (`G enter k k enter s`: s belongs to the fork the burst ends on), so it waits for
        them, and acts, or says why not, where they leave it."""
        self.threads_view.timeline_table.when_ready(lambda: self._act_or_say(action))

    def _act_or_say(self, action: str) -> None:
        if key_applies(self, action, ()):
            {
                "step": self.action_step, "run": self.action_run, "preview": self.action_preview, "diff": self.action_diff,
                "queue": self.action_queue, "cancel": self.action_cancel, "fork": self.action_fork, "pick": self.action_pick,
            }[action]()
        else:
            self._say_why_not(action)

    def _say_why_not(self, action: str) -> None:
        reason = why_not(self, action)
        if reason:
            self.notify(reason, severity="warning")

    # -- live refresh --------------------------------------------------------------------

    # -- stepping: the runner owns the agents, the handlers show what happened ---------------

    def on_human_answer_requested(self, message: HumanAnswerRequested) -> None:
        if self.live_views() is None:  # quitting: nobody is there to answer
            resolve(message.answer, None)
            return
        self.commands.answer_human(message)

    # -- the inbox: threads waiting for a person, answered here --------------------------------

    def on_inbox_loaded(self, message: InboxLoaded) -> None:
        views = self.live_views()
        if views is None:
            return
        view = views[1]
        view.loaded(message.items, message.error)
        tab = self.query_one("#views", TabbedContent).get_tab("pane-inbox")
        label = f"{INBOX_TITLE} ({view.count})" if view.count else INBOX_TITLE
        if str(tab.label) != label:  # a new label lays the screen out again: not at every change to the root
            tab.label = label
        self.refresh_bindings()

    def action_answer(self):
        return self.answer_selected()

    def answer_selected(self):
        """Enter or `a` in the Inbox: the form for the thread under the cursor, once the list is
        read (at start, `i enter` waits for it). Returns the form's mount when it opens at once,
        for Textual to await: the keys typed after Enter are the answer."""
        view = self.inbox_view
        if not view.table.loaded or view.table.waiting:
            view.table.when_ready(self.answer_selected)
            return None
        item = view.selected()
        if item is None:
            self.notify("nobody is asked anything: the inbox is empty", severity="warning")
            return None
        return self.commands.answer_inbox(item)

    def on_inbox_answered(self, message: InboxAnswered) -> None:
        if self.live_views() is None:
            return
        self.commands.inbox_answered(message)
        self._force_refresh()

    # -- fork, edit, kill, new, go to, test: commands.py does them ---------------------------

    # f, e and m act on the timeline's row: on a thread just selected, once its rows are there.

    def action_fork(self) -> None:
        view = self.threads_view
        view.timeline_table.when_ready(lambda: self.commands.fork(view.selected_step_hash()))

    def action_edit(self) -> None:
        view = self.threads_view
        view.timeline_table.when_ready(lambda: self.commands.edit(view.selected_output_step()))

    def action_pick(self) -> None:
        view = self.threads_view
        view.timeline_table.when_ready(lambda: self.commands.pick(view.current_thread(), view.selected_candidate()))

    def action_kill(self) -> None:
        self._after_keys("kill", lambda: self.commands.kill(self.threads_view.current_thread()))

    # -- mark, diff, preview: read-only views of what a fork changed and what comes next -------

    def action_mark(self, _twin: str = "") -> None:
        self.threads_view.timeline_table.when_ready(self._mark)

    def _mark(self) -> None:
        """m: mark the selected step (or thread) as one side of a diff; on the marked one, unmark it."""
        view = self.threads_view
        node = view.selected_node()
        if node is None:
            return
        if node == view.mark:
            view.set_mark(None)
            self.notify("mark cleared")
            return
        view.set_mark(node)
        self.notify(f"marked {view.mark_label}: select another step or thread, D diffs them")

    def action_diff(self) -> None:
        self._after_keys("diff", lambda: self.call_later(self._diff))

    async def _diff(self) -> None:
        """D: the marked step and the selected one side by side, from their common ancestor."""
        view = self.threads_view
        other = view.selected_node()
        if view.mark is None or other is None:
            return
        if other == view.mark:
            self.notify("that is the marked step: select another step or thread to diff it with", severity="warning")
            return
        await self.commands.diff(view.mark, view.mark_label, other, view.node_label(other))

    def action_preview(self) -> None:
        self._after_keys("preview", lambda: self.call_later(self._preview))

    async def _preview(self) -> None:
        """p: what the selected thread's next step would do, without doing it."""
        thread = self.threads_view.current_thread()
        if thread:
            await self.commands.preview(thread, self.threads_view.node_label(thread))

    def action_new_thread(self, _twin: str = ""):
        """n: the dialog on the selected thread's workflow in the Threads view (the one a person
        most likely starts again), else on the Workflows view's. Its mount is returned: Textual
        awaits it, so the keys typed right after `n` land in its prompt."""
        workflows = self.query_one(WorkflowsView)
        selected = workflows.selected
        if self.current_view == "threads":
            selected = self.threads_view.workflow_name(self.threads_view.current_thread()) or selected
        return self.commands.new_thread(workflows.names(), selected)

    def action_cost(self) -> None:
        self._after_keys("cost", lambda: self.call_later(self._cost))

    async def _cost(self) -> None:
        """$: the selected thread's ledger and its fork subtree's (awaited, as D and p are: the
        keys typed after it scroll the view)."""
        from .screens.cost import CostScreen

        thread = self.threads_view.current_thread()
        if thread:
            await self.push_screen(CostScreen(self.repo, thread, self.threads_view.node_label(thread)))

    def action_sort(self) -> None:
        """`o`: the thread list sorted by its next column (a click on a header sorts by that one)."""
        self.notify(f"threads sorted by {self.threads_view.thread_list.sort()}")

    def action_goto_hash(self):
        return self.commands.goto_hash()  # awaited by Textual: the next key of a burst finds the dialog

    def action_help(self) -> None:
        self.push_screen(HelpScreen(HELP))

    def action_test_agent(self) -> None:
        self.commands.test_agent()

    def on_agent_checked(self, message: AgentChecked) -> None:
        if self.live_views() is not None:
            self.commands.agent_checked(message)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Each of our commands titled by what it does (a binding without a tooltip is plain
        movement, not a command), then the few of Textual's own a user wants."""
        for binding in self.BINDINGS:
            if binding.tooltip:
                title = binding.tooltip[0].upper() + binding.tooltip[1:]
                key = self.get_key_display(binding)
                yield SystemCommand(title, f"key: {key}", partial(self.press_binding, binding.key))
        yield SystemCommand("Test an agent", "send a tiny prompt through an agent, as `uwf agent test` does", self.action_test_agent)
        for command in super().get_system_commands(screen):
            if command.title in TEXTUAL_COMMANDS:
                title, help_line = TEXTUAL_COMMANDS[command.title]
                yield SystemCommand(title, help_line, command.callback)

    async def press_binding(self, key: str) -> None:
        """What a palette command does: what its key does here, the first of the key's bindings (the
        key and its hidden twins) that applies, as pressing it would (n starts a thread everywhere)."""
        for binding in self.BINDINGS:
            if binding.key == key and await self.run_action(binding.action):
                return
