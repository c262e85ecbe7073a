"""Traces from processes that go on: the API (a python agent, the LLM extractor), and `uwf worker`
on a directory root and on a real PostgreSQL root. Here the SDK is imported in the process and
spans go through its batch processor, not a shipper."""

from __future__ import annotations

import signal
import time

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from fake_openai import FakeOpenAI, grounded  # noqa: E402
from otlp_receiver import OtlpReceiver  # noqa: E402
from place import runner  # noqa: E402
from traced_root import queue_step, setup_traced_root, traced_workspace  # noqa: E402

from uwf_core.api import Repo, StepOptions, flush_traces, perform_step, start_thread  # noqa: E402
from uwf_core.telemetry.export import span_id_of, trace_id_of  # noqa: E402


@pytest.fixture
def receiver():
    with OtlpReceiver() as running:
        yield running
        flush_traces()  # nothing of this test's left for the exit to send to a receiver that is gone


def test_a_python_agent_step_through_the_api(uwf, tmp_path, root_dir, receiver, monkeypatch):
    with FakeOpenAI() as srv:
        setup_traced_root(uwf, tmp_path, srv.base_url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    repo = Repo.open(str(root_dir))

    def planner(ctx):
        return {"note": f"planned {ctx.role}"}

    info = start_thread(repo, "three-steps", "go")
    result = perform_step(repo, info.thread, StepOptions(agent=planner))
    flush_traces()
    spans = receiver.wait_for(2)
    (root,) = [span for span in spans if span.parent_id is None]
    assert root.trace_id == f"{trace_id_of(info.thread):032x}" and root.span_id == f"{span_id_of(result.head):016x}"
    assert root.attributes["uwf.agent"].endswith(":planner") or "planner" in root.attributes["uwf.agent"]
    (agent,) = [span for span in spans if span.parent_id == root.span_id]
    assert agent.kind == "AGENT" and agent.attributes["uwf.agent.protocol"] == "python"
    assert "planner" in agent.attributes["uwf.agent.command"]
    assert agent.attributes["uwf.containment"] == "none"  # a function in uwf's process: nothing contains it


def test_the_llm_extractor_is_an_llm_span_under_the_extraction(uwf, tmp_path, root_dir, receiver, monkeypatch):
    with FakeOpenAI() as srv:
        setup_traced_root(uwf, tmp_path, srv.base_url)
        assert uwf("agent", "add", "prose", "--protocol", "text", "--", "sh", "-c", "cat >/dev/null; echo 'The note is: all done.'").code == 0
        srv.add(grounded({"note": "all done."}))
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        repo = Repo.open(str(root_dir))
        info = start_thread(repo, "three-steps", "go")
        perform_step(repo, info.thread, StepOptions(agent="prose"))
        flush_traces()
    spans = receiver.wait_for(4)
    (root,) = [span for span in spans if span.parent_id is None]
    kinds = {span.name: span for span in spans if span.parent_id == root.span_id}
    assert set(kinds) == {"agent prose", "extract"}
    assert kinds["agent prose"].attributes["uwf.agent.protocol"] == "text"
    assert kinds["extract"].attributes["uwf.extract.method"] == "llm"
    (llm,) = [span for span in spans if span.parent_id == kinds["extract"].span_id]
    assert llm.kind == "LLM" and llm.attributes["uwf.purpose"] == "extractor"
    assert llm.attributes["gen_ai.usage.input_tokens"] == 10


@pytest.mark.parametrize("backend", ["dir", "postgresql"])
def test_a_thread_stepped_by_a_cli_step_and_two_workers_is_one_trace(backend, request, tmp_path, root_dir, receiver, monkeypatch):
    location = str(root_dir) if backend == "dir" else request.getfixturevalue("pg_url")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")  # the SDK's own variable: a worker sends every 0.2 s
    run = runner(location, str(tmp_path / "host.env"))
    with FakeOpenAI() as srv:
        setup_traced_root(lambda *args, **kw: _Result(run(*args)), tmp_path, srv.base_url)
        thread = run("thread", "start", "three-steps", "-p", "go", "-w", traced_workspace())["thread"]
        for number in range(3):
            queue_step(srv, number)
        first = run("thread", "step", thread)  # a process of its own
        workers = [run.spawn("worker", "--name", f"w{index}") for index in range(2)]
        try:
            run("thread", "run", thread, "--detach")
            deadline = time.monotonic() + 90
            while not run("thread", "show", thread).get("done") and time.monotonic() < deadline:
                time.sleep(0.2)
            assert run("thread", "show", thread)["done"], "the workers did not finish the thread"
            spans = receiver.wait_for(3, **{"uwf__status": "ok"})
        finally:
            for worker in workers:
                worker.send_signal(signal.SIGTERM)
            for worker in workers:
                worker.wait(30)
    steps = sorted((span for span in spans if span.parent_id is None), key=lambda span: span.start_ns)
    assert [span.name for span in steps] == ["step plan", "step build", "step check"]
    assert {span.trace_id for span in receiver.spans} == {f"{trace_id_of(thread):032x}"}
    assert steps[0].span_id == f"{span_id_of(first['head']):016x}" and "uwf.worker" not in steps[0].attributes
    assert {span.attributes["uwf.worker"] for span in steps[1:]} <= {"w0", "w1"}


class _Result:
    """What setup_traced_root expects of a `uwf` call, from place.runner's parsed JSON."""

    def __init__(self, data) -> None:
        self.code, self.data = 0, data


def test_the_supervisor_and_the_summarizer_are_llm_spans_of_their_steps(uwf, tmp_path, root_dir, receiver):
    """`thread run` (a process that goes on: the SDK in it) with a supervisor after every step and
    a summary at the end: each check's call is an LLM span under the step it followed."""
    import json

    from conftest import EXAMPLES
    from fake_openai import reply

    with FakeOpenAI() as srv:
        setup = uwf("setup", "--provider", "fake", "--base-url", srv.base_url, "--api-key", "sk-test-SUPERVISE-0123456789",
                    "--model", "fake-model", "--summarizer-model", "fake-model")
        assert setup.code == 0, setup
        text = (EXAMPLES / "solve-issue.yaml").read_text(encoding="utf-8").replace("maxSteps:", "supervisorInterval: 1\nmaxSteps:", 1)
        (tmp_path / "solve-issue.yaml").write_text(text, encoding="utf-8")
        assert uwf("workflow", "put", str(tmp_path / "solve-issue.yaml")).code == 0
        thread = uwf("thread", "start", "solve-issue", "-p", "Fix the login form").json()["thread"]
        srv.add(*[reply(json.dumps({"decision": "continue", "reason": f"progress {i}"})) for i in range(4)], reply("It was fixed."))
        run = uwf("thread", "run", thread, "--agent", "uwf-script --script examples/solve-issue.script.yaml",
                  env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
        assert run.code == 0, run
    receiver.wait_for(5, openinference__span__kind="LLM")
    receiver.wait_for(5, uwf__workflow="solve-issue")  # the step spans (each batch holds whole steps)
    spans = list(receiver.spans)
    steps = {span.span_id: span for span in spans if span.parent_id is None}
    assert len(steps) == 5
    checks = [span for span in spans if span.kind == "LLM"]
    assert sorted(span.attributes["uwf.purpose"] for span in checks) == ["summarizer"] + ["supervisor"] * 4
    assert all(span.parent_id in steps for span in checks)
    (summarized,) = [steps[span.parent_id] for span in checks if span.attributes["uwf.purpose"] == "summarizer"]
    assert summarized.attributes["uwf.role"] == "reviewer" and summarized.attributes["uwf.done"] is True


def test_a_map_step_names_its_children_each_a_trace_of_its_own(uwf, root_dir, receiver):
    from conftest import EXAMPLES

    assert uwf("workflow", "put", str(EXAMPLES / "develop.yaml")).code == 0
    assert uwf("workflow", "put", str(EXAMPLES / "fan-out.yaml")).code == 0
    assert uwf("setup", "--agent", f"script=uwf-script --script-dir {EXAMPLES}", "--default-agent", "script").code == 0
    thread = uwf("thread", "start", "fan-out", "-p", "Fix the login bug").json()["thread"]
    run = uwf("thread", "run", thread, env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
    assert run.code == 0, run
    deadline = time.monotonic() + 30
    while len({span.trace_id for span in receiver.spans}) < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    (mapped,) = [span for span in receiver.spans if span.attributes.get("uwf.map.children")]
    children = mapped.attributes["uwf.map.children"]
    assert len(children) == 3 and mapped.trace_id == f"{trace_id_of(thread):032x}"
    assert {span.trace_id for span in receiver.spans} == {f"{trace_id_of(each):032x}" for each in [thread, *children]}
    for child in children:  # each child's own steps, in its own trace
        assert [span for span in receiver.spans if span.parent_id is None and span.attributes["uwf.thread"] == child]
