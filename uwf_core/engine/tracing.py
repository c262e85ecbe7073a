"""A step attempt as an OpenTelemetry trace: one span for the attempt, the agent run, the
extraction and every LLM call under it, exported when the attempt ends (telemetry/).

A thread is one trace whichever process steps it: the trace id is the thread's ULID, and a
step's span id is the hash of the StepNode it wrote. A step that starts from another thread's
step (a fork's first, a picked candidate's successor) links to that step's span; who wrote a step
is kept in derived data beside it. With tracing off, `step_trace` is one settings lookup.
"""

from __future__ import annotations

import os
import time
from contextvars import ContextVar

from ..errors import UwfError
from ..telemetry.spans import AGENT, CHAIN, Span, close_root, error_text, open_root, span
from ..telemetry.settings import trace_settings

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from ..repo import Repo
    from ..store.records import RunningStep
    from ..telemetry.export import Exporter
    from ..thread.ops import ThreadInfo
    from .attempt import StepOptions

WROTE_KEY = "otel1:wrote:"  # derived data: step hash -> the thread whose traced step wrote it
TRIES_KEY = "otel1:tries:"  # derived data: thread -> "HEAD N", the attempts made at its head

_ACTIVE: ContextVar[StepTrace | None] = ContextVar("uwf_step_trace", default=None)


class _NoTrace:
    """The step trace when tracing is off."""

    root = None

    def __enter__(self) -> _NoTrace:
        return self

    def __exit__(self, *exc) -> None:
        pass

    def note(self, status: str, step: str | None, error: str | None, **attributes: object) -> None:
        pass

    def put(self, attributes: dict) -> None:
        pass


NO_TRACE = _NoTrace()


def step_trace(repo: Repo, info: ThreadInfo, options: StepOptions, lease_interrupted: RunningStep | None = None) -> StepTrace | _NoTrace:
    """The trace of one attempt at `info`'s next step (NO_TRACE when nothing asks for traces)."""
    if not options.traced:
        return NO_TRACE
    try:
        settings = trace_settings(repo.config, os.environ, repo.env_values)
    except UwfError:
        return NO_TRACE  # config.yaml or .env cannot be read: the step says so itself
    if settings is None:
        return NO_TRACE
    from ..telemetry.export import exporter_for, warn_once

    if settings.off is not None:
        warn_once(settings.off)
        return NO_TRACE
    return StepTrace(repo, info, options, settings.content, exporter_for(settings), lease_interrupted)


class StepTrace:
    def __init__(self, repo: Repo, info: ThreadInfo, options: StepOptions, content: bool, exporter: Exporter,
                 lost: RunningStep | None = None) -> None:
        from ..telemetry.export import trace_id_of

        self.repo, self.info, self.content, self.exporter, self.lost = repo, info, content, exporter, lost
        self.trace_id = trace_id_of(info.thread)
        self.root = Span("step", CHAIN, {
            "uwf.thread": info.thread, "session.id": info.thread, "uwf.workflow.hash": info.workflow,
            "uwf.head": info.head, "uwf.worker": options.worker, "uwf.candidate_of": options.candidate_of,
        })
        self._tokens = None
        self._step: str | None = None
        self.tries = 1

    def __enter__(self) -> StepTrace:
        self._tokens = open_root(self.root, self.content)
        self._active = _ACTIVE.set(self)
        try:
            self._link_and_count()
        except UwfError:
            pass  # derived data that cannot be read: no link and the first attempt's number, the step goes on
        if self.lost is not None:
            self._interrupted(self.lost)
        return self

    def __exit__(self, kind, error, traceback) -> None:
        close_root(self._tokens)
        _ACTIVE.reset(self._active)
        if error is not None and self.root.error is None and "uwf.status" not in self.root.attributes:
            self.root.fail(error_text(error))
        self.root.end()
        try:
            self._finish()
        except Exception as exc:  # tracing never fails a step
            from ..telemetry.export import warn_once

            warn_once(f"a step's trace could not be sent: {type(exc).__name__}: {exc}")

    def put(self, attributes: dict) -> None:
        self.root.put(attributes)

    def note(self, status: str, step: str | None, error: str | None, **attributes: object) -> None:
        """The attempt as runs.jsonl records it (engine/attempt.Attempt.record)."""
        self.root.put({"uwf.status": status, "uwf.step": step, **{f"uwf.{key}": value for key, value in attributes.items()}})
        if step is not None:
            self._step = step
        if error is not None and status != "ok":
            self.root.fail(error)

    def _interrupted(self, lost: RunningStep) -> None:
        """The attempt a process that died left behind, as a span of its own (its own spans died
        with it), counted among the attempts at this head."""
        from .attempt import interruption

        started = (lost.started_at or int(time.time() * 1000)) * 1_000_000
        dead = Span(f"step {lost.role}" if lost.role else "step", CHAIN, {
            "uwf.thread": self.info.thread, "session.id": self.info.thread, "uwf.workflow.hash": self.info.workflow,
            "uwf.role": lost.role, "uwf.agent": lost.agent, "uwf.head": self.info.head, "uwf.status": "killed",
            "uwf.worker": lost.worker, "uwf.attempt": self.tries,
        }, start_ns=started)
        dead.fail(interruption(lost))
        dead.end()
        self.exporter.emit(dead, self.trace_id, self._redact)
        self.tries += 1
        self.root.put({"uwf.attempt": self.tries})

    def _link_and_count(self) -> None:
        """Link to the step this one starts from when another thread wrote it; number the attempt."""
        nodes = self.repo.nodes.nodes
        writer = nodes.derived(WROTE_KEY + self.info.head)
        if writer is not None and writer.decode("ascii", "replace") != self.info.thread:
            from ..telemetry.export import span_id_of, trace_id_of

            self.root.links.append((trace_id_of(writer.decode("ascii")), span_id_of(self.info.head)))
            self.root.put({"uwf.follows.thread": writer.decode("ascii")})
        raw = nodes.derived(TRIES_KEY + self.info.thread)
        head, _, count = (raw or b"").decode("ascii", "replace").partition(" ")
        self.tries = int(count) + 1 if head == self.info.head and count.isdigit() else 1
        self.root.put({"uwf.attempt": self.tries})

    def _finish(self) -> None:
        attributes = self.root.attributes
        role = attributes.get("uwf.role")
        self.root.name = f"step {role}" if role else "end" if attributes.get("uwf.done") else "step"
        nodes = self.repo.nodes.nodes
        with nodes.batch(durable=False):  # rebuildable, and only for traces: no fsync of their own
            nodes.put_derived(TRIES_KEY + self.info.thread, f"{self.info.head} {self.tries}".encode("ascii"))
            if self._step is not None:
                nodes.put_derived(WROTE_KEY + self._step, self.info.thread.encode("ascii"))
        if self._step is not None:
            from ..telemetry.export import span_id_of

            self.root.span_id = span_id_of(self._step)
            if self.content:
                self._attach_output(self._step)
        self.exporter.emit(self.root, self.trace_id, self._redact)

    def _attach_output(self, step: str) -> None:
        import json

        try:
            payload = self.repo.nodes.get(step).payload
            output = self.repo.nodes.get(payload["output"]).payload
        except (UwfError, KeyError, TypeError):
            return
        self.root.put({"output.value": json.dumps(output, ensure_ascii=False), "output.mime_type": "application/json"})

    def _redact(self, value: object) -> object:
        from .attempt import secrets_or_none

        return secrets_or_none(self.repo).redact(value)


def agent_span(label: str, protocol: str, command: tuple[str, ...] | list[str], containment: str):
    """The span of one agent run (under the step's), with the SDK's import started beside it."""
    trace = _ACTIVE.get()
    if trace is not None:
        trace.exporter.warm()
    return span(f"agent {label}", AGENT, {
        "uwf.agent": label,
        "uwf.agent.protocol": protocol,
        "uwf.agent.command": " ".join(command) if command else None,
        "uwf.containment": containment,
    })


def active_trace() -> StepTrace | None:
    return _ACTIVE.get()
