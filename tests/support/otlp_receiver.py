"""A small OTLP/HTTP trace receiver for tests: real HTTP on 127.0.0.1, the protobuf bodies the
OpenTelemetry exporter sends decoded with opentelemetry-proto (the otel extra brings it).

Arize Phoenix is the real store (tests/telemetry/test_phoenix.py); this one starts in
milliseconds, so every export test can have its own and read back exactly what was sent.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Received:
    """One span as the receiver decoded it."""

    def __init__(self, span, resource: dict) -> None:
        self.name = span.name
        self.trace_id = span.trace_id.hex()
        self.span_id = span.span_id.hex()
        self.parent_id = span.parent_span_id.hex() or None
        self.start_ns, self.end_ns = span.start_time_unix_nano, span.end_time_unix_nano
        self.attributes = {item.key: _value(item.value) for item in span.attributes}
        self.status_code = span.status.code  # 0 unset, 1 ok, 2 error
        self.status_message = span.status.message
        self.links = [(link.trace_id.hex(), link.span_id.hex()) for link in span.links]
        self.resource = resource

    @property
    def kind(self) -> str | None:
        return self.attributes.get("openinference.span.kind")

    @property
    def failed(self) -> bool:
        return self.status_code == 2

    def __repr__(self) -> str:
        return f"<span {self.name} {self.kind} {self.span_id} parent={self.parent_id}>"


def _value(value):
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: _value(item.value) for item in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


class OtlpReceiver:
    """`with OtlpReceiver() as receiver:` — `receiver.endpoint` is the base URL for
    OTEL_EXPORTER_OTLP_ENDPOINT; `receiver.spans` what arrived; `wait_for(n)` waits for n."""

    def __init__(self, status: int = 200) -> None:
        self.spans: list[Received] = []
        self.requests = 0
        self.headers: list[dict[str, str]] = []  # each request's, names lower-cased
        self.status = status
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                found = []
                for resource_spans in request.resource_spans:
                    resource = {item.key: _value(item.value) for item in resource_spans.resource.attributes}
                    for scope_spans in resource_spans.scope_spans:
                        found += [Received(span, resource) for span in scope_spans.spans]
                with receiver._changed:
                    receiver.requests += 1
                    receiver.headers.append({name.lower(): value for name, value in self.headers.items()})
                    if receiver.status == 200:
                        receiver.spans += found
                    receiver._changed.notify_all()
                self.send_response(receiver.status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, count: int, timeout: float = 30.0, **attributes) -> list[Received]:
        """The spans (with these attributes, dots as "__") once at least `count` arrived."""
        wanted = {key.replace("__", "."): value for key, value in attributes.items()}
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = [span for span in self.spans if all(span.attributes.get(k) == v for k, v in wanted.items())]
                if len(found) >= count or time.monotonic() > deadline:
                    return found
                self._changed.wait(0.1)
