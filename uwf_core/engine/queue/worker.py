"""`uwf worker`: step queued threads to their end, on any host that opens the same root.

A worker claims the oldest queued thread no live worker holds (`backend.queue.claim`: a lock held
by the worker's process, so a worker that dies — SIGKILL, host lost — loses it and another goes
on from the head), steps it with the one step engine until it is done, fails, needs a person or
reaches maxSteps, then takes the next. Each step still takes the thread's step lock, so a worker
and a `uwf thread step` typed by hand never both step one thread. No database transaction is
open while an agent runs: the claim and the step lock are session locks, not transactions.

A heartbeat thread renews every claim's lease (a PostgreSQL root: store/pg/locks.py). A worker cut
off from the database loses its claims to others; when its step ends it finds the claim gone,
lets the thread be (its late result was refused by compare-and-set) and goes on with other work.
A role for a person (agent `human`) leaves the thread queued and marked as asking at its head:
`uwf inbox` lists it, `uwf thread answer` moves its head, and a worker takes it up again at once.
"""

from __future__ import annotations

import threading
import time

from ...encoding.records import record
from ...errors import LockedError, PausedError, StoreUnavailableError, UwfError
from ..attempt import ASKING, MAP_WAITING, StepError, StepOptions
from ..contain.process import Cancel
from ..step import perform_step

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from collections.abc import Hashable
    from typing import Callable

    from ...repo import Repo
    from ...store.base import Claim

IDLE_WAIT_SECONDS = 5.0  # how long an idle worker waits for a change before it looks again
STOP_SECONDS = 0.5  # the longest an idle worker takes to see stop()
UNAVAILABLE_RETRY_SECONDS = 2.0  # the root cannot be reached: look again after this
BUSY_RETRY_SECONDS = 1.0  # a claimed thread someone steps by hand: try again after this
PARK_SECONDS = 0.5  # a map step waiting for its children: claimed again after this
BEAT_SECONDS = 5.0  # how often a worker renews its claims' leases (a PostgreSQL claim lapses after 20 s: store/pg/locks.py)


@record(frozen=True)
class WorkerEvent:
    """One line of the worker's log: a step done or failed, or a thread taken or left."""

    thread: str
    what: str  # "step", "failed", "done", "ended (REASON)", "left" (its turn on the thread over, still queued), "lost" (its claim), "asking", "waiting", "busy", "paused", "warning"
    role: str | None = None
    agent: str | None = None
    seconds: float = 0.0
    detail: str = ""

    def line(self) -> str:
        parts = [self.thread, self.what]
        if self.role:
            parts.append(f"{self.role} ({self.agent})")
        if self.seconds:
            parts.append(f"{self.seconds:.1f}s")
        if self.detail:
            parts.append(self.detail)
        return " ".join(parts)


class Worker:
    """`lanes` threads of work in one process, each stepping one claimed thread at a time."""

    def __init__(self, repo: Repo, name: str, *, lanes: int = 1, once: bool = False, on_event: Callable[[WorkerEvent], None] | None = None) -> None:
        self.repo = repo
        self.name = name
        self.lanes = lanes
        self.once = once
        self.on_event = on_event or (lambda event: None)
        self.stopping = threading.Event()
        self.cancels: dict[str, Cancel] = {}  # thread -> the cancel of the step running on it
        self.busy = 0
        self.lock = threading.Lock()
        self.held: set[str] = set()  # threads this process holds (a claim is per process)
        self.parked: dict[str, float] = {}  # map steps waiting for their children -> when to look again
        self.mapping: set[str] = set()  # the map steps whose waiting this worker has said
        self.claims: dict[str, Claim] = {}  # thread -> this worker's claim on it, beaten by _heartbeat

    def run(self) -> None:
        """Until `stop()` (or, with `once`, until nothing is left to claim and no lane is busy)."""
        workers = [threading.Thread(target=self._lane, name=f"{self.name}-{i}", daemon=True) for i in range(self.lanes)]
        beats = threading.Thread(target=self._heartbeat, name=f"{self.name}-beat", daemon=True)
        beats.start()
        for worker in workers:
            worker.start()
        for worker in workers:
            while worker.is_alive():
                worker.join(0.5)  # with a timeout, so SIGTERM's handler runs in the main thread meanwhile

    def _heartbeat(self) -> None:
        """Renew each claim's lease; a claim found lost is said once (its lane ends the thread's turn
        when its step does)."""
        while not self.stopping.wait(BEAT_SECONDS):
            with self.lock:
                claims = list(self.claims.values())
            for claim in claims:
                if not claim.lost and not claim.beat():
                    self.on_event(WorkerEvent(claim.thread, "lost", detail="its claim: the lease lapsed or its session to the database ended"))

    def stop(self) -> None:
        """Stop claiming; cancel the steps running (recorded as killed, heads unchanged, the threads
        left queued for another worker)."""
        self.stopping.set()
        with self.lock:
            for cancel in self.cancels.values():
                cancel.set()

    def _lane(self) -> None:
        token = None
        while not self.stopping.is_set():
            try:
                with self.lock:
                    now = time.monotonic()
                    self.parked = {thread: until for thread, until in self.parked.items() if until > now}
                    claim = self.repo.backend.queue.claim(self.name, skip=self.held | set(self.parked))
                    if claim is not None:
                        self.held.add(claim.thread)
                        self.claims[claim.thread] = claim
                        self.busy += 1
                if claim is None:
                    with self.lock:
                        idle = self.busy == 0 and not self.parked
                    if self.once and idle:
                        return
                    token = self._idle_wait(token)
                    continue
            except StoreUnavailableError as exc:
                self.on_event(WorkerEvent("-", "waiting", detail=f"{exc.message}; trying again in {UNAVAILABLE_RETRY_SECONDS:g}s"))
                self.stopping.wait(UNAVAILABLE_RETRY_SECONDS)
                continue
            try:
                with claim:
                    self._work(claim)
            except StoreUnavailableError as exc:
                self.on_event(WorkerEvent(claim.thread, "waiting", detail=exc.message))
            except Exception as exc:  # a bug: say so and keep the lane alive (the thread stays queued)
                self.on_event(WorkerEvent(claim.thread, "failed", detail=f"internal error: {type(exc).__name__}: {exc}"))
            finally:
                with self.lock:
                    self.held.discard(claim.thread)
                    self.claims.pop(claim.thread, None)
                    self.busy -= 1

    def _idle_wait(self, token: Hashable) -> Hashable:
        """Wait for a change in the root, in slices short enough that stop() (SIGTERM) ends an
        idle worker within STOP_SECONDS, not after the whole wait."""
        deadline = time.monotonic() + (0.5 if self.once else IDLE_WAIT_SECONDS)
        while not self.stopping.is_set():
            left = deadline - time.monotonic()
            current = self.repo.backend.wait_for_change(token, max(0.0, min(STOP_SECONDS, left)))
            if current != token or left <= STOP_SECONDS:
                return current
        return token

    def _work(self, claim: Claim) -> None:
        """Step the claimed thread to its end; dequeue it unless this worker was stopped first or
        lost the claim (another worker has the thread now)."""
        thread = claim.thread
        while not self.stopping.is_set():
            if claim.lost:
                self.on_event(WorkerEvent(thread, "left", detail="its claim was lost: the thread stays queued for the worker that claims it next"))
                return
            cancel = Cancel()
            with self.lock:
                self.cancels[thread] = cancel
            started = time.monotonic()
            # A worker lives for days: config.yaml and .env as they are now (another host may have
            # added an agent since), read once per step as `uwf thread step` would.
            self.repo.reload_config()
            try:
                warned = lambda line, thread=thread: self.on_event(WorkerEvent(thread, "warning", detail=line.removeprefix("uwf: warning: ")))  # noqa: E731
                result = perform_step(self.repo, thread, StepOptions(cancel=cancel, worker=self.name, on_warning=warned))
            except LockedError as exc:  # stepped by hand right now: wait for it
                self.on_event(WorkerEvent(thread, "busy", detail=exc.message))
                self.stopping.wait(BUSY_RETRY_SECONDS)
                continue
            except StoreUnavailableError as exc:  # the root is away (a database restarting): not the thread's fault
                self.on_event(WorkerEvent(thread, "waiting", seconds=time.monotonic() - started, detail=f"{exc.message}; trying again"))
                self.stopping.wait(UNAVAILABLE_RETRY_SECONDS)
                continue
            except StepError as exc:
                if exc.status == ASKING:
                    self._ask(thread, exc, started)
                    return
                if exc.status != MAP_WAITING:
                    self._ended(claim, exc, started)
                    return
                # a map step: its children are queued for the workers; look again in a while (said once)
                with self.lock:
                    self.parked[thread] = time.monotonic() + PARK_SECONDS
                    first = thread not in self.mapping
                    self.mapping.add(thread)
                if first:
                    self.on_event(WorkerEvent(thread, "waiting", seconds=time.monotonic() - started, detail=exc.message))
                return
            except PausedError as exc:  # paused meanwhile: it stays queued, and no worker claims it until it is unpaused
                self.on_event(WorkerEvent(thread, "paused", detail="it stays queued; `uwf thread unpause` lets a worker take it up"))
                return
            except UwfError as exc:
                self._ended(claim, exc, started)
                return
            finally:
                with self.lock:
                    self.cancels.pop(thread, None)
            with self.lock:
                self.mapping.discard(thread)  # its map joined: a later map of it is said again
            seconds = time.monotonic() - started
            if result.role:
                self.on_event(WorkerEvent(thread, "step", result.role, result.agent, seconds))
            if result.done:
                self.on_event(WorkerEvent(thread, "done", detail=f"reason {result.reason}" + (f" ({result.killed_by})" if result.killed_by else "")))
                self._dequeue(thread)
                return
        self.on_event(WorkerEvent(thread, "left", detail="stopped between steps; the thread stays queued"))

    def _ask(self, thread: str, exc: StepError, started: float) -> None:
        """The next role is a person's: the thread stays queued, marked as asking at the head the
        attempt started from (an answer meanwhile moved it on: then the mark is already stale)."""
        self.repo.backend.queue.ask(thread, exc.head)
        self.on_event(WorkerEvent(thread, "asking", seconds=time.monotonic() - started, detail=exc.message))

    def _ended(self, claim: Claim, exc: UwfError, started: float) -> None:
        """A step that failed, or the thread ended under it: say so and dequeue it, unless this
        worker is stopping or lost the claim (then the thread stays queued for another)."""
        thread = claim.thread
        with self.lock:
            self.mapping.discard(thread)
        if self.stopping.is_set():
            self.on_event(WorkerEvent(thread, "left", seconds=time.monotonic() - started, detail="stopped: the step was cancelled, the thread stays queued"))
            return
        if claim.lost or not claim.beat():
            self.on_event(WorkerEvent(thread, "left", seconds=time.monotonic() - started, detail=f"its claim was lost while the step ran: {exc.message}; going on with other work"))
            return
        ended = self.repo.threads.last_archived(thread) if thread not in self.repo.threads.heads() else None
        what = f"ended ({ended.reason})" if ended is not None else "failed"
        self.on_event(WorkerEvent(thread, what, seconds=time.monotonic() - started, detail=exc.message))
        self._dequeue(thread)

    def _dequeue(self, thread: str) -> None:
        while True:
            try:
                self.repo.backend.queue.dequeue(thread)
                return
            except StoreUnavailableError as exc:
                self.on_event(WorkerEvent(thread, "waiting", detail=f"{exc.message}; trying again"))
                if self.stopping.wait(UNAVAILABLE_RETRY_SECONDS):
                    return


def queue_thread(repo: Repo, thread: str) -> bool:
    """`uwf thread run --detach`: queue an active thread for workers (False: it already was)."""
    from ...thread.ops import active_thread, resolve_thread_id

    return repo.backend.queue.enqueue(active_thread(repo, resolve_thread_id(repo, thread)).thread)
