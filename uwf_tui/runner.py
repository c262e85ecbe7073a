"""The agents this session runs: which threads are stepping here, since when, how to stop them,
and the human answers their workers wait for. A plain object the app owns (outside the widget
tree, as Toad keeps its agent processes), so a view being rebuilt never loses a running step."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING

from uwf_core.api import Cancel

from . import workers

if TYPE_CHECKING:
    from textual.app import App


class AgentRunner:
    def __init__(self, app: App) -> None:
        self.app = app
        self.running: dict[str, Cancel] = {}
        self.started_at: dict[str, float] = {}  # thread -> when its step or run began here (time.time())
        self.pending_answers: dict[str, Future] = {}  # thread -> a human answer a worker waits for
        self.killing: set[str] = set()  # threads K was confirmed for, until their kill is done

    def __len__(self) -> int:
        return len(self.running)

    def __contains__(self, thread: object) -> bool:
        return thread in self.running

    def start(self, thread: str, *, run: bool) -> bool:
        """Step (or run) `thread` in a worker on the app; False when it already runs here.
        Workers go on the App, not on a view or screen that can be removed mid-step."""
        if thread in self.running:
            return False
        cancel = Cancel()
        self.running[thread] = cancel
        self.started_at[thread] = time.time()
        work = partial(workers.step, self.app.repo, thread, run, cancel, self.app.post_message, self.pending_answers)
        self.app.run_worker(work, thread=True, exit_on_error=False, group="steps")
        return True

    def finished(self, thread: str) -> None:
        self.running.pop(thread, None)
        self.started_at.pop(thread, None)

    def cancel(self, thread: str) -> bool:
        """Stop the agent this session runs for `thread` (a waiting human form gives up too)."""
        cancel = self.running.get(thread)
        if cancel is None:
            return False
        cancel.set()
        if thread in self.pending_answers:
            resolve(self.pending_answers[thread], None)
        return True

    def stop_all(self) -> None:
        for thread in list(self.running):
            self.cancel(thread)
        for answer in list(self.pending_answers.values()):
            resolve(answer, None)

    def oldest_start(self) -> float:
        return min(self.started_at.get(thread, time.time()) for thread in self.running)


def resolve(answer: Future, value: str | None) -> None:
    """Answer a waiting worker once; a second answer (cancel after submit) is ignored."""
    if not answer.done():
        answer.set_result(value)


class WorkerThreads(ThreadPoolExecutor):  # asyncio takes no other kind as the default executor
    """The app's thread workers (Textual runs them on the loop's default executor): one daemon
    thread each, not the pool's (whose threads the interpreter joins at exit), and quitting waits
    for them a few seconds, not forever. A text agent stops when
    it is cancelled; a python agent's function in this process stops only when it returns or
    checks its context, and uwf-tui must not hang on a blank screen until it does."""

    GRACE_SECONDS = 5.0

    def __init__(self, stepping=lambda: True) -> None:
        super().__init__(max_workers=1)  # never used: submit starts threads of its own
        self.threads: set[threading.Thread] = set()
        self.lock = threading.Lock()
        self.stepping = stepping  # whether a step runs here: only then is quitting worth a wait

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()

        def run() -> None:
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(fn(*args, **kwargs))
                    except BaseException as exc:  # noqa: BLE001  (the future carries it to the worker)
                        future.set_exception(exc)
            finally:
                with self.lock:
                    self.threads.discard(threading.current_thread())

        thread = threading.Thread(target=run, name="uwf-tui-worker", daemon=True)
        with self.lock:
            self.threads.add(thread)
        thread.start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Wait (a few seconds at most) for a step to record how it ended; the other workers only
        read, and end with the process."""
        if not wait or not self.stepping():
            return
        deadline = time.monotonic() + self.GRACE_SECONDS
        for thread in self.alive():
            thread.join(max(0.0, deadline - time.monotonic()))

    def alive(self) -> list[threading.Thread]:
        with self.lock:
            return [thread for thread in self.threads if thread.is_alive()]
