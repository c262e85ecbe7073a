"""The OpenTelemetry SDK's side (`.[otel]`): uwf's spans as the SDK's ReadableSpans, with uwf's own
ids and times, sent by the OTLP/HTTP exporter. Imported only where spans are sent: a long-lived
process's export thread, or the shipper a `uwf thread step` hands its spans to."""

from __future__ import annotations

from ..version import __version__
from .collector import DOWN, FAILED, OK, unreachable, write_status

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any, Callable

    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace import SpanContext

    from .settings import TraceSettings

EXPORT_TIMEOUT_SECONDS = 10.0  # one export request (OTEL_EXPORTER_OTLP_TIMEOUT over it)
RETRY_DOWN_SECONDS = 30.0  # a down collector is tried again after this long (a worker lives on)


class Sdk:
    """The SDK's pieces, imported together; `exporter` sends a list of spans at once."""

    def __init__(self, settings: TraceSettings, warn: Callable[[str], None]) -> None:
        import logging

        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.sdk.trace.export import SpanExportResult
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags
        from opentelemetry.trace.status import Status, StatusCode

        self.ReadableSpan, self.Link, self.SpanContext, self.SpanKind = ReadableSpan, Link, SpanContext, SpanKind
        self.sampled = TraceFlags(TraceFlags.SAMPLED)
        self.ok, self.Status, self.ERROR = Status(StatusCode.OK), Status, StatusCode.ERROR
        self.settings = settings
        self.resource = Resource.create(_resource_attributes(settings))
        self.scope = InstrumentationScope("uwf", __version__)
        inner = OTLPSpanExporter(endpoint=settings.url, headers=dict(settings.headers) or None, **_exporter_options(settings))
        self.last_problem = ["the collector did not take the spans"]

        def said(message: str) -> None:  # the SDK's log line: the reason a failed export's status keeps
            self.last_problem[0] = message
            warn(message)

        self.exporter = Guarded(inner, settings, SpanExportResult, warn, self.last_problem)
        handler = _one_line_handler(said)
        for name in ("opentelemetry.exporter", "opentelemetry.sdk"):
            logger = logging.getLogger(name)
            logger.addHandler(handler)
            logger.propagate = False  # the SDK's own log lines, tracebacks included, become one warning

    def batch_processor(self) -> BatchSpanProcessor:
        """The SDK's batch processor, sized by the OTEL_BSP_* variables wherever they stand."""
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        options: dict[str, Any] = {}
        for name, option in (("OTEL_BSP_MAX_QUEUE_SIZE", "max_queue_size"), ("OTEL_BSP_SCHEDULE_DELAY", "schedule_delay_millis"),
                             ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "max_export_batch_size"), ("OTEL_BSP_EXPORT_TIMEOUT", "export_timeout_millis")):
            value = _number(self.settings, name)
            if value is not None:
                options[option] = int(value)
        return BatchSpanProcessor(self.exporter, **options)  # type: ignore[arg-type]  # Guarded is an exporter by its methods, not by class

    def readables(self, span_json: dict[str, Any], trace_id: int, parent: SpanContext | None = None) -> list[ReadableSpan]:
        """A span in the wire form (export.to_wire) and everything under it as ReadableSpans."""
        context = self.SpanContext(trace_id, span_json["id"], is_remote=False, trace_flags=self.sampled)
        attributes = {"openinference.span.kind": span_json["kind"], **span_json["attributes"]}
        error = span_json.get("error")
        status = self.ok if error is None else self.Status(self.ERROR, error)
        links = [self.Link(self.SpanContext(t, s, is_remote=True, trace_flags=self.sampled)) for t, s in span_json.get("links", ())]
        readable = self.ReadableSpan(
            span_json["name"],
            context=context,
            parent=parent,
            resource=self.resource,
            attributes=attributes,
            links=links,
            kind=self.SpanKind.CLIENT if span_json["kind"] == "LLM" else self.SpanKind.INTERNAL,
            status=status,
            start_time=span_json["start"],
            end_time=span_json["end"] or span_json["start"],
            instrumentation_scope=self.scope,
        )
        found = [readable]
        for child in span_json.get("children", ()):
            found += self.readables(child, trace_id, context)
        return found


class Guarded:
    """The OTLP exporter behind a check that the collector takes connections: a dead one costs
    one connection attempt, not the SDK's retries with backoff, and is tried again later. What
    it finds is kept for this host's next processes (telemetry/collector.py)."""

    def __init__(self, inner, settings: TraceSettings, results, warn: Callable[[str], None], last_problem: list[str]) -> None:
        self.inner, self.settings, self.results, self.warn, self.last_problem = inner, settings, results, warn, last_problem
        self.down_until: float | None = None
        self.checked = False
        self.busy = 0  # exports under way: a flush waits for the one the batch thread already began

    def export(self, spans):
        self.busy += 1
        try:
            return self._export(spans)
        finally:
            self.busy -= 1

    def _export(self, spans):
        import time

        now = time.monotonic()
        if self.down_until is not None and now < self.down_until:
            return self.results.FAILURE
        if not self.checked or self.down_until is not None:
            problem = unreachable(self.settings.url)
            if problem is not None:
                self.down_until = now + RETRY_DOWN_SECONDS
                write_status(self.settings.url, DOWN, problem)
                self.warn(down_message(self.settings, problem))
                return self.results.FAILURE
            self.checked, self.down_until = True, None
        result = self.inner.export(spans)
        if result == self.results.SUCCESS:
            write_status(self.settings.url, OK)
        else:
            write_status(self.settings.url, FAILED, self.last_problem[0])
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _resource_attributes(settings: TraceSettings) -> dict:
    """OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME as they stand in the environment or in .env
    (the SDK would read only the first); `uwf` and its version where they say nothing."""
    from .settings import pairs

    attributes = dict(pairs(settings.variable("OTEL_RESOURCE_ATTRIBUTES") or ""))
    name = settings.variable("OTEL_SERVICE_NAME")
    if name:
        attributes["service.name"] = name.strip()
    attributes.setdefault("service.name", "uwf")
    attributes.setdefault("service.version", __version__)
    return attributes


def _exporter_options(settings: TraceSettings) -> dict:
    """The exporter's timeout, compression and TLS files, as the OTLP variables name them."""
    options: dict = {"timeout": _number(settings, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT") or EXPORT_TIMEOUT_SECONDS}
    compression = settings.variable("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION")
    if compression and compression.strip().lower() in ("gzip", "deflate"):
        from opentelemetry.exporter.otlp.proto.http import Compression

        options["compression"] = Compression(compression.strip().lower())
    for option, names in (
        ("certificate_file", ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE")),
        ("client_key_file", ("OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "OTEL_EXPORTER_OTLP_CLIENT_KEY")),
        ("client_certificate_file", ("OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE")),
    ):
        value = settings.variable(*names)
        if value:
            options[option] = value.strip()
    return options


def _number(settings: TraceSettings, *names: str) -> float | None:
    try:
        value = float(settings.variable(*names) or "")
    except ValueError:
        return None
    return value if value > 0 else None


def down_message(settings: TraceSettings, problem: str) -> str:
    return f"traces cannot be sent to {settings.url} ({settings.source}): {problem}; steps go on without them"


def _one_line_handler(warn: Callable[[str], None]):
    """A logging handler that turns the SDK's records into uwf's one-line warnings."""
    import logging

    class OneLine(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warn(f"trace export: {record.getMessage().splitlines()[0]}")

    return OneLine(logging.WARNING)
