"""`uwf-tui`: the Textual workbench over uwf_core.

Workflows as graphs, threads as step timelines, CAS nodes as expandable
trees; step, run, fork and kill by keypress. This module is the wiring: the
app, its keys, view switching, polling and the message handlers. The views
are in widgets/, the dialogs in screens/, and the long calls into the core in
workers.py, which post messages (messages.py) that the handlers here turn into
UI. Changes made by `uwf` in another terminal show up within a fraction of a
second (the root's change token is polled; a PostgreSQL root notifies).
"""

from __future__ import annotations

import argparse
import os
import sys
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

from uwf_core.api import Cancel, Repo, UwfError, display_location, not_a_directory, set_trace_warning_handler, thread_info

from . import keys, moves, workers
from .commands import Commands
from .formatting import brief, elapsed, root_title, spinner
from .keys import HELP, TEXTUAL_COMMANDS, key_applies, why_not
from .messages import (
    AgentChecked,
    AgentOutput,
    FsckDone,
    HumanAnswerRequested,
    InboxAnswered,
    InboxLoaded,
    KillDone,
    RootChanged,
    StepDone,
)
from .runner import AgentRunner, WorkerThreads
from .screens.modals import ConfirmScreen, HelpScreen
from .widgets.cas_view import CasView
from .widgets.damage import DamageBanner
from .widgets.footer import SteadyFooter
from .widgets.inbox_view import InboxView
from .widgets.panes import focus_now, move_focus, switch_tab
from .widgets.threads_view import ThreadsView
from .widgets.workflows_view import WorkflowsView

NARROW_COLUMNS = 110
SAYS_WHY_NOT = ("step", "run", "preview", "diff", "queue", "cancel", "fork")  # keys that say why they cannot act, rather than nothing
SHORT_ROWS = 34
INBOX_TITLE = "i Inbox"
class UwfApp(App):
    TITLE = "uwf"
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses defined elsewhere find it
    BINDINGS = keys.BINDINGS  # every key, where each applies and its help: keys.py
    running_count: reactive[int] = reactive(0, bindings=True)

    def __init__(self, repo: Repo, *, poll_seconds: float | None = None) -> None:
        super().__init__()
        self.repo = repo  # the one opened root of this session, shared by every view and worker
        # A directory root is polled often (a few stat calls): another process's step shows within
        # ~0.2 s. A database notifies; its poll is only the fallback.
        notifies = getattr(repo.backend, "notifies", False)
        self.poll_seconds = poll_seconds if poll_seconds is not None else (1.0 if notifies else 0.2)
        self.runner = AgentRunner(self)  # the agents this session runs
        self.worker_threads = WorkerThreads(lambda: len(self.runner) > 0)  # the loop's default executor: quitting waits for steps, briefly
        self.toasted: dict[tuple[str, str, str], float] = {}  # a toast on screen -> until when
        self.commands = Commands(self)
        self._ticks = 0
        self._idle_title: str | None = None  # the sub-title to restore when no agent runs any more
        self._signature: object = None
        self.sub_title = root_title(display_location(repo.location))

    def compose(self) -> ComposeResult:
        yield Header()
        yield DamageBanner()
        with TabbedContent(initial="pane-threads", id="views"):
            with TabPane("1 Workflows", id="pane-workflows"):
                yield WorkflowsView(self.repo, id="workflows-view")
            with TabPane("2 Threads", id="pane-threads"):
                yield ThreadsView(self.repo, id="threads-view")
            with TabPane("3 CAS", id="pane-cas"):
                yield CasView(self.repo, id="cas-view")
            with TabPane(INBOX_TITLE, id="pane-inbox"):
                yield InboxView(self.repo, id="inbox-view")
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
        if self.query(ThreadsView):  # not while the app is closing
            style = {"error": "bold red", "warning": "yellow"}.get(severity, "")
            self.threads_view.log_note(f"{title}: {message}" if title else message, style)

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

        question = f"{count} agent{'s' if count > 1 else ''} running: quit and stop {'them' if count > 1 else 'it'}? (its step is recorded as killed)"
        self.push_screen(ConfirmScreen(question, yes="Quit"), confirmed)

    def on_unmount(self) -> None:
        self.runner.stop_all()

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
        self._signature = self.repo.backend.change_token()
        self.set_interval(self.poll_seconds, self.poll_state)  # also the fallback where nothing notifies
        self.set_interval(1.0, self.tick)
        if getattr(self.repo.backend, "notifies", False):  # another host's change reloads at once
            self.run_worker(partial(workers.listen, self.repo, self.post_message), thread=True, exit_on_error=False, group="listen")
        self.query_one("#threads", DataTable).focus()
        set_trace_warning_handler(self._trace_warning)

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

    # -- views ---------------------------------------------------------------------------

    @property
    def threads_view(self) -> ThreadsView:
        return self.query_one(ThreadsView)

    @property
    def cas_view(self) -> CasView:
        return self.query_one(CasView)

    @property
    def inbox_view(self) -> InboxView:
        return self.query_one(InboxView)

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

    def action_help_quit(self) -> None:
        """ctrl+c: Textual says how to quit in markup, which this app's toasts show as written."""
        self.notify("ctrl+c does not quit here (in a field it copies): q quits")

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
                "queue": self.action_queue, "cancel": self.action_cancel, "fork": self.action_fork,
            }[action]()
        else:
            self._say_why_not(action)

    def _say_why_not(self, action: str) -> None:
        reason = why_not(self, action)
        if reason:
            self.notify(reason, severity="warning")

    # -- live refresh --------------------------------------------------------------------

    def tick(self) -> None:
        """Once a second while agents run here: a spinner and the elapsed time in the header
        and on the running timeline row."""
        self._ticks += 1
        if not self.query(ThreadsView) or not self.query(InboxView):  # the screen is being torn down (quit)
            return
        self.threads_view.tick_running(self._ticks)
        self.inbox_view.refresh_ages()
        if self.running:
            if self._idle_title is None:
                self._idle_title = self.sub_title
            started = self.runner.oldest_start()
            count = len(self.running)
            self.sub_title = f"{spinner(self._ticks)} {count} agent{'s' if count > 1 else ''} running · {elapsed(time.time() - started)}"
        elif self._idle_title is not None:
            self.sub_title, self._idle_title = self._idle_title, None

    def poll_state(self) -> None:
        if not self.query(ThreadsView):
            return  # the app is closing: its views are already gone
        try:
            signature = self.repo.backend.change_token()
        except UwfError as exc:
            self.notify(exc.message, severity="error")
            return
        if signature != self._signature:
            self._signature = signature
            self.repo.reload_config()  # config.yaml or .env may have changed too
            self.reload_views()

    def reload_views(self) -> None:
        self.clear_damage()
        self.threads_view.reload()
        self.query_one(WorkflowsView).reload()
        self.query_one(CasView).refresh_roots()
        self.inbox_view.reload()  # read off the UI thread; on_inbox_loaded shows it
        self.refresh_bindings()

    def show_damage(self, message: str) -> None:
        self.query_one(DamageBanner).show(message)

    def on_fsck_done(self, message: FsckDone) -> None:
        self.query_one(DamageBanner).fsck_done(message.summary)

    def clear_damage(self) -> None:
        self.query_one(DamageBanner).clear()

    # -- stepping: the runner owns the agents, the handlers show what happened ---------------

    @property
    def running(self) -> dict[str, Cancel]:
        return self.runner.running

    def action_step(self) -> None:
        self._after_keys("step", lambda: self._start(self.threads_view.current_thread(), run=False))

    def action_run(self) -> None:
        self._after_keys("run", lambda: self._start(self.threads_view.current_thread(), run=True))

    def _start(self, thread: str | None, *, run: bool) -> None:
        if not thread:
            return
        if not self.runner.start(thread, run=run):
            self.notify(f"thread {thread[:10]} is already running", severity="warning")
            return
        self.running_count = len(self.runner)
        self.threads_view.log_line(thread, "run until done" if run else "step", "bold")

    def on_agent_output(self, message: AgentOutput) -> None:
        self.threads_view.log_line(message.thread, message.line)

    def on_step_done(self, message: StepDone) -> None:
        """The log says what happened, whole; a brief toast too, for the log may be off screen."""
        self.runner.finished(message.thread)
        self.running_count = len(self.runner)
        if message.error:
            self.threads_view.log_line(message.thread, f"✗ {message.error}", "bold red")
            self.toast(f"step failed: {message.error}", severity="error")
        elif message.summary == "cancelled" and (message.thread in self.runner.killing or self._killed(message.thread)):
            self.threads_view.log_line(message.thread, "☠ killed: the thread is archived and its step stopped (f forks a step to go on)", "magenta")
            self.toast("thread killed", severity="warning")
        elif message.summary == "cancelled":
            self.threads_view.log_line(message.thread, "■ cancelled; the head did not move (s steps again)", "yellow")
            self.toast("step cancelled", severity="warning")
        else:
            self.threads_view.log_line(message.thread, f"■ {message.summary}", "bold green")
            self.toast(message.summary)
        self._force_refresh()

    def _killed(self, thread: str) -> bool:
        """Whether a stopped step was stopped by a kill (K, or `uwf thread kill` anywhere)."""
        try:
            info = thread_info(self.repo, thread)
        except UwfError:
            return False
        return not info.active and info.reason == "killed"

    def _still_cancelling(self, thread: str) -> None:
        if thread in self.runner and self.query(ThreadsView):
            self.threads_view.log_line(
                thread, "the agent has not stopped yet: a python function in this process stops when it returns or calls ctx.check()", "yellow"
            )

    def action_cancel(self) -> None:
        self._after_keys("cancel", self._cancel)

    def _cancel(self) -> None:
        thread = self.threads_view.current_thread()
        if not thread:
            return
        if self.runner.cancel(thread):
            self.threads_view.log_line(thread, "cancelling the running agent…", "yellow")
            self.set_timer(3.0, lambda: self._still_cancelling(thread))
            return
        elsewhere = self.repo.locks.running(thread)
        if elsewhere is not None:
            self.notify(
                f"this step was started by another process (pid {elsewhere.pid}): x cancels only steps started here; "
                f"stop it where it runs, or K kills the thread (and its agent)",
                severity="warning",
                timeout=8,
            )

    def on_human_answer_requested(self, message: HumanAnswerRequested) -> None:
        self.commands.answer_human(message)

    # -- the inbox: threads waiting for a person, answered here --------------------------------

    def on_inbox_loaded(self, message: InboxLoaded) -> None:
        if not self.query(InboxView):
            return  # the app is closing
        view = self.inbox_view
        view.loaded(message.items, message.error)
        tab = self.query_one("#views", TabbedContent).get_tab("pane-inbox")
        tab.label = f"{INBOX_TITLE} ({view.count})" if view.count else INBOX_TITLE
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

    def on_kill_done(self, message: KillDone) -> None:
        self.runner.killing.discard(message.thread)
        if message.error:
            self.notify(message.error, severity="error")
            return
        self.notify(f"killed thread {message.thread}")
        self._force_refresh()

    def _force_refresh(self) -> None:
        self._signature = None
        self.poll_state()

    def action_new_thread(self, _twin: str = ""):
        """n: the dialog on the selected thread's workflow in the Threads view (the one a person
        most likely starts again), else on the Workflows view's. Its mount is returned: Textual
        awaits it, so the keys typed right after `n` land in its prompt."""
        workflows = self.query_one(WorkflowsView)
        selected = workflows.selected
        if self.current_view == "threads":
            selected = self.threads_view.workflow_name(self.threads_view.current_thread()) or selected
        return self.commands.new_thread(workflows.names(), selected)

    def action_filter(self) -> None:
        """`/` filters the list of the view you are in (threads, workflows, the CAS roots)."""
        self.view_widget.toggle_filter()

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="uwf-tui", description="The uwf workbench: workflows, threads and the CAS in a terminal, or served to a browser.")
    parser.add_argument("--root", metavar="ROOT", help="storage root: a directory or a postgresql:// URL (default: $UWF_STORAGE_ROOT, else ~/.uwf)")
    parser.add_argument(
        "--demo",
        action="store_true",
        help="set up a demo root (./.uwf-demo unless --root) with the examples and the scripted agent, and open it",
    )
    serving = parser.add_argument_group("in a browser")
    serving.add_argument("--serve", action="store_true", help="serve the workbench to a browser (textual-serve); prints the URL to open")
    serving.add_argument("--host", help="the address to listen on (default: 127.0.0.1, this machine only)")
    serving.add_argument("--port", type=int, help="the port to listen on (default: 8765; 0 picks a free one)")
    serving.add_argument("--token", help="the token every request needs (default: $UWF_SERVE_TOKEN, else a random one)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not args.serve and (args.host is not None or args.port is not None or args.token is not None):
        parser.error("--host, --port and --token go with --serve")
    try:
        if args.demo:
            from .demo import default_demo_root, setup_demo

            repo = setup_demo(args.root or default_demo_root())
        else:
            repo = Repo.open(args.root)
    except UwfError as exc:
        sys.stderr.write(f"uwf-tui: error: {exc.message}\n")
        return 1
    problem = _unusable_root(repo.location)
    if problem:
        sys.stderr.write(f"uwf-tui: error: {problem}\n")
        return 1
    os.environ["UWF_STORAGE_ROOT"] = repo.location  # the agents this session starts open the same root
    if args.serve:
        return _serve(repo.location, args)
    app = UwfApp(repo)
    app.run()
    set_trace_warning_handler(None)  # spans still queued go at exit; a warning then is the terminal's again
    if len(app.runner) and app.worker_threads.alive():  # a python agent's function that neither returned nor checked its context
        sys.stderr.write(
            f"uwf-tui: a step running in this process did not stop within {WorkerThreads.GRACE_SECONDS:g}s (a python agent's "
            f"function stops when it returns or calls ctx.check()); leaving without it: its attempt is recorded as killed "
            f"when its thread next steps\n"
        )
    return 0


def _serve(location: str, args: argparse.Namespace) -> int:
    from .serve import (  # aiohttp and textual-serve, only here
        ServeError,
        ServeOptions,
        serve,
    )

    try:
        return serve(ServeOptions(location, host=args.host or "127.0.0.1", port=8765 if args.port is None else args.port, token=args.token))
    except ServeError as exc:
        sys.stderr.write(f"uwf-tui: error: {exc}\n")
        return 1


def _unusable_root(location: str) -> str | None:
    """What makes a root impossible to open at all: not a directory, unreadable, or (when it does
    not exist yet) impossible to create. A damaged root still opens, showing the damage. (A
    PostgreSQL root was reached when it was opened.)"""
    if "://" in location:
        return None
    if os.path.isdir(location):
        return None if os.access(location, os.R_OK | os.X_OK) else f"the root {location} cannot be read (permission denied)"
    problem = not_a_directory(location)  # a file, or a symbolic link that leads nowhere (a loop)
    if problem:
        return problem
    parent = os.path.dirname(location.rstrip(os.sep)) or os.sep
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        return f"the root {location} cannot be created: {parent} is a file, not a directory"
    return _creatable(location, parent)


def _creatable(location: str, parent: str) -> str | None:
    """A missing root opens empty, to be created by the first write: check now that it can be
    (os.access is not enough: root passes it on /proc), with a directory made and removed at once."""
    import tempfile

    try:
        os.rmdir(tempfile.mkdtemp(prefix=".uwf-tui-probe-", dir=parent))
    except OSError as exc:
        return f"the root {location} cannot be created in {parent}: {exc.strerror or exc}"
    return None


if __name__ == "__main__":
    sys.exit(main())

