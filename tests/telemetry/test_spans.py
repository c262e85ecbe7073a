"""The pieces of tracing without a collector: the span recorder, an agent's trace pipe, the
settings (OTEL_* variables, .env, config.yaml) and the ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from uwf_core.config.model import dump_config, parse_config
from uwf_core.encoding.ids import encode_u64
from uwf_core.telemetry import spans
from uwf_core.telemetry.export import span_id_of, trace_id_of
from uwf_core.telemetry.pipe import MAX_SPANS, TracePipe
from uwf_core.telemetry.settings import trace_settings
from uwf_core.telemetry.spans import AGENT, LLM, NO_SPAN, Span, close_root, open_root, span


def test_nothing_is_recorded_when_no_step_is_traced():
    with span("chat x", LLM, {"gen_ai.request.model": "x"}) as found:
        found.put({"a": 1})
        found.fail("never seen")
    assert found is NO_SPAN


def test_spans_nest_under_the_open_root_and_an_exception_fails_them():
    root = Span("step", attributes={"uwf.thread": "T"})
    tokens = open_root(root, content=False)
    try:
        with span("agent a", AGENT) as agent:
            with span("chat m", LLM, {"gen_ai.usage.input_tokens": 3, "left.out": None}):
                pass
            with pytest.raises(ValueError):
                with span("tool t", "TOOL"):
                    raise ValueError("bad argument\nsecond line")
    finally:
        close_root(tokens)
    assert spans.current() is None
    assert [child.name for child in root.children] == ["agent a"]
    llm, tool = agent.children
    assert llm.attributes == {"gen_ai.usage.input_tokens": 3}
    assert tool.error == "ValueError: bad argument"  # one line
    assert agent.error is None and all(each.end_ns >= each.start_ns for each in (agent, llm, tool))


def test_a_long_attribute_is_cut_with_a_mark():
    found = Span("s", attributes={"input.value": "x" * (spans.MAX_TEXT + 10)})
    assert found.attributes["input.value"].endswith("… [10 more characters]")


AGENT_SIDE = """
import sys
from uwf_core.telemetry.spans import LLM, TOOL, content_on, span
with span("chat m", LLM, {"gen_ai.usage.input_tokens": 7}) as call:
    call.put({"content": content_on()})
with span("tool t", TOOL) as tool:
    tool.fail("no such file")
"""


def test_an_agent_process_sends_its_spans_up_the_pipe_and_they_land_under_the_agent_span():
    agent = Span("agent builtin", AGENT)
    pipe = TracePipe(agent, trace_id_of("01M8C8Q7MRHG6KYD8DRAVSJN32"), content=True)
    env = {**os.environ, **pipe.env}
    assert env["TRACEPARENT"] == f"00-{trace_id_of('01M8C8Q7MRHG6KYD8DRAVSJN32'):032x}-{agent.span_id:016x}-01"
    subprocess.run([sys.executable, "-c", AGENT_SIDE], env=env, pass_fds=(pipe.fd,), check=True)
    pipe.collect()
    llm, tool = agent.children
    assert (llm.name, llm.kind, llm.attributes) == ("chat m", LLM, {"gen_ai.usage.input_tokens": 7, "content": True})
    assert tool.error == "no such file"
    assert agent.start_ns <= llm.start_ns <= llm.end_ns <= time.time_ns()


def test_what_an_agent_sends_is_bounded_and_held_to_its_run():
    agent = Span("agent x", AGENT)
    pipe = TracePipe(agent, 1, content=False)
    lines = [
        b"not json",
        json.dumps({"name": "early", "kind": "NOPE", "start": 1, "end": 2, "attributes": {"ok": 1, "nested": {"a": 1}}}).encode(),
        json.dumps({"kind": "LLM"}).encode(),  # no name
        *(json.dumps({"name": f"n{i}", "start": agent.start_ns, "end": agent.start_ns}).encode() for i in range(MAX_SPANS + 5)),
    ]
    os.write(pipe.fd, b"\n".join(lines) + b"\n")
    pipe.collect()
    assert len(agent.children) == MAX_SPANS
    early = agent.children[0]
    assert early.kind == "CHAIN" and early.start_ns == agent.start_ns  # clamped to the agent's start
    assert early.attributes == {"ok": 1}  # a mapping is not an attribute value


def test_ids_come_from_the_thread_and_the_step():
    thread = "01M8C8Q7MRHG6KYD8DRAVSJN32"
    assert trace_id_of(thread) == trace_id_of(thread) != trace_id_of("01M8C8Q7MRHG6KYD8DRAVSJN33")
    assert 0 < trace_id_of(thread) < 1 << 128
    value = 0xF123456789ABCDEF
    assert span_id_of(encode_u64(value)) == value


def _settings(config_text: str = "", environ: dict | None = None, env_values: dict | None = None):
    return trace_settings(parse_config(config_text, "config.yaml"), environ or {}, env_values)


def test_settings_nothing_configured_is_off():
    assert _settings() is None


def test_settings_the_variables_as_the_specification_reads_them():
    assert _settings(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}).url == "http://c:4318/v1/traces"
    signal = _settings(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/x"})
    assert (signal.url, signal.source) == ("http://t:1/x", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    headers = _settings(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "x-team=a%20b, Auth=k"})
    assert headers.headers == (("x-team", "a b"), ("auth", "k"))
    assert _settings(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"}) is None
    assert _settings(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "none"}) is None
    assert _settings(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}).protocol == "grpc"


def test_settings_the_environment_then_dotenv_then_config_yaml():
    config = "otel:\n  endpoint: http://from-config:6006\n  content: true\n"
    from_config = _settings(config)
    assert (from_config.url, from_config.source, from_config.content) == ("http://from-config:6006/v1/traces", "config.yaml otel.endpoint", True)
    dotenv = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://from-env-file:4318", "OTEL_EXPORTER_OTLP_HEADERS": "api_key=k1"}
    assert _settings(config, env_values=dotenv).url == "http://from-env-file:4318/v1/traces"
    assert _settings(config, env_values=dotenv).headers == (("api_key", "k1"),)
    assert _settings(config, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:1"}, dotenv).url == "http://env:1/v1/traces"


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("otel:\n  endpont: http://x\n", "unknown key 'endpont'"),
        ("otel:\n  endpoint: collector:4318\n", "must be an http:// or https:// URL"),
        ("otel:\n  content: maybe\n", "must be true or false"),
        ("otel: yes\n", "otel must be a mapping"),
    ],
)
def test_a_bad_otel_section_turns_traces_off_with_one_line_and_is_kept_as_written(text, fragment):
    config = parse_config(text, "config.yaml")  # never an error: traces never stop a step
    assert fragment in config.otel.problem and "\n" not in config.otel.problem
    off = trace_settings(config, {})
    assert off.off == f"{config.otel.problem}; traces are off"
    assert trace_settings(config, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}).off is None  # the variable wins
    assert parse_config(dump_config(config), "config.yaml").otel.problem == config.otel.problem


def test_an_exporter_other_than_otlp_is_said_and_nothing_is_sent():
    settings = _settings(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "console"})
    assert settings.off == "OTEL_TRACES_EXPORTER=console: uwf exports traces over OTLP only (otlp, or none); traces are off"


def test_every_otel_variable_is_read_from_dotenv_too():
    settings = _settings(environ={"OTEL_SERVICE_NAME": "from-env"},
                         env_values={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SERVICE_NAME": "from-file", "OTEL_BSP_SCHEDULE_DELAY": "200"})
    assert settings.variable("OTEL_SERVICE_NAME") == "from-env" and settings.variable("OTEL_BSP_SCHEDULE_DELAY") == "200"


def test_the_otel_section_round_trips():
    config = parse_config("otel:\n  endpoint: http://c:6006\n  content: true\n", "config.yaml")
    assert config.to_dict()["otel"] == {"endpoint": "http://c:6006", "content": "true"}
    assert "otel" not in parse_config("", "config.yaml").to_dict()
