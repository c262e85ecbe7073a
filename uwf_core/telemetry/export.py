"""A finished step's spans to an OTLP/HTTP collector, by one of two ways.

In a process that goes on (a worker, `thread run`, uwf-tui, a program using the API) the SDK is
imported once, in a thread of its own started when a step's agent starts (`warm`), and spans
are queued on its BatchSpanProcessor: batched, bounded, sent from its thread; +2 ms a step.

`uwf thread step` is a process per step: there the SDK's ~0.1 s of imports and its exit would
be most of the step. It leaves its spans at exit in the host's spool for the collector, and
starts a shipper (`python -m uwf_core.telemetry.ship`, a process of its own that sends the spool
and ends) only when none is running (telemetry/spool.py). A collector that takes no connection
is found by one attempt, kept on file for half a minute (telemetry/collector.py) and is one
warning line. Every string is redacted on the way.
"""

from __future__ import annotations

import json
import os
import sys
import threading

from ..encoding.ids import crockford_value
from .collector import DOWN, FAILED, OK, read_status, unreachable, write_status
from .settings import hands_off
from .spans import Span

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any, Callable

    from .sdk import Sdk
    from .settings import TraceSettings

EXIT_FLUSH_SECONDS = 3.0  # at most this long at a process's exit for the last spans to go
QUICK_PROBE_SECONDS = 0.05  # a step asks a collector not known lately this long; no answer: the shipper finds out
QUICK_FLUSH_SECONDS = 0.05  # a flush not done by then asks the collector whether it answers at all
HUNG_PROBE_SECONDS = 0.4  # ... and does not wait for one that answers nothing in this long
MAX_EARLY_SPANS = 10_000  # steps' spans kept while the SDK is imported (a step has a handful)

_EXPORTERS: dict[tuple[str, tuple[tuple[str, str], ...]], Exporter] = {}  # by (url, variables)
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
    """The process's exporter for these settings (one per collector)."""
    key = (settings.url, settings.variables)
    with _LOCK:
        exporter = _EXPORTERS.get(key)
        if exporter is None:
            exporter = _EXPORTERS[key] = Exporter(settings)
        return exporter


def flush_all(timeout: float = EXIT_FLUSH_SECONDS) -> None:
    """Send what is queued, waiting at most `timeout` in all (tests; the exit does it too)."""
    import time

    deadline = time.monotonic() + timeout
    for exporter in list(_EXPORTERS.values()):
        exporter.flush(max(0.0, deadline - time.monotonic()))


def trace_id_of(thread: str) -> int:
    """A thread's trace id: its ULID's 128 bits, so every process that steps it names one trace."""
    return crockford_value(thread) & ((1 << 128) - 1) or 1


def span_id_of(node_hash: str) -> int:
    """A step's span id: its StepNode's 64-bit hash."""
    return crockford_value(node_hash) & ((1 << 64) - 1) or 1


class Exporter:
    def __init__(self, settings: TraceSettings) -> None:
        self.settings = settings
        self._thread: threading.Thread | None = None
        self._processor: Any = None  # the SDK's BatchSpanProcessor (opentelemetry is an extra: not named here)
        self._sdk: Sdk | None = None
        self._built = False  # the SDK's import is over (the processor is there, or it never will be)
        self._early: list[tuple[dict[str, Any], int]] = []  # spans of steps that ended while the SDK was imported
        self._pending: list[dict[str, Any]] = []  # handed to a shipper at exit (hands_off)
        self._at_exit = False

    def warm(self) -> None:
        """Start importing the SDK (a step calls this as its agent starts); nothing to do for a
        process that hands its spans off."""
        if hands_off():
            return
        with _LOCK:
            if self._thread is None:
                self._thread = threading.Thread(target=self._build, name="uwf-otel-import", daemon=True)
                self._thread.start()
                import atexit

                atexit.register(self.flush, EXIT_FLUSH_SECONDS)  # now: a process may end before the import does

    def emit(self, root: Span, trace_id: int, redact: Callable[[object], object]) -> None:
        """Queue `root` and everything under it (all ended) as spans of trace `trace_id`. Never waits
        for the SDK: a step that ends while it is imported leaves its spans for the import's end."""
        wire = to_wire(root, redact)
        if hands_off():
            with _LOCK:
                self._pending.append({"trace": trace_id, "span": wire})
                if not self._at_exit:
                    import atexit

                    atexit.register(self._hand_off)
                    self._at_exit = True
            return
        self.warm()
        with _LOCK:
            if self._processor is None:
                if not self._built and len(self._early) < MAX_EARLY_SPANS:
                    self._early.append((wire, trace_id))
                return
        self._queue(wire, trace_id)

    def flush(self, timeout: float) -> None:
        """Wait at most `timeout` for what is queued to go. A flush not done at once asks the
        collector whether it answers at all (HUNG_PROBE_SECONDS, beside the wait): one that takes
        the connection and says nothing is not waited for, its export left in the SDK's own
        timeout, which no caller and no exit waits out."""
        import time

        if self._processor is None and self._thread is None:
            if self._pending:
                self._hand_off()
            return
        deadline = time.monotonic() + timeout
        sending: threading.Thread | None = None
        silent: list[bool] = []
        asking = threading.Thread(target=self._ask, args=(silent,), daemon=True)
        probe_at = time.monotonic() + QUICK_FLUSH_SECONDS
        while time.monotonic() < deadline and not silent:
            if sending is None and self._built:
                if self._processor is None:
                    return  # the SDK could not be imported: said already
                sending = threading.Thread(target=self._processor.force_flush, args=(int(timeout * 1000),), daemon=True)
                sending.start()
            if sending is not None and not sending.is_alive():
                assert self._sdk is not None  # built with the processor that sending flushed
                if not self._sdk.exporter.busy:
                    return
            if asking.ident is None and time.monotonic() >= probe_at:
                asking.start()
            time.sleep(0.005)
        waited = f"(nothing within {HUNG_PROBE_SECONDS:g}s)" if silent else f"within {timeout:g}s"
        warn_once(f"traces not sent: the collector at {self.settings.url} did not answer {waited}")

    def _ask(self, silent: list[bool]) -> None:
        from .collector import answers

        if not answers(self.settings.url, HUNG_PROBE_SECONDS):
            silent.append(True)

    def _queue(self, wire: dict[str, Any], trace_id: int) -> None:
        assert self._sdk is not None  # queued once built, never before
        for readable in self._sdk.readables(wire, trace_id):
            self._processor.on_end(readable)

    def _build(self) -> None:
        try:
            from .sdk import Sdk

            sdk = Sdk(self.settings, warn_once)
            processor = sdk.batch_processor()
        except Exception as exc:  # noqa: BLE001 — an SDK that cannot be imported or set up: one warning, steps go on
            warn_once(_no_sdk(self.settings, exc) if isinstance(exc, ImportError) else f"traces are off: the OpenTelemetry SDK "
                      f"could not be set up ({type(exc).__name__}: {exc})")
            with _LOCK:
                self._built, self._early = True, []
            return
        if self.settings.protocol:
            warn_once(_not_http(self.settings))
        with _LOCK:
            self._sdk, self._processor, self._built = sdk, processor, True
            early, self._early = self._early, []
        for wire, trace_id in early:
            self._queue(wire, trace_id)

    def _hand_off(self) -> None:
        """Leave the spans in the spool of this host's shipper, and start one unless one is running
        (telemetry/spool.py); nothing when the collector is known to be down."""
        from .spool import claim, leave, spool_dir, take_dropped

        with _LOCK:
            pending, self._pending = self._pending, []
        if not pending or not self._can_send():
            return
        url = self.settings.url
        count = sum(_span_count(item["span"]) for item in pending)
        if not leave(url, json.dumps({"spans": pending}, separators=(",", ":")).encode("utf-8"), count):
            if self._say("dropped"):
                dropped = take_dropped(spool_dir(url))
                warn_once(f"{dropped or count} spans not sent: {url} has not taken the last ones and the spool of traces "
                          f"waiting for it is full or cannot be written; steps go on without them")
            return
        lock = claim(url)
        if lock is None:
            return  # the running shipper takes them
        import subprocess

        payload = json.dumps({"url": url, "source": self.settings.source, "variables": self.settings.variables, "lock": lock},
                             separators=(",", ":")).encode("utf-8")
        try:
            shipper = subprocess.Popen(
                # -P: not the cwd's modules (a workspace's json.py) but uwf's. It outlives this process, holding the
                # lock, in a process group of its own (no Ctrl-C reaches it) but this session: see _lowest_priority
                [sys.executable, "-P", "-m", "uwf_core.telemetry.ship"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, process_group=0, cwd="/", pass_fds=(lock,),
            )
            _lowest_priority(shipper.pid)
            assert shipper.stdin is not None  # stdin=PIPE
            shipper.stdin.write(payload)
            shipper.stdin.close()
        except OSError as exc:
            warn_once(f"traces could not be handed to their shipper: {exc.strerror or exc}")
        finally:
            os.close(lock)

    def _say(self, topic: str) -> bool:
        """Said by this process only once, and by this host's steps once per half minute."""
        from .collector import say_due

        return say_due(self.settings.url, topic)

    def _can_send(self) -> bool:
        """Known down: one warning, the spans dropped. Not known lately: the SDK looked for, and the
        collector asked once, briefly: a refused or unreachable one is down at once; one that does
        not answer in 50 ms is left to the shipper, whose finding the next step reads."""
        if self.settings.protocol:
            warn_once(_not_http(self.settings))
        status = read_status(self.settings.url)
        if status is not None:
            state, reason = status
            if state == DOWN:
                from .sdk import down_message

                if self._say(DOWN):
                    warn_once(down_message(self.settings, reason))
                return False
            if state == FAILED and self._say(FAILED):
                from .spool import spool_dir, take_dropped

                dropped = take_dropped(spool_dir(self.settings.url))
                lost = f" ({dropped} spans not sent)" if dropped else ""
                warn_once(f"the last export of traces to {self.settings.url} failed: {reason}{lost}")
            return True
        from importlib.util import find_spec

        problem: object
        try:
            found = find_spec("opentelemetry.sdk") is not None and find_spec("opentelemetry.exporter.otlp.proto.http") is not None
        except (ImportError, ValueError) as exc:
            found, problem = False, exc
        else:
            problem = "no module named 'opentelemetry.sdk' or its OTLP/HTTP exporter"
        if not found:
            warn_once(_no_sdk(self.settings, problem))
            return False
        problem = unreachable(self.settings.url, QUICK_PROBE_SECONDS, no_answer_is_down=False)
        if problem is not None:
            from .sdk import down_message

            write_status(self.settings.url, DOWN, problem)
            if self._say(DOWN):
                warn_once(down_message(self.settings, problem))
            return False
        # It took a connection: believed up for half a minute, as after an export that went
        # through, so the steps after this one do not ask again (the SDK looked for, socket and
        # urllib imported, a connection made: 10-20 ms of every step while a shipper waits on a
        # collector that never answers). What the shipper finds replaces it.
        write_status(self.settings.url, OK, "it took a connection")
        return True


def _span_count(wire: dict[str, Any]) -> int:
    """A span in the wire form and those under it."""
    children = wire.get("children") if isinstance(wire, dict) else None
    return 1 + sum(_span_count(child) for child in children or ())


def to_wire(span: Span, redact: Callable[[object], object]) -> dict[str, Any]:
    """A span as the shipper and the SDK bridge take it: ids, links, OTLP-typed attributes, every
    string redacted."""
    data: dict[str, Any] = {
        "id": span.span_id, "name": redact(span.name), "kind": span.kind, "start": span.start_ns, "end": span.end_ns,
        "attributes": {key: _attribute(value, redact) for key, value in span.attributes.items()},
    }
    if span.error is not None:
        data["error"] = redact(span.error)
    if span.links:
        data["links"] = [list(link) for link in span.links]
    if span.children:
        data["children"] = [to_wire(child, redact) for child in span.children]
    return data


def _attribute(value: object, redact: Callable[[object], object]) -> object:
    """A value OTLP carries: text (redacted), a number, a flag, or a list of one of those."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return [redact(item) for item in value]
    if isinstance(value, (list, tuple)) and all(isinstance(item, (int, float)) and not isinstance(item, bool) for item in value):
        return list(value)
    return redact(json.dumps(value, default=str, ensure_ascii=False))


def _no_sdk(settings: TraceSettings, problem: object) -> str:
    return (f"traces are asked for ({settings.source}) but the OpenTelemetry SDK cannot be imported ({problem}); "
            f"install uwf with its otel extra: pip install 'uwf[otel]'")


def _not_http(settings: TraceSettings) -> str:
    return f"uwf sends traces over OTLP/HTTP (http/protobuf), not {settings.protocol}: {settings.url}"


def _lowest_priority(pid: int) -> None:
    """The shipper at the lowest priority from its start (its interpreter's, then the SDK's import,
    ~150 ms of CPU): with a core busy it took the other from the step still ending (+40-60 ms a
    traced CLI step). In the caller's session: a new session is a new scheduler autogroup, where
    a nice value counts only against the group's own processes."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, 19)
    except OSError:
        pass
