"""Live step output on a PostgreSQL root (`uwf thread live` on any host): NOTIFY on the thread's
channel, LISTEN to read it. Nothing is stored: a reader sees what is said from when it listens.

The step's session sends, from a thread of its own, whatever lines have gathered since its last
send, in one NOTIFY: an agent that prints fast costs a round trip per batch, not per line, and
never waits on the database.
"""

from __future__ import annotations

import queue
import threading

from ..records import LIVE_CUT, LIVE_MAX_BYTES, live_line
from .db import Database

STEP_BEGINS = "\x01"  # the first line a step's sender sends: its lines begin here
MAX_PAYLOAD = 7000  # bytes of one NOTIFY (the server's limit is 8000)
CLOSE_SECONDS = 2.0  # what the step's end waits for the last lines to go
PENDING = 10_000  # lines waiting to be sent at most


def channel(thread: str) -> str:
    """The thread's channel: an identifier made of its id (a ULID), so it can be LISTENed to as is."""
    if not thread.isalnum() or not thread.isascii():
        raise ValueError(f"not a thread id: {thread!r}")
    return f"uwf_live_{thread.lower()}"


def batches(lines: list[str]) -> list[str]:
    """Lines joined into payloads under MAX_PAYLOAD bytes; a longer line is cut to fit."""
    out: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        data = line.encode("utf-8", "replace")
        if len(data) > MAX_PAYLOAD:
            line = data[: MAX_PAYLOAD - 3].decode("utf-8", "ignore") + "..."
            data = line.encode()
        if current and size + len(data) + 1 > MAX_PAYLOAD:
            out.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += len(data) + 1
    if current:
        out.append("\n".join(current))
    return out


class LiveSender:
    """Sends a step's lines on its lease's session (shared under `guard`); a failed send costs
    only the live view. At most LIVE_MAX_BYTES a step, and at most PENDING lines wait: past
    either, lines are dropped (said once), never held in memory."""

    def __init__(self, conn, guard: threading.Lock, thread: str) -> None:
        self.conn = conn
        self.guard = guard
        self.channel = channel(thread)
        self.lines: queue.Queue = queue.Queue(PENDING)
        self.left = LIVE_MAX_BYTES
        self.dropped = 0
        self.closed = False
        self.lines.put(STEP_BEGINS)
        self.worker = threading.Thread(target=self._send, name="uwf-live", daemon=True)
        self.worker.start()

    def put(self, line: str) -> None:
        if self.left <= 0:
            return
        line = live_line(line)
        if line == STEP_BEGINS:
            line = "\\x01"  # an agent's line is never read as the marker
        self.left -= len(line) + 1
        try:
            self.lines.put_nowait(line if self.left > 0 else LIVE_CUT)
        except queue.Full:
            self.dropped += 1

    def close(self) -> None:
        try:
            self.lines.put(None, timeout=CLOSE_SECONDS)
        except queue.Full:
            pass
        self.worker.join(CLOSE_SECONDS)
        with self.guard:
            self.closed = True  # the session goes back to its pool: a sender still at work sends no more

    def _send(self) -> None:
        while True:
            pending = [self.lines.get()]
            while not self.lines.empty():
                pending.append(self.lines.get())
            if self.dropped:
                pending.insert(-1, f"uwf: {self.dropped} lines were not sent: the live view fell behind")
                self.dropped = 0
            ended = None in pending
            for payload in batches([line for line in pending if line is not None]):
                try:
                    with self.guard:
                        if self.closed:
                            return
                        self.conn.execute("select pg_notify(%s, %s)", (self.channel, payload))
                except Exception:
                    return  # the session is gone: the step's end says what became of it
            if ended:
                return


class PgLiveFeed:
    """A session of its own that LISTENs on the thread's channel."""

    def __init__(self, db: Database, thread: str) -> None:
        self.db = db
        self.channel = channel(thread)
        self.conn = None

    def attach(self, running_since: int | None) -> None:
        """Nothing is kept: what is said from now on is told."""

    def listen(self) -> None:
        if self.conn is None:
            self.conn = self.db.connect()
            with self.db.errors("listen to"):
                self.conn.execute(f"listen {self.channel}")

    def read(self, timeout: float) -> list[str | None]:
        self.listen()
        payloads: list[str] = []
        with self.db.errors("listen to"):
            payloads += (payload for _, payload in self.conn.notifies(timeout=timeout, stop_after=1))
            payloads += (payload for _, payload in self.conn.notifies(timeout=0, stop_after=10_000))  # what came with it
        return [None if line == STEP_BEGINS else line for payload in payloads for line in payload.split("\n")]

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def __enter__(self) -> PgLiveFeed:
        self.listen()  # from now on: what was said before is not kept
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
