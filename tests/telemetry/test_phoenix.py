"""Traces in a real Arize Phoenix (started as docs/how-to/traces.md says, by scripts/phoenix_local.py: every
listener on 127.0.0.1, SQLite in a temp dir), read back
through Phoenix's own REST API. Phoenix lives in a venv of its own (its dependencies are not
uwf's): .ci/run makes .venv-phoenix; UWF_TEST_PHOENIX may name another `phoenix` executable."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from fake_openai import FakeOpenAI  # noqa: E402
from traced_root import KEY, queue_step, setup_traced_root, start_thread  # noqa: E402

from uwf_core.telemetry.export import span_id_of, trace_id_of  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
START_SECONDS = 180  # a first start builds its SQLite schema (~20 s here)


def _phoenix_command() -> str | None:
    named = os.environ.get("UWF_TEST_PHOENIX")
    if named:
        return named
    local = REPO / ".venv-phoenix" / "bin" / "phoenix"
    return str(local) if local.exists() else shutil.which("phoenix")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Phoenix:
    def __init__(self, base: str, pid: int, ports: tuple[int, int]) -> None:
        self.base = base
        self.pid = pid
        self.ports = ports  # the UI's and OTLP/HTTP's, OTLP/gRPC's

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.base + path, timeout=30) as response:
            return json.loads(response.read())

    def spans(self, trace_id: int) -> list[dict]:
        found, cursor = [], None
        while True:
            page = self.get(f"/v1/projects/default/spans?trace_id={trace_id:032x}&limit=1000" + (f"&cursor={cursor}" if cursor else ""))
            found += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return found

    def wait_for_spans(self, trace_id: int, count: int, timeout: float = 60.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while True:
            found = self.spans(trace_id)
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.5)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    command = _phoenix_command()
    if command is None:
        pytest.skip("Arize Phoenix is not installed (.ci/run installs it in .venv-phoenix)")
    port, grpc_port = _free_port(), _free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(tmp_path_factory.mktemp("phoenix"))}
    log = tmp_path_factory.mktemp("phoenix-log") / "phoenix.log"
    python = Path(command).with_name("python")  # the traces page's recipe: its own Python runs the launcher
    launcher = [str(python), str(REPO / "scripts" / "phoenix_local.py"), "--port", str(port), "--grpc-port", str(grpc_port)]
    with open(log, "wb") as out:
        process = subprocess.Popen(launcher, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"phoenix serve did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield Phoenix(base, process.pid, (port, grpc_port))
    finally:
        os.killpg(process.pid, 15)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()


@pytest.fixture
def srv():
    with FakeOpenAI() as server:
        yield server


def _roots(spans: list[dict]) -> list[dict]:
    return sorted((span for span in spans if not span.get("parent_id")), key=lambda span: span["start_time"])


def test_three_steps_of_uwf_builtin_are_one_trace_in_phoenix(uwf, tmp_path, srv, phoenix):
    setup_traced_root(uwf, tmp_path, srv.base_url)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.base}
    thread = start_thread(uwf)
    heads = []
    for number in range(3):
        queue_step(srv, number)
        result = uwf("thread", "step", thread, env=env)
        assert result.code == 0, result
        heads.append(result.json()["head"])
    spans = phoenix.wait_for_spans(trace_id_of(thread), 3 * 6)
    assert len(spans) == 18  # per step: the step, the agent, two LLM calls, a tool call, the kit's extraction

    steps = _roots(spans)
    assert [span["name"] for span in steps] == ["step plan", "step build", "step check"]
    assert [span["context"]["span_id"] for span in steps] == [f"{span_id_of(head):016x}" for head in heads]
    assert {span["span_kind"] for span in steps} == {"CHAIN"}
    assert all(span["status_code"] == "OK" for span in spans)
    by_parent: dict[str, list[dict]] = {}
    for span in spans:
        by_parent.setdefault(span.get("parent_id") or "", []).append(span)
    for number, root in enumerate(steps):
        (agent,) = by_parent[root["context"]["span_id"]]
        assert agent["span_kind"] == "AGENT" and agent["name"] == "agent builtin"
        llm = sorted((span for span in by_parent[agent["context"]["span_id"]] if span["span_kind"] == "LLM"), key=lambda s: s["start_time"])
        tokens = [(span["attributes"]["llm.token_count.prompt"], span["attributes"]["llm.token_count.completion"]) for span in llm]
        assert tokens == [(100 + number, 10 + number), (200 + number, 20 + number)]
        assert [span["attributes"]["gen_ai.request.model"] for span in llm] == ["fake-model", "fake-model"]
        kinds = sorted(span["span_kind"] for span in by_parent[agent["context"]["span_id"]])
        assert kinds == ["CHAIN", "LLM", "LLM", "TOOL"]  # the CHAIN: uwf-builtin reading its model's answer (extract)

    (trace,) = [each for each in phoenix.get("/v1/projects/default/traces?limit=1000")["data"] if each["trace_id"] == f"{trace_id_of(thread):032x}"]
    assert trace["token_count_prompt"] == sum(100 + n + 200 + n for n in range(3))
    assert trace["token_count_completion"] == sum(10 + n + 20 + n for n in range(3))
    sessions = phoenix.get("/v1/projects/default/sessions?limit=1000")["data"]
    assert [session["session_id"] for session in sessions].count(thread) == 1  # the thread is a Phoenix session too
    assert KEY not in json.dumps(spans)


def test_a_thread_stepped_by_two_processes_is_one_trace(uwf, tmp_path, srv, phoenix):
    setup_traced_root(uwf, tmp_path, srv.base_url)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.base}
    thread = start_thread(uwf)
    queue_step(srv, 0)
    first = uwf("thread", "step", thread, env=env)  # one process
    assert first.code == 0, first
    queue_step(srv, 1)
    queue_step(srv, 2)
    rest = uwf("thread", "run", thread, env=env)  # another, for the other two steps
    assert rest.code == 0, rest
    spans = phoenix.wait_for_spans(trace_id_of(thread), 18)
    assert {span["context"]["trace_id"] for span in spans} == {f"{trace_id_of(thread):032x}"}
    assert [span["name"] for span in _roots(spans)] == ["step plan", "step build", "step check"]
    traces = [each for each in phoenix.get("/v1/projects/default/traces?limit=1000")["data"] if each["trace_id"] == f"{trace_id_of(thread):032x}"]
    assert len(traces) == 1


def test_the_recipes_phoenix_listens_on_loopback_only(phoenix):
    """Both its receivers (the UI with OTLP/HTTP, and OTLP/gRPC, which `phoenix serve` alone binds
    to every interface) on 127.0.0.1, and nothing else Phoenix's processes listen on is wider."""
    listening = _listeners(phoenix.pid)
    assert {port for _, port in listening} >= set(phoenix.ports), listening
    assert all(address == "127.0.0.1" for address, _ in listening), listening


def _listeners(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN that the process group of `pid` holds."""
    inodes = set()
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and os.getpgid(int(proc.name)) == pid:
                inodes |= {os.readlink(fd)[8:-1] for fd in (proc / "fd").iterdir() if os.readlink(fd).startswith("socket:[")}
        except OSError:
            continue
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                address, port = fields[1].split(":")
                found.add((_address(address), int(port, 16)))
    return found


def _address(hex_address: str) -> str:
    if len(hex_address) == 8:
        return socket.inet_ntop(socket.AF_INET, bytes.fromhex(hex_address)[::-1])
    raw = bytes.fromhex(hex_address)
    six = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
    return six.removeprefix("::ffff:")
