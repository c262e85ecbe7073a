"""Traces end to end: the real `uwf` CLI and uwf-builtin against the tests' OpenAI-compatible
server, exporting to a real OTLP/HTTP receiver on 127.0.0.1 (tests/support/otlp_receiver.py).
Arize Phoenix reads the same spans in test_phoenix.py."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from conftest import EXAMPLES  # noqa: E402
from fake_openai import FakeOpenAI, reply  # noqa: E402
from otlp_receiver import OtlpReceiver  # noqa: E402
from traced_root import KEY, queue_step, setup_traced_root, start_thread  # noqa: E402

from uwf_core.telemetry.export import span_id_of, trace_id_of  # noqa: E402


@pytest.fixture
def srv():
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def receiver():
    with OtlpReceiver() as running:
        yield running


@pytest.fixture
def traced(uwf, tmp_path, srv, receiver):
    """`uwf` with OTEL_EXPORTER_OTLP_ENDPOINT at the receiver, on a root set up for uwf-builtin."""
    setup_traced_root(uwf, tmp_path, srv.base_url)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
    return lambda *args, **kwargs: uwf(*args, env={**env, **(kwargs.pop("env", None) or {})}, **kwargs)


def step(run, thread: str) -> dict:
    result = run("thread", "step", thread)
    assert result.code == 0, result
    assert "warning" not in result.err, result.err
    return result.json()


def children(spans, parent) -> list:
    return [span for span in spans if span.parent_id == parent.span_id]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_thread_of_three_steps_is_one_trace_with_its_agents_llm_calls_and_tools(traced, srv, receiver):
    thread = start_thread(traced)
    heads = []
    for number in range(3):
        queue_step(srv, number)
        heads.append(step(traced, thread)["head"])
    spans = receiver.wait_for(3 * 6)
    assert len(spans) == 18  # per step: the step, the agent, two LLM calls, a tool call, the kit's extraction
    assert {span.trace_id for span in spans} == {f"{trace_id_of(thread):032x}"}  # the thread's ULID, in every process
    steps = [span for span in spans if span.parent_id is None]
    assert [span.name for span in sorted(steps, key=lambda s: s.start_ns)] == ["step plan", "step build", "step check"]
    for number, (head, span) in enumerate(zip(heads, sorted(steps, key=lambda s: s.start_ns))):
        assert span.span_id == f"{span_id_of(head):016x}"  # a step's span is named by the StepNode it wrote
        assert span.kind == "CHAIN" and not span.failed
        attributes = span.attributes
        assert attributes["uwf.thread"] == thread == attributes["session.id"]
        assert attributes["uwf.workflow.name"] == "three-steps" and len(attributes["uwf.workflow.hash"]) == 13
        assert attributes["uwf.role"] == ["plan", "build", "check"][number]
        assert attributes["uwf.agent"] == "builtin"
        assert attributes["uwf.step"] == head and attributes["uwf.status"] == "ok" and attributes["uwf.attempt"] == 1
        assert attributes["uwf.step.number"] == number + 1
        assert span.resource["service.name"] == "uwf"
        (agent,) = children(spans, span)
        assert agent.kind == "AGENT" and agent.name == "agent builtin"
        assert agent.attributes["uwf.agent.protocol"] == "step"
        assert agent.attributes["process.exit_code"] == 0
        assert agent.attributes["uwf.containment"] in ("bubblewrap", "subreaper", "none")
        inside = sorted(children(spans, agent), key=lambda s: s.start_ns)
        assert [each.kind for each in inside] == ["LLM", "TOOL", "LLM", "CHAIN"]
        first, tool, last, extracted = inside
        assert extracted.name == "extract" and extracted.attributes["uwf.extract.method"] == "frontmatter"
        assert tool.name == "tool list_dir" and tool.attributes["gen_ai.tool.name"] == "list_dir"
        assert first.name == "chat fake-model"
        assert first.attributes["gen_ai.operation.name"] == "chat"
        assert first.attributes["gen_ai.request.model"] == "fake-model"
        assert first.attributes["gen_ai.system"] == "fake"
        assert (first.attributes["gen_ai.usage.input_tokens"], first.attributes["gen_ai.usage.output_tokens"]) == (100 + number, 10 + number)
        assert (last.attributes["llm.token_count.prompt"], last.attributes["llm.token_count.completion"]) == (200 + number, 20 + number)
        assert last.attributes["uwf.purpose"] == "builtin"
        assert span.start_ns <= agent.start_ns <= first.start_ns <= last.end_ns <= agent.end_ns <= span.end_ns
    everything = json.dumps([span.attributes for span in spans])
    assert KEY not in everything
    assert "input.value" not in everything and "output.value" not in everything  # content only when asked for


def test_content_is_attached_when_asked_for_and_never_a_key(traced, srv, receiver, root_dir):
    with open(root_dir / "config.yaml", "a") as config:
        config.write("otel:\n  content: true\n")
    thread = start_thread(traced)
    srv.add(reply(f"---\nnote: the key is {KEY}\n---\nI used {KEY}."))
    step(traced, thread)
    spans = receiver.wait_for(3)
    (root,) = [span for span in spans if span.parent_id is None]
    llm = next(span for span in spans if span.kind == "LLM")
    assert "Do the plan part." in llm.attributes["input.value"]
    assert "[redacted:FAKE_API_KEY]" in llm.attributes["output.value"]
    assert "[redacted:FAKE_API_KEY]" in json.loads(root.attributes["output.value"])["note"]
    assert KEY not in json.dumps([span.attributes for span in spans])


def test_a_failed_attempt_is_an_error_span_and_the_next_one_is_attempt_two(traced, srv, receiver):
    thread = start_thread(traced)
    srv.add({"status": 401, "body": {"error": {"message": "bad key"}}})
    failed = traced("thread", "step", thread)
    assert failed.code == 1
    queue_step(srv, 0)
    step(traced, thread)
    spans = receiver.wait_for(1 + 5)
    roots = sorted((span for span in spans if span.parent_id is None), key=lambda s: s.start_ns)
    assert [(span.attributes["uwf.status"], span.attributes["uwf.attempt"]) for span in roots] == [("failed", 1), ("ok", 2)]
    assert roots[0].failed and "refused the request (401" in roots[0].status_message
    (agent,) = children(spans, roots[0])
    assert agent.failed and "exited with code" in agent.status_message
    (llm,) = children(spans, agent)
    assert llm.failed and "401" in llm.status_message


def test_a_fork_is_a_trace_of_its_own_linked_to_the_step_it_came_from(traced, srv, receiver):
    thread = start_thread(traced)
    queue_step(srv, 0)
    first = step(traced, thread)["head"]
    fork = traced("thread", "fork", first)
    assert fork.code == 0, fork
    forked = fork.json()["thread"]
    queue_step(srv, 1)
    step(traced, forked)
    spans = receiver.wait_for(1, uwf__role="build")
    (own,) = [span for span in spans if span.parent_id is None and span.attributes["uwf.thread"] == forked]
    assert own.trace_id == f"{trace_id_of(forked):032x}" != f"{trace_id_of(thread):032x}"
    assert own.links == [(f"{trace_id_of(thread):032x}", f"{span_id_of(first):016x}")]
    assert own.attributes["uwf.follows.thread"] == thread


def test_a_collector_that_is_down_costs_the_step_one_warning(uwf, tmp_path, srv, root_dir):
    setup_traced_root(uwf, tmp_path, srv.base_url)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{closed_port()}"}
    thread = start_thread(uwf)
    queue_step(srv, 0)
    result = uwf("thread", "step", thread, env=env, timeout=30)
    assert result.code == 0, result
    assert result.json()["role"] == "plan"
    warnings = [line for line in result.err.splitlines() if "traces cannot be sent" in line]
    assert len(warnings) == 1 and warnings[0].startswith("uwf: warning: ") and "connection refused" in warnings[0]
    assert "Traceback" not in result.err
    shown = uwf("thread", "show", thread)
    assert shown.json()["head"] == result.json()["head"]


def test_an_sdk_that_cannot_be_imported_is_one_warning_and_the_step_goes_on(uwf, tmp_path, srv, root_dir, receiver):
    setup_traced_root(uwf, tmp_path, srv.base_url)
    thread = start_thread(uwf)
    queue_step(srv, 0)
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None  # as if the otel extra were not installed\n"
        "from uwf_core.cli.main import main\n"
        f"sys.exit(main(['thread', 'step', {thread!r}]))\n"
    )
    env = {"UWF_STORAGE_ROOT": str(root_dir), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "PATH": _path()}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "OpenTelemetry SDK cannot be imported" in line]
    assert len(lines) == 1 and "pip install 'uwf[otel]'" in lines[0]
    assert receiver.requests == 0


def test_otel_sdk_disabled_turns_export_off(traced, srv, receiver):
    thread = start_thread(traced)
    queue_step(srv, 0)
    result = traced("thread", "step", thread, env={"OTEL_SDK_DISABLED": "true"})
    assert result.code == 0, result
    assert receiver.wait_for(1, timeout=1.0) == []


def _path() -> str:
    import os

    return os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])


def test_a_collector_that_refuses_the_spans_is_said_at_the_next_step(uwf, tmp_path, srv):
    from uwf_core.telemetry.collector import read_status

    setup_traced_root(uwf, tmp_path, srv.base_url)
    thread = start_thread(uwf)
    with OtlpReceiver(status=401) as refusing:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": refusing.endpoint}
        queue_step(srv, 0)
        first = uwf("thread", "step", thread, env=env)
        assert first.code == 0 and "warning" not in first.err, first  # its shipper finds out after it ended
        url = refusing.endpoint + "/v1/traces"
        deadline = time.monotonic() + 30
        while (read_status(url) or ("",))[0] != "failed" and time.monotonic() < deadline:
            time.sleep(0.1)
        queue_step(srv, 1)
        second = uwf("thread", "step", thread, env=env)
    assert second.code == 0, second
    (warning,) = [line for line in second.err.splitlines() if "warning" in line]
    assert f"the last export of traces to {url} failed" in warning and "401" in warning


def test_agent_test_leaves_no_trace(traced, receiver):
    assert traced("agent", "add", "echo", "--protocol", "text", "--", "sh", "-c", "cat >/dev/null; echo '{\"answer\": \"pong\"}'").code == 0
    checked = traced("agent", "test", "echo")
    assert checked.code == 0 and checked.json()["ok"] is True, checked
    assert receiver.wait_for(1, timeout=2.0) == []


def test_a_bad_otel_section_is_one_warning_and_never_a_failed_step(uwf, tmp_path, srv, root_dir):
    setup_traced_root(uwf, tmp_path, srv.base_url)
    with open(root_dir / "config.yaml", "a") as config:
        config.write("otel:\n  endpont: http://127.0.0.1:6006\n")
    thread = start_thread(uwf)
    queue_step(srv, 0)
    result = uwf("thread", "step", thread)
    assert result.code == 0, result
    assert result.err.count("uwf: warning:") == 1
    assert "config.yaml: otel: unknown key 'endpont' (endpoint, content); traces are off" in result.err
    assert uwf("agent", "list").code == 0


def test_the_service_name_and_resource_attributes_may_stand_in_dotenv(traced, srv, receiver, root_dir):
    with open(root_dir / ".env", "a") as env_file:
        env_file.write("OTEL_SERVICE_NAME=team-agents\nOTEL_RESOURCE_ATTRIBUTES=openinference.project.name=triage,deployment.environment=test\n")
    thread = start_thread(traced)
    queue_step(srv, 0)
    step(traced, thread)
    (span, *_) = receiver.wait_for(5)
    assert span.resource["service.name"] == "team-agents"
    assert span.resource["openinference.project.name"] == "triage" and span.resource["deployment.environment"] == "test"


def test_a_collector_that_never_answers_holds_no_exit_past_a_few_seconds(uwf, tmp_path, srv):
    setup_traced_root(uwf, tmp_path, srv.base_url)
    thread = start_thread(uwf)
    queue_step(srv, 0)
    with socket.socket() as silent:  # takes connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        result = uwf("thread", "run", thread, "--max", "1", env={"OTEL_EXPORTER_OTLP_ENDPOINT": url}, timeout=60)
    assert result.code == 0, result
    (warning,) = [line for line in result.err.splitlines() if "warning" in line]
    assert warning == f"uwf: warning: traces not sent: the collector at {url}/v1/traces did not answer (nothing within 0.4s)"


def test_a_step_whose_process_died_is_a_killed_span_and_counts_as_an_attempt(traced, srv, receiver, root_dir):
    import os
    import signal

    from conftest import _uwf_command

    assert traced("agent", "add", "slow", "--protocol", "text", "--", "sh", "-c", "cat >/dev/null; sleep 30").code == 0
    thread = start_thread(traced)
    env = {**os.environ, "UWF_STORAGE_ROOT": str(root_dir), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
    dying = subprocess.Popen([*_uwf_command(), "thread", "step", thread, "--agent", "slow"], env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while (traced("thread", "show", thread).json().get("running") or {}).get("agent") != "slow":  # its agent runs
        assert time.monotonic() < deadline, "the step never started its agent"
        time.sleep(0.1)
    dying.send_signal(signal.SIGKILL)
    dying.wait()
    queue_step(srv, 0)
    step(traced, thread)
    roots = sorted(receiver.wait_for(2, uwf__thread=thread), key=lambda span: span.start_ns)
    dead, ok = [span for span in roots if span.parent_id is None]
    assert (dead.attributes["uwf.status"], dead.attributes["uwf.attempt"], dead.attributes["uwf.agent"]) == ("killed", 1, "slow")
    assert dead.failed and "died during this step" in dead.status_message
    assert dead.attributes["uwf.workflow.hash"] == ok.attributes["uwf.workflow.hash"]
    assert (ok.attributes["uwf.status"], ok.attributes["uwf.attempt"]) == ("ok", 2)


def test_a_collectors_key_in_dotenv_is_sent_as_a_header_and_never_shown(traced, srv, receiver, root_dir):
    team_key = "hc-TEAM-KEY-0123456789abcdef"
    with open(root_dir / ".env", "a") as env_file:
        env_file.write(f"OTEL_EXPORTER_OTLP_HEADERS=x-honeycomb-team={team_key},x-dataset=uwf%20runs\n")
    thread = start_thread(traced)
    queue_step(srv, 0)
    result = step(traced, thread)
    spans = receiver.wait_for(5)
    assert receiver.headers[0]["x-honeycomb-team"] == team_key and receiver.headers[0]["x-dataset"] == "uwf runs"
    assert team_key not in json.dumps([span.attributes for span in spans]) + json.dumps(spans[0].resource)
    assert team_key not in json.dumps(result) + traced("thread", "runs", thread).out


def test_no_agent_sees_the_collectors_address_or_key_and_an_echo_of_it_is_redacted(uwf, tmp_path, root_dir, receiver):
    """Found by an adversary's trial: the headers in the caller's environment reached the agent."""
    token = "SEKRET-bearer-0123456789"
    script = "env | grep -c OTEL_EXPORTER_OTLP_ > /dev/null && echo SEEN >&2; printf -- '---\\nthesis: t\\nkeyPoints: [a]\\n---\\n%s\\n' \"$LEAK\""
    (root_dir / "config.yaml").write_text(
        f"agents:\n  nosy:\n    command: sh\n    args: [-c, {json.dumps(script)}]\n    protocol: text\n    env: {{LEAK: 'Bearer {token}'}}\n"
    )
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    thread = uwf("thread", "start", "analyze-topic", "-p", "work", "-w", str(tmp_path)).json()["thread"]
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{token}"}
    result = uwf("thread", "step", thread, "--agent", "nosy", env=env)
    assert result.code == 0 and "SEEN" not in result.err, result
    read = uwf("thread", "read", thread, env=env)
    assert token not in read.out + result.err + result.out and "[redacted:OTEL_EXPORTER_OTLP_HEADERS]" in read.out, read.out


def test_every_part_of_a_collectors_headers_is_redacted_wherever_it_is_set():
    from uwf_core.config.env import Secrets
    from uwf_core.config.model import AgentConfig, Config

    config = Config(agents={"own": AgentConfig("own", "sh", (), "text", env={"OTEL_EXPORTER_OTLP_HEADERS": "x-own=IIIIIIIIII"})})
    environ = {"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-a=AAAA%2CBBBBBBB,authorization=Bearer%20SEKRET12345"}
    secrets = Secrets.of(config, {}, environ)
    shown = secrets.redact("BBBBBBB and SEKRET12345 and IIIIIIIIII")
    assert "BBBBBBB" not in shown and "SEKRET12345" not in shown and "IIIIIIIIII" not in shown, shown
