"""Spans recorded as plain values while a step runs; telemetry/export.py sends them when it ends.

Nothing here imports OpenTelemetry. A step records a few objects and no I/O, so a step with
tracing off pays one context-variable read per span, and one with tracing on does not wait for
the SDK's import until the step is over. A span's id can then be what the step turned out to be:
a step's span id is its StepNode's hash (engine/tracing.py), so a later step can link to it.

An agent process (uwf-builtin) records the same way: given UWF_TRACE_FD by the step that runs
it, each span it ends at the top is one JSON line on that pipe, and the step grafts them under
the agent's span (telemetry/pipe.py).
"""

from __future__ import annotations

import json
import os
import time
from contextvars import ContextVar

# OpenInference span kinds, as Arize Phoenix shows them (`openinference.span.kind`).
CHAIN, AGENT, LLM, TOOL = "CHAIN", "AGENT", "LLM", "TOOL"
KINDS = frozenset({CHAIN, AGENT, LLM, TOOL})
TRACE_FD_ENV = "UWF_TRACE_FD"  # an agent's end of the pipe its spans go to
TRACE_CONTENT_ENV = "UWF_TRACE_CONTENT"  # "1": the agent may attach prompts and answers
MAX_TEXT = 32_000  # characters of one attribute kept; the rest is cut with a mark


class Span:
    """One span: a name, an OpenInference kind, wall-clock times in ns, attributes, children."""

    __slots__ = ("name", "kind", "start_ns", "end_ns", "attributes", "children", "error", "span_id", "links")

    def __init__(self, name: str, kind: str = CHAIN, attributes: dict | None = None, start_ns: int | None = None) -> None:
        self.name = name
        self.kind = kind
        self.start_ns = time.time_ns() if start_ns is None else start_ns
        self.end_ns: int | None = None
        self.attributes: dict = {}
        self.children: list[Span] = []
        self.error: str | None = None
        self.span_id = int.from_bytes(os.urandom(8), "big") or 1
        self.links: list[tuple[int, int]] = []  # (trace id, span id) of spans this one follows from
        if attributes:
            self.put(attributes)

    def put(self, attributes: dict) -> None:
        """Keep the attributes that have a value (None leaves one out)."""
        for key, value in attributes.items():
            if value is not None:
                self.attributes[key] = _clip(value)

    def fail(self, message: str) -> None:
        """The span ends in error (a failed or killed attempt, a call that raised)."""
        self.error = _clip(message.splitlines()[0] if message else "failed")

    def end(self) -> None:
        if self.end_ns is None:
            self.end_ns = time.time_ns()

    def to_json(self) -> dict:
        data: dict = {"name": self.name, "kind": self.kind, "start": self.start_ns, "end": self.end_ns, "attributes": self.attributes}
        if self.error is not None:
            data["error"] = self.error
        if self.children:
            data["children"] = [child.to_json() for child in self.children]
        return data


class _NoSpan:
    """What `span()` gives when nothing records: every method does nothing."""

    __slots__ = ()

    def put(self, attributes: dict) -> None:
        pass

    def fail(self, message: str) -> None:
        pass


NO_SPAN = _NoSpan()
_CURRENT: ContextVar[Span | None] = ContextVar("uwf_span", default=None)
_CONTENT: ContextVar[bool] = ContextVar("uwf_span_content", default=False)
_agent_fd: list[int | None] = []  # read from the environment once per process


class span:
    """`with span("chat gpt-4o", LLM, {...}) as s:` — a child of the span open in this context; NO_SPAN
    (no cost but this check) when none is, unless this is an agent process given a trace pipe."""

    __slots__ = ("name", "kind", "attributes", "_span", "_token", "_top")

    def __init__(self, name: str, kind: str = CHAIN, attributes: dict | None = None) -> None:
        self.name, self.kind, self.attributes = name, kind, attributes
        self._span = self._token = None
        self._top = False

    def __enter__(self) -> Span | _NoSpan:
        parent = _CURRENT.get()
        if parent is None:
            if _trace_fd() is None:
                return NO_SPAN
            self._top = True
        child = Span(self.name, self.kind, self.attributes)
        if parent is not None:
            parent.children.append(child)
        self._span, self._token = child, _CURRENT.set(child)
        return child

    def __exit__(self, kind, error, traceback) -> None:
        child = self._span
        if child is None:
            return
        _CURRENT.reset(self._token)
        if error is not None and child.error is None:
            child.fail(error_text(error))
        child.end()
        if self._top:
            _send(child)


def error_text(error: BaseException) -> str:
    """How a span says what ended it: uwf's own one-line message as it is, else the exception's type too."""
    message = getattr(error, "message", None)
    if isinstance(message, str) and message:
        return message
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def open_root(root: Span, content: bool) -> tuple:
    """Make `root` the open span of this context (a step's); give the tokens to `close_root`."""
    return _CURRENT.set(root), _CONTENT.set(content)


def close_root(tokens: tuple) -> None:
    _CURRENT.reset(tokens[0])
    _CONTENT.reset(tokens[1])


def current() -> Span | None:
    return _CURRENT.get()


def content_on() -> bool:
    """Whether prompts and answers may be attached (`otel: {content: true}`; an agent is told by
    UWF_TRACE_CONTENT). Callers attach them as they are: every string is redacted on export."""
    return _CONTENT.get() or (_trace_fd() is not None and os.environ.get(TRACE_CONTENT_ENV) == "1")


def _trace_fd() -> int | None:
    if not _agent_fd:
        value = os.environ.get(TRACE_FD_ENV, "")
        _agent_fd.append(int(value) if value.isdigit() else None)
    return _agent_fd[0]


def _send(top: Span) -> None:
    """One line per top-level span on the agent's trace pipe; a closed pipe loses the span only."""
    line = (json.dumps(top.to_json(), separators=(",", ":"), default=str) + "\n").encode("utf-8")
    try:
        while line:
            line = line[os.write(_trace_fd(), line):]
    except OSError:
        _agent_fd[0] = None  # the step is gone: record nothing more


def _clip(value: object) -> object:
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return value[:MAX_TEXT] + f"… [{len(value) - MAX_TEXT} more characters]"
    return value
