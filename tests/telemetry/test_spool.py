"""Traces that cost nothing when the collector is slow or gone (telemetry/spool.py): one shipper
per host and collector however many `uwf thread step` processes hand it spans, a bounded spool
whose dropped spans are counted, and warnings said once per half minute on a host, not per step."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from loop_workflow import loop_workflow  # noqa: E402
from otlp_receiver import OtlpReceiver  # noqa: E402

from uwf_core.telemetry import spool  # noqa: E402
from uwf_core.telemetry.collector import say_due  # noqa: E402

ANSWER = json.dumps({"$status": "again", "n": 1})
LOOP = loop_workflow(1_000)


@pytest.fixture
def looping(uwf, root_dir, tmp_path) -> str:
    """A thread of the loop workflow, stepped by a no-op text agent (no model, no server)."""
    (root_dir / "config.yaml").write_text(
        f"agents:\n  noop:\n    command: sh\n    args: [-c, {json.dumps('cat >/dev/null; echo ' + repr(ANSWER))}]\n"
        f"    protocol: text\ndefaultAgent: noop\n"
    )
    workflow = tmp_path / "loop.yaml"
    workflow.write_text(LOOP)
    assert uwf("workflow", "put", str(workflow)).code == 0
    return uwf("thread", "start", "loop", "-p", "go", "-w", str(tmp_path)).json()["thread"]


def shippers() -> list[int]:
    """This test's shippers (its own cache directory in their environment: tests beside it have theirs)."""
    mine = f"XDG_CACHE_HOME={os.environ['XDG_CACHE_HOME']}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            command = Path(f"/proc/{entry}/cmdline").read_bytes()
            environment = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"uwf_core.telemetry.ship" in command and mine in environment:
            found.append(int(entry))
    return found


class Sampler:
    """The most shippers alive at once, looked at every 10 ms while it runs."""

    def __init__(self) -> None:
        self.most, self.seen, self._stop = 0, set(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            alive = shippers()
            self.most = max(self.most, len(alive))
            self.seen.update(alive)
            time.sleep(0.01)


def end_shippers() -> None:
    for pid in shippers():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def test_a_collector_that_never_answers_keeps_one_shipper_however_many_steps(uwf, looping):
    with socket.socket() as silent:  # takes connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_TIMEOUT": "30"}
        try:
            with Sampler() as sampler:
                for _ in range(8):
                    result = uwf("thread", "step", looping, env=env)
                    assert result.code == 0 and "Traceback" not in result.err, result
                deadline = time.monotonic() + 10
                while not sampler.seen and time.monotonic() < deadline:
                    time.sleep(0.05)
            waiting = spool.waiting(spool.spool_dir(url + "/v1/traces"))
        finally:
            end_shippers()
    assert sampler.most == 1 and len(sampler.seen) == 1, sampler.seen  # one shipper, waiting on the first batch
    assert 1 <= len(waiting) <= 8  # the later steps' spans wait in the spool for it


def test_a_collector_that_took_a_connection_is_not_asked_again_by_every_step(uwf, looping):
    """The first step asks a collector not known lately (a connection); one that takes it is
    believed up for half a minute, so the steps after it ask nothing while the shipper waits on a
    collector that never answers: the connections it sees are the first step's and the shipper's."""
    from uwf_core.telemetry.collector import OK, read_status

    accepted: list[socket.socket] = []
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        silent.settimeout(0.1)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        stop = threading.Event()

        def take() -> None:  # every connection taken and held, never answered
            while not stop.is_set():
                try:
                    accepted.append(silent.accept()[0])
                except OSError:
                    pass

        taker = threading.Thread(target=take, daemon=True)
        taker.start()
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_TIMEOUT": "30"}
        try:
            for _ in range(6):
                result = uwf("thread", "step", looping, env=env)
                assert result.code == 0 and "Traceback" not in result.err, result
            status = read_status(url + "/v1/traces")
            time.sleep(0.5)  # the shipper's connections, if it had not made them yet
        finally:
            stop.set()
            taker.join()
            end_shippers()
            for connection in accepted:
                connection.close()
    assert status == (OK, "it took a connection")
    assert len(accepted) <= 3, len(accepted)  # the first step's, and the shipper's look and its export


def test_the_shipper_yields_the_cpu_to_the_steps(uwf, looping):
    """Lowest priority, in a process group of its own (no Ctrl-C of the terminal reaches it) but in
    the caller's session: a session of its own is an autogroup of its own, whose nice value counts
    for nothing against the step still ending (+40-60 ms a traced step with a core busy)."""
    with socket.socket() as silent:  # it waits on the first batch: alive long enough to look at
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{silent.getsockname()[1]}", "OTEL_EXPORTER_OTLP_TIMEOUT": "30"}
        try:
            assert uwf("thread", "step", looping, env=env).code == 0
            deadline = time.monotonic() + 10
            while not (found := shippers()) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(found) == 1, found
            pid = found[0]
            priority, group, session = os.getpriority(os.PRIO_PROCESS, pid), os.getpgid(pid), os.getsid(pid)
        finally:
            end_shippers()
    assert priority == 19
    assert group == pid and session == os.getsid(0)


def roots(spans: list, thread: str) -> list:
    return [span for span in spans if span.attributes.get("uwf.thread") == thread and span.parent_id is None]


def test_the_shipper_sends_the_spool_and_ends(uwf, looping):
    with OtlpReceiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        for _ in range(3):
            assert uwf("thread", "step", looping, env=env).code == 0
        deadline = time.monotonic() + 20
        while (shippers() or len(roots(receiver.spans, looping)) < 3) and time.monotonic() < deadline:
            time.sleep(0.05)  # the shipper lingers a moment for more, then ends
        assert shippers() == []
        assert len(roots(receiver.spans, looping)) == 3
    assert spool.waiting(spool.spool_dir(receiver.endpoint + "/v1/traces")) == []


def test_a_refused_collector_is_said_once_in_half_a_minute_not_at_every_step(uwf, looping):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
    said = []
    for _ in range(4):
        result = uwf("thread", "step", looping, env=env)
        assert result.code == 0, result
        said += [line for line in result.err.splitlines() if "traces cannot be sent" in line]
    assert len(said) == 1 and "connection refused" in said[0], said
    assert shippers() == []


def test_the_spool_is_bounded_and_what_it_drops_is_counted(monkeypatch):
    url = "http://127.0.0.1:9/v1/traces"
    item = json.dumps({"spans": [{"trace": 1, "span": {"id": 1, "name": "x" * 300}}]}).encode()
    monkeypatch.setattr(spool, "MAX_SPOOL_BYTES", 3 * len(item) + 10)
    kept = [spool.leave(url, item, 4) for _ in range(5)]
    assert kept == [True, True, True, False, False]
    where = spool.spool_dir(url)
    assert len(spool.waiting(where)) == 3 and oct(os.stat(where).st_mode & 0o777) == "0o700"
    assert spool.take_dropped(where) == 8
    assert spool.take_dropped(where) == 0  # taken: the count starts again
    monkeypatch.setattr(spool, "MAX_SPOOL_BYTES", 1 << 20)
    monkeypatch.setattr(spool, "MAX_SPOOL_FILES", 4)
    assert [spool.leave(url, item, 1) for _ in range(2)] == [True, False]  # bounded in files too


def test_the_spools_lock_is_held_by_one_at_a_time():
    url = "http://127.0.0.1:9/v1/traces"
    os.makedirs(spool.spool_dir(url), exist_ok=True)
    first = spool.claim(url)
    assert first is not None and spool.claim(url) is None
    os.close(first)
    again = spool.claim(url)
    assert again is not None
    os.close(again)


def test_a_warning_is_due_once_per_half_minute_per_topic(monkeypatch):
    url = "http://127.0.0.1:9/v1/traces"
    assert say_due(url, "down") and not say_due(url, "down")
    assert say_due(url, "failed")  # another topic is its own
    later = time.time() + 31
    monkeypatch.setattr(time, "time", lambda: later)
    assert say_due(url, "down")


def _ended_span(name: str):
    from uwf_core.telemetry.spans import Span

    span = Span(name, "CHAIN", None)
    span.end_ns = span.start_ns + 1000
    return span


def test_a_step_that_ends_while_the_sdk_is_imported_leaves_its_spans_for_it():
    from uwf_core.telemetry.export import Exporter
    from uwf_core.telemetry.settings import TraceSettings

    imported = threading.Event()

    class Slow(Exporter):
        def _build(self) -> None:
            imported.wait(30)  # the SDK's import, held until the step has ended
            super()._build()

    with OtlpReceiver() as receiver:
        exporter = Slow(TraceSettings(url=receiver.endpoint + "/v1/traces", source="test"))
        exporter.emit(_ended_span("early step"), 7, lambda value: value)  # starts the import, and does not wait for it
        assert [wire["name"] for wire, _ in exporter._early] == ["early step"]
        imported.set()
        exporter.flush(10.0)
        assert [span.name for span in receiver.wait_for(1, timeout=10)] == ["early step"]


def test_a_flush_does_not_wait_for_a_collector_that_answers_nothing():
    from uwf_core.telemetry import export
    from uwf_core.telemetry.settings import TraceSettings

    said = []
    export.set_warning_handler(said.append)
    try:
        with socket.socket() as silent:
            silent.bind(("127.0.0.1", 0))
            silent.listen(16)
            url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1/traces"
            exporter = export.Exporter(TraceSettings(url=url, source="test"))
            exporter.emit(_ended_span("step"), 7, lambda value: value)
            exporter.flush(60.0)  # a collector that answered would be waited for this long
    finally:
        export.set_warning_handler(None)
    assert said == [f"traces not sent: the collector at {url} did not answer (nothing within 0.4s)"]


@pytest.mark.parametrize("elsewhere", [False, True], ids=["its-cache", "another-cache-directory"])
def test_no_agent_sees_the_spans_waiting_in_the_spool(uwf, root_dir, tmp_path, elsewhere):
    from uwf_core.engine.contain.sandbox import BUBBLEWRAP, containment
    from uwf_core.telemetry.collector import cache_dir

    if containment().kind != BUBBLEWRAP:
        pytest.skip(f"bubblewrap cannot start here: {containment().reason}")
    url = "http://127.0.0.1:9/v1/traces"
    assert spool.leave(url, json.dumps({"spans": [{"trace": 1, "span": {"id": 1, "name": "another thread's prompt"}}]}).encode(), 1)
    where = cache_dir()
    script = f"ls -aR {where} > seen.txt 2>&1; cat {where}/*/* >> seen.txt 2>&1; cat >/dev/null; echo {ANSWER!r}"
    (root_dir / "config.yaml").write_text(
        f"agents:\n  nosy:\n    command: sh\n    args: [-c, {json.dumps(script)}]\n    protocol: text\ndefaultAgent: nosy\n"
    )
    workflow = tmp_path / "loop.yaml"
    workflow.write_text(LOOP)
    assert uwf("workflow", "put", str(workflow)).code == 0
    workspace = tmp_path / "ws"
    workspace.mkdir()
    thread = uwf("thread", "start", "loop", "-p", "go", "-w", str(workspace)).json()["thread"]
    env = {"XDG_CACHE_HOME": str(tmp_path / "elsewhere")} if elsewhere else {}  # the home's spool is hidden all the same
    assert uwf("thread", "step", thread, env=env).code == 0
    seen = (workspace / "seen.txt").read_text()
    assert ".spool" not in seen and "another thread's prompt" not in seen, seen
    assert spool.waiting(spool.spool_dir(url))  # still there on the host


def test_a_file_of_another_shape_in_the_spool_costs_only_itself():
    import subprocess
    import sys

    good = {"id": 5, "name": "a step", "kind": "CHAIN", "start": time.time_ns(), "end": time.time_ns(), "attributes": {}}
    with OtlpReceiver() as receiver:
        url = receiver.endpoint + "/v1/traces"
        assert spool.leave(url, json.dumps({"spans": [{"trace": 1, "span": {"children": 5}}]}).encode(), 1)
        assert spool.leave(url, json.dumps({"spans": [{"trace": 2, "span": good}]}).encode(), 1)
        assert spool.leave(url, b"[" * 100_000, 1)  # nested past the parser
        lock = spool.claim(url)
        shipper = subprocess.Popen([sys.executable, "-P", "-m", "uwf_core.telemetry.ship"], stdin=subprocess.PIPE, cwd="/",
                                   pass_fds=(lock,))
        shipper.communicate(json.dumps({"url": url, "source": "test", "variables": [], "lock": lock}).encode(), timeout=60)
        os.close(lock)
        assert shipper.returncode == 0
        assert [span.name for span in receiver.wait_for(1, timeout=10)] == ["a step"]
    assert spool.waiting(spool.spool_dir(url)) == []
