"""The step's end of an agent's trace pipe: the spans an agent process reports (uwf-builtin's LLM
and tool calls), read as they come and grafted under the agent's span when it ends.

The agent is untrusted: what it sends is bounded (count, bytes, depth, attribute count and size),
its times are held to the agent's run, and the export redacts it like every other attribute.
W3C TRACEPARENT is set too, so an agent that exports its own traces joins the thread's.
"""

from __future__ import annotations

import json
import os
import threading
import time

from .spans import KINDS, TRACE_CONTENT_ENV, TRACE_FD_ENV, Span

MAX_BYTES = 4 << 20  # of lines read from one agent run; the rest is drained and dropped
MAX_SPANS = 1000
MAX_DEPTH = 8
MAX_ATTRIBUTES = 64
MAX_NAME = 200
MAX_KEY = 128
READ_WAIT_SECONDS = 1.0  # after the run, for the last lines (every process of the agent has ended)


class TracePipe:
    def __init__(self, parent: Span, trace_id: int, content: bool) -> None:
        self.parent, self.content = parent, content
        self._read, self.fd = os.pipe()
        self.env = {TRACE_FD_ENV: str(self.fd), "TRACEPARENT": f"00-{trace_id:032x}-{parent.span_id:016x}-01"}
        if content:
            self.env[TRACE_CONTENT_ENV] = "1"
        self._lines: list[bytes] = []
        self._reader = threading.Thread(target=self._drain, name="uwf-trace-pipe", daemon=True)
        self._reader.start()

    def close_writer(self) -> None:
        """After the spawn: only the agent holds the write end now."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def collect(self) -> None:
        """Graft what the agent sent under the parent span (call once the agent has ended)."""
        self.close_writer()
        self._reader.join(READ_WAIT_SECONDS)
        budget = [MAX_SPANS]
        low, high = self.parent.start_ns, time.time_ns()
        for line in self._lines:
            try:
                data = json.loads(line)
            except ValueError:
                continue
            found = _span(data, 0, budget, low, high)
            if found is not None:
                self.parent.children.append(found)

    def _drain(self) -> None:
        size, pending = 0, b""
        try:
            while True:
                chunk = os.read(self._read, 65536)
                if not chunk:
                    break
                if size >= MAX_BYTES:
                    continue
                size += len(chunk)
                *lines, pending = (pending + chunk).split(b"\n")
                self._lines.extend(lines)
        finally:
            os.close(self._read)


def _span(data: object, depth: int, budget: list[int], low: int, high: int) -> Span | None:
    if not isinstance(data, dict) or depth > MAX_DEPTH or budget[0] <= 0:
        return None
    name = data.get("name")
    if not isinstance(name, str) or not name:
        return None
    budget[0] -= 1
    kind = data.get("kind") if data.get("kind") in KINDS else "CHAIN"
    start = _time(data.get("start"), low, high)
    found = Span(name[:MAX_NAME], kind, None, start_ns=start)
    found.end_ns = max(start, _time(data.get("end"), low, high))
    attributes = data.get("attributes")
    if isinstance(attributes, dict):
        found.put({str(key)[:MAX_KEY]: value for key, value in list(attributes.items())[:MAX_ATTRIBUTES] if _plain(value)})
    if isinstance(data.get("error"), str):
        found.fail(data["error"])
    children = data.get("children")
    if isinstance(children, list):
        for child in children:
            grafted = _span(child, depth + 1, budget, low, high)
            if grafted is not None:
                found.children.append(grafted)
    return found


def _time(value: object, low: int, high: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return min(max(value, low), high)
    return high


def _plain(value: object) -> bool:
    if isinstance(value, (str, bool, int, float)):
        return True
    return isinstance(value, list) and len(value) <= 64 and all(isinstance(item, (str, int, float)) and not isinstance(item, bool) for item in value)
