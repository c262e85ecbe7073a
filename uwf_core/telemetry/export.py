"""A finished step's spans to an OTLP/HTTP collector, through the OpenTelemetry SDK (`.[otel]`).

The SDK (~100 ms of imports) is imported in a thread of its own, started when a step's agent
starts (`warm`), so a step waits for it only if its agent was quicker. Spans are built as the
SDK's ReadableSpans with uwf's own ids and times and queued on a BatchSpanProcessor: batched,
bounded (the SDK's queue drops what overflows), sent from its thread. A collector that cannot be
reached is found by one connection attempt before the first batch, then left alone for a while:
one warning line, and a step never waits on it. Every string attribute is redacted on the way.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from ..encoding.ids import CROCKFORD
from ..version import __version__
from .spans import Span

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Callable

    from .settings import TraceSettings

EXIT_FLUSH_SECONDS = 3.0  # at most this long at a process's exit for the last spans to go
PROBE_SECONDS = 1.0  # a collector that does not accept a connection in this long is down
RETRY_DOWN_SECONDS = 30.0  # a down collector is tried again after this long (a worker lives on)
EXPORT_TIMEOUT_SECONDS = 10.0  # one export request (OTEL_EXPORTER_OTLP_TIMEOUT over it)
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")

_EXPORTERS: dict[tuple, Exporter] = {}
_LOCK = threading.Lock()
_said: set[str] = set()


def _stderr_warning(message: str) -> None:
    print(f"uwf: warning: {message}", file=sys.stderr, flush=True)


_warn: list[Callable[[str], None]] = [_stderr_warning]


def set_warning_handler(handler: Callable[[str], None] | None) -> None:
    """Where export's warnings go (uwf-tui shows them as notices); None: stderr."""
    _warn[0] = handler or _stderr_warning


def warn_once(message: str) -> None:
    if message not in _said:
        _said.add(message)
        _warn[0](message)


def exporter_for(settings: TraceSettings) -> Exporter:
    """The process's exporter for these settings (one SDK pipeline per collector)."""
    key = (settings.url, settings.headers)
    with _LOCK:
        exporter = _EXPORTERS.get(key)
        if exporter is None:
            exporter = _EXPORTERS[key] = Exporter(settings)
        return exporter


def flush_all(timeout: float = EXIT_FLUSH_SECONDS) -> None:
    """Send what is queued, waiting at most `timeout` in all (tests; the exit does it too)."""
    deadline = time.monotonic() + timeout
    for exporter in list(_EXPORTERS.values()):
        exporter.flush(max(0.0, deadline - time.monotonic()))


def trace_id_of(thread: str) -> int:
    """A thread's trace id: its ULID's 128 bits, so every process that steps it names one trace."""
    value = 0
    for char in thread:
        value = value * 32 + CROCKFORD.index(char)
    return value & ((1 << 128) - 1) or 1


def span_id_of(node_hash: str) -> int:
    """A step's span id: its StepNode's 64-bit hash."""
    value = 0
    for char in node_hash:
        value = value * 32 + CROCKFORD.index(char)
    return value & ((1 << 64) - 1) or 1


class Exporter:
    def __init__(self, settings: TraceSettings) -> None:
        self.settings = settings
        self._thread: threading.Thread | None = None
        self._processor = None
        self._sdk = None

    def warm(self) -> None:
        """Start importing the SDK (a step calls this as its agent starts)."""
        with _LOCK:
            if self._thread is None:
                self._thread = threading.Thread(target=self._build, name="uwf-otel-import", daemon=True)
                self._thread.start()

    def emit(self, root: Span, trace_id: int, redact: Callable[[object], object]) -> None:
        """Queue `root` and everything under it (all ended) as spans of trace `trace_id`."""
        self.warm()
        self._thread.join()
        if self._processor is None:
            return
        sdk = self._sdk
        for readable in _readables(sdk, root, trace_id, None, redact):
            self._processor.on_end(readable)

    def flush(self, timeout: float) -> None:
        if self._processor is not None:
            self._processor.force_flush(int(timeout * 1000))

    def _build(self) -> None:
        try:
            self._sdk = _Sdk(self.settings)
        except ImportError as exc:
            warn_once(
                f"traces are asked for ({self.settings.source}) but the OpenTelemetry SDK cannot be imported "
                f"({exc}); install uwf with its otel extra: pip install 'uwf[otel]'"
            )
            return
        if self.settings.protocol:
            warn_once(f"uwf sends traces over OTLP/HTTP (http/protobuf), not {self.settings.protocol}: {self.settings.url}")
        self._processor = self._sdk.processor
        import atexit

        atexit.register(self.flush, EXIT_FLUSH_SECONDS)


class _Sdk:
    """The SDK's pieces, imported together."""

    def __init__(self, settings: TraceSettings) -> None:
        import logging

        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags
        from opentelemetry.trace.status import Status, StatusCode

        self.ReadableSpan, self.Link, self.SpanContext, self.SpanKind = ReadableSpan, Link, SpanContext, SpanKind
        self.sampled = TraceFlags(TraceFlags.SAMPLED)
        self.ok, self.Status, self.ERROR = Status(StatusCode.OK), Status, StatusCode.ERROR
        self.resource = Resource.create({"service.name": "uwf", "service.version": __version__})  # OTEL_SERVICE_NAME wins
        self.scope = InstrumentationScope("uwf", __version__)
        timeout = None if any(os.environ.get(name) for name in ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")) else EXPORT_TIMEOUT_SECONDS
        inner = OTLPSpanExporter(endpoint=settings.url, headers=dict(settings.headers) or None, timeout=timeout)
        self.processor = BatchSpanProcessor(_Guarded(inner, settings, SpanExportResult))
        handler = _one_line_handler()
        for name in ("opentelemetry.exporter", "opentelemetry.sdk"):
            logger = logging.getLogger(name)
            logger.addHandler(handler)
            logger.propagate = False  # the SDK's own log lines, tracebacks included, become one warning


class _Guarded:
    """The OTLP exporter behind a check that the collector takes connections: a dead one costs
    one connection attempt, not the SDK's retries with backoff, and is tried again later."""

    def __init__(self, inner, settings: TraceSettings, results) -> None:
        self.inner, self.settings, self.results = inner, settings, results
        self.down_until: float | None = None
        self.checked = False

    def export(self, spans):
        now = time.monotonic()
        if self.down_until is not None and now < self.down_until:
            return self.results.FAILURE
        if not self.checked or self.down_until is not None:
            problem = _unreachable(self.settings.url)
            if problem is not None:
                self.down_until = now + RETRY_DOWN_SECONDS
                warn_once(f"traces cannot be sent to {self.settings.url} ({self.settings.source}): {problem}; steps go on without them")
                return self.results.FAILURE
            self.checked, self.down_until = True, None
        return self.inner.export(spans)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _unreachable(url: str) -> str | None:
    """Why nothing at `url` takes a connection, or None (also when a proxy is in the way)."""
    import socket
    from urllib.parse import urlsplit

    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return None
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname or "", port), timeout=PROBE_SECONDS):
            return None
    except ValueError as exc:
        return f"not a URL ({exc})"
    except TimeoutError:
        return f"no answer within {PROBE_SECONDS:g}s"
    except OSError as exc:
        return (exc.strerror or str(exc)).lower()


def _one_line_handler():
    """A logging handler that turns the SDK's records into uwf's one-line warnings."""
    import logging

    class OneLine(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warn_once(f"trace export: {record.getMessage().splitlines()[0]}")

    return OneLine(logging.WARNING)


def _readables(sdk: _Sdk, span: Span, trace_id: int, parent, redact) -> list:
    context = sdk.SpanContext(trace_id, span.span_id, is_remote=False, trace_flags=sdk.sampled)
    attributes = {"openinference.span.kind": span.kind}
    for key, value in span.attributes.items():
        attributes[key] = _attribute(value, redact)
    status = sdk.ok if span.error is None else sdk.Status(sdk.ERROR, redact(span.error))
    links = [sdk.Link(sdk.SpanContext(link_trace, link_span, is_remote=True, trace_flags=sdk.sampled)) for link_trace, link_span in span.links]
    readable = sdk.ReadableSpan(
        span.name,
        context=context,
        parent=parent,
        resource=sdk.resource,
        attributes=attributes,
        links=links,
        kind=sdk.SpanKind.CLIENT if span.kind == "LLM" else sdk.SpanKind.INTERNAL,
        status=status,
        start_time=span.start_ns,
        end_time=span.end_ns or span.start_ns,
        instrumentation_scope=sdk.scope,
    )
    found = [readable]
    for child in span.children:
        found += _readables(sdk, child, trace_id, context, redact)
    return found


def _attribute(value: object, redact) -> object:
    """A value OTLP carries: text (redacted), a number, a flag, or a list of one of those."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return [redact(item) for item in value]
    if isinstance(value, (list, tuple)) and all(isinstance(item, (int, float)) and not isinstance(item, bool) for item in value):
        return list(value)
    import json

    return redact(json.dumps(value, default=str, ensure_ascii=False))
