"""Stepping from the workbench: `s`, `r` and `x` on the selected thread, and what the log and a
toast say when a step ends, is cancelled or its thread is killed. The AgentRunner (runner.py) owns
the agents; these are the keys and the handlers of its messages.

Mixed into UwfApp (app.py): `self` is the app. A message that lands while the app shuts down is
dropped (live.LiveRefresh.live_views).
"""

from __future__ import annotations

from uwf_core.api import Cancel, UwfError, pause_thread, thread_info, unpause_thread

from .messages import AgentOutput, KillDone, StepDone
from .workers import RUN_STOPPED


class Stepping:
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
        self.running_title()  # now, not at the next tick
        self.threads_view.stop_ledger(thread)
        self.threads_view.log_line(thread, "run until done" if run else "step", "bold")

    def action_pause(self) -> None:
        self._after_keys("pause", lambda: self._pause(True))

    def action_unpause(self) -> None:
        self._after_keys("unpause", lambda: self._pause(False))

    def _pause(self, pause: bool) -> None:
        thread = self.threads_view.current_thread()
        if not thread:
            return
        try:
            if pause:
                pause_thread(self.repo, thread)
            else:
                unpause_thread(self.repo, thread)
        except UwfError as exc:
            self.notify(exc.message, severity="error")
            return
        if pause:
            running = "its step in flight finishes, " if thread in self.runner or self.repo.locks.running(thread) else ""
            self.threads_view.log_line(thread, f"‖ paused: {running}no step starts after it, here or on a worker (space unpauses)", "yellow")
        else:
            self.threads_view.log_line(thread, "▷ unpaused: s or r steps it, and workers take it up if it is queued", "green")
        self._force_refresh()

    def action_follow(self) -> None:
        self._after_keys("follow", self._follow)

    def _follow(self) -> None:
        thread = self.threads_view.current_thread()
        if not thread:
            return
        if thread in self.followers:
            self.followers.stop(thread)
            self.threads_view.log_line(thread, "no longer following", "dim")
            return
        self.followers.start(thread)
        self.threads_view.log_line(thread, "following: steps another process or host runs show here as they go (L stops)", "bold")

    def on_agent_output(self, message: AgentOutput) -> None:
        if self.live_views() is None:
            return
        self.threads_view.log_stream(message.thread, message.line)

    def on_step_done(self, message: StepDone) -> None:
        """The log says what happened, whole; a brief toast too, for the log may be off screen."""
        self.runner.finished(message.thread)
        self.running_count = len(self.runner)
        if self.live_views() is None:
            return
        self.running_title()  # the header says at once when no agent runs any more
        stopped = message.summary == "cancelled" or message.summary.startswith(RUN_STOPPED)
        if message.error:
            self.threads_view.log_line(message.thread, f"✗ {message.error}", "bold red")
            self.toast(f"step failed: {message.error}", severity="error")
        elif stopped and (message.thread in self.runner.killing or self._killed(message.thread)):  # K stops a run too
            self.threads_view.log_line(message.thread, "☠ killed: the thread is archived and its step stopped (f forks a step to go on)", "magenta")
            self.toast("thread killed", severity="warning")
        elif message.summary.startswith(RUN_STOPPED):
            self.threads_view.log_line(message.thread, f"■ {message.summary}", "yellow")
            self.toast(message.summary.partition(";")[0], severity="warning")
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
        if thread in self.runner and self.live_views() is not None:
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

    def on_kill_done(self, message: KillDone) -> None:
        self.runner.killing.discard(message.thread)
        if self.live_views() is None:
            return
        if message.error:
            self.notify(message.error, severity="error")
            return
        self.notify(f"killed thread {message.thread}")
        self._force_refresh()
