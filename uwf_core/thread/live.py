"""Following a thread from any process or host (`uwf thread live`, the TUI on steps it did not
start): each step as it starts, its agent's lines as they come (the lease says them:
store/base.py StepLease.say), each node the head moves to, and the thread's end.

Nothing here steps: a follower only reads, so any number of them may watch one thread.
"""

from __future__ import annotations

import time

from ..encoding.records import record
from ..errors import NotFoundError, UwfError
from .model import StepNode
from .nodes import read_step
from .ops import ThreadInfo, thread_info

TYPE_CHECKING = False
if TYPE_CHECKING:
    from threading import Event
    from typing import Any, Callable

    from ..repo import Repo
    from ..store.base import LiveFeed

POLL_SECONDS = 0.25  # how often the head and the step lock are looked at while lines are awaited
LAST_LINES_SECONDS = 3.0  # a thread that ended: how long its last step's lines are waited for
MAX_LANDED = 200  # nodes told at once when the head moved far (a pick, a long run between looks)


@record(frozen=True)
class LiveEvent:
    """`kind`: "started" (a step began), "line" (its agent said `text`), "step" (the head moved
    to `head`), "failed" (a step ended without moving it; `text` is why), "paused" / "unpaused"
    (no step starts until it is unpaused / steps may start again), "ended" (the thread ended;
    `text` is why). In JSON `text` is named for what it is: `text`, `error` or `reason`."""

    kind: str
    thread: str
    role: str | None = None
    agent: str | None = None
    text: str | None = None
    head: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = {"event": self.kind, "thread": self.thread}
        named = {"failed": "error", "ended": "reason"}.get(self.kind, "text")
        for key, value in (("role", self.role), ("agent", self.agent), (named, self.text), ("head", self.head)):
            if value is not None:
                data[key] = value
        return data

    def line(self) -> str:
        """As `uwf thread live` prints it."""
        if self.kind == "line":
            return self.text or ""
        if self.kind == "started":
            return f"-- {self.role or 'a step'} ({self.agent or '?'}) is running"
        if self.kind == "step":
            return f"{self.role} ({self.agent}) -> {self.head}"
        if self.kind == "failed":
            return f"x {self.role or 'a step'} ({self.agent or '?'}) {self.text}"
        if self.kind == "paused":
            return f"thread {self.thread} is paused: no step starts until `uwf thread unpause {self.thread}`"
        if self.kind == "unpaused":
            return f"thread {self.thread} is unpaused"
        return f"thread {self.thread} ended ({self.text})"


def latest_thread(repo: Repo, role: str | None = None) -> str:
    """The thread whose step (of `role`) started last; else the newest active thread."""
    from .reports import running_report

    running = [item for item in running_report(repo) if role is None or item["role"] == role]
    if running:
        newest: str = max(running, key=lambda item: item.get("startedAt") or 0)["thread"]
        return newest
    heads = repo.threads.heads()
    if not heads:
        raise NotFoundError("no active thread to follow (start one: `uwf thread start`)")
    return max(heads)  # ULIDs sort by when they were made


def follow_thread(
    repo: Repo, thread: str, on_event: Callable[[LiveEvent], None], *, role: str | None = None, stop: Event | None = None
) -> ThreadInfo:
    """Tell `on_event` what happens on `thread` until it ends (its ThreadInfo then) or `stop` is
    set. `role`: only that role's steps and lines (the end is always told)."""
    follower = _Follower(repo, thread_info(repo, thread), on_event, role)
    with repo.backend.live_feed(follower.thread) as feed:
        running = repo.locks.running(follower.thread)
        feed.attach(running.started_at if running is not None else None)  # a step that ended before: not told
        follower.announce()
        while follower.info.active and not (stop is not None and stop.is_set()):
            follower.take(feed.read(POLL_SECONDS))
            if follower.moved():
                follower.take(_last_lines(repo, follower.thread, feed, ended=not follower.info.active))
                follower.land()
            follower.announce()
    if not follower.info.active:
        on_event(LiveEvent("ended", follower.thread, text=follower.info.reason or "done"))
    return follower.info


class _Follower:
    """What a follower knows: the head it last told, and the step it last saw start."""

    def __init__(self, repo: Repo, info: ThreadInfo, on_event: Callable[[LiveEvent], None], role: str | None) -> None:
        self.repo, self.info, self.on_event, self.role = repo, info, on_event, role
        self.thread, self.head = info.thread, info.head
        self.step_key: tuple[str | None, int, int | None] | None = None  # the running step's (host, pid, started_at)
        self.step_role: str | None = None
        self.paused: bool | None = None  # not looked at yet

    def take(self, items: list[str | None]) -> None:
        """Lines as they came; None where a new step's lines begin: the last one's landing, and the
        new one's start, are told there."""
        for item in items:
            if item is None:
                if self.moved():
                    self.land()
                self.announce()
            elif self.role is None or self.step_role == self.role:
                self.on_event(LiveEvent("line", self.thread, self.step_role, text=item))

    def announce(self) -> None:
        running = self.repo.locks.running(self.thread)
        key = None if running is None else (running.host, running.pid, running.started_at)
        if self.step_key is not None and key != self.step_key:  # the step seen running has ended
            self.failed()
        if running is None:
            self.step_key = None
            self.pause_changed()
            return
        if key != self.step_key and running.role is not None:  # its role is known once its moderator has chosen
            self.step_key, self.step_role = key, running.role
            if self.role is None or running.role == self.role:
                self.on_event(LiveEvent("started", self.thread, running.role, running.agent))

    def pause_changed(self) -> None:
        """Told when the thread was paused or unpaused since the last look (between steps only: a
        step in flight finishes either way)."""
        paused = self.thread in self.repo.threads.paused()
        if paused != self.paused:
            if self.paused is not None or paused:
                self.on_event(LiveEvent("paused" if paused else "unpaused", self.thread))
            self.paused = paused

    def failed(self) -> None:
        """A step that ended without moving the head: its attempt's record says why."""
        if self.moved():
            return  # it landed: the loop tells its nodes
        last = self.repo.runs.read(self.thread)[-1:]
        if last and not last[0].ok and last[0].head == self.head and (self.role is None or last[0].role == self.role):
            record = last[0]
            self.on_event(LiveEvent("failed", self.thread, record.role, record.agent, text=f"{record.status}: {record.error or 'no reason given'}"))

    def moved(self) -> bool:
        now = self.repo.threads.heads().get(self.thread)
        if now is None:
            self.info = thread_info(self.repo, self.thread)
            now = self.info.head
        self.now = now
        return now != self.head

    def land(self) -> None:
        for hash_, node in _landed(self.repo, self.head, self.now):
            if self.role is None or node.role == self.role:
                self.on_event(LiveEvent("step", self.thread, node.role, node.agent, head=hash_))
        self.head = self.now


def _last_lines(repo: Repo, thread: str, feed: LiveFeed, *, ended: bool) -> list[str | None]:
    """What the step that moved the head said last: it may still be on its way (a PostgreSQL
    root sends from a thread of its own until the lease ends), so a thread that ended waits for
    its step's lease to go, briefly."""
    deadline = time.monotonic() + LAST_LINES_SECONDS
    lines = _drained(feed, deadline)
    while ended and repo.locks.running(thread) is not None and time.monotonic() < deadline:
        lines += feed.read(0.05)
    return lines + (_drained(feed, deadline) if ended else [])


def _drained(feed: LiveFeed, deadline: float) -> list[str | None]:
    """Every line there is now (a feed gives a bounded part at a look), until `deadline`."""
    lines: list[str | None] = []
    while time.monotonic() < deadline:
        more = feed.read(0)
        if not more:
            break
        lines += more
    return lines


def _landed(repo: Repo, old: str, new: str) -> list[tuple[str, StepNode]]:
    """The step nodes from after `old` up to `new`, oldest first (just `new` when it is not
    `old`'s descendant: a fork picked, a head set by hand)."""
    found: list[tuple[str, StepNode]] = []
    current: str | None = new
    while current and current != old and len(found) < MAX_LANDED:
        try:
            node = read_step(repo.nodes, current)
        except UwfError:  # a StartNode (a resume's), or a node that cannot be read: nothing before it is told
            break
        found.append((current, node))
        current = node.prev
    found.reverse()
    return found
