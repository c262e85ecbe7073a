"""Agent output and workflow files are untrusted: whatever they hold, uwf answers with one clean
error or a result — never a traceback, a crash or a hang — and a failed step moves no head.
Property-based (hypothesis) plus the known-nasty cases, run in the default test run."""

from __future__ import annotations

import json
import os

import pytest
from conftest import EXAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uwf_core.encoding.cbor import decode, encode
from uwf_core.engine.extraction.extract import ExtractError, extract_fast, parse_answer
from uwf_core.errors import UwfError, WorkflowError
from uwf_core.workflow.yaml_doc import parse_yaml_document

SCHEMA = {"type": "object", "properties": {"plan": {"type": "string"}}, "required": ["plan"]}

NASTY_ANSWERS = [
    '{"plan": ' + "[" * 200_000 + "]" * 200_000 + "}",
    '{"a":' * 100_000 + "1" + "}" * 100_000,
    "---\nplan: " + "[" * 50_000 + "]" * 50_000 + "\n---\n",
    "---\n" + "".join("  " * i + f"k{i}:\n" for i in range(3000)) + "---\n",
    "---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b]\n---\n",
    "---\nplan: \x00\x01\x02\n---\n",
    "---\nplan: ok\n",  # an unterminated block
    "---\n: : :\n---\n",
    "---\n- a list\n---\n",
    "\ufeff---\nplan: 1\n---\n",
    "{" * 10 + "}",
    "x" * 9_000_000,
    "---\nplan: !!python/object:os.system ls\n---\n",
    "---\nplan: \ud800\n---\n",
    '{"plan": Infinity}',
    '{"plan": 1e999}',
    "---\nplan: .inf\n---\n",
    "---\nplan: 123456789012345678901234567890\n---\n",
]


@pytest.mark.parametrize("text", NASTY_ANSWERS, ids=[f"nasty-{i}" for i in range(len(NASTY_ANSWERS))])
def test_nasty_agent_output_is_a_clean_extract_error_or_an_answer(text):
    try:
        extract_fast(text, SCHEMA)
    except ExtractError as exc:
        assert "\n" not in exc.message.strip() or len(exc.message) < 2000
        assert len(exc.message) < 2000


answers = st.one_of(
    st.text(max_size=400),
    st.builds(lambda body: "---\n" + body + "\n---\nbody", st.text(max_size=300)),
    st.builds(lambda depth, leaf: "---\nplan: " + "[" * depth + leaf + "]" * depth + "\n---\n", st.integers(0, 400), st.sampled_from(["1", "a", ""])),
    st.builds(lambda depth: '{"plan": ' + "[" * depth + "]" * depth + "}", st.integers(0, 400)),
    st.builds(json.dumps, st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                                       lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4))),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answers)
def test_any_agent_output_gives_an_answer_or_an_extract_error(text):
    try:
        output, _, _ = parse_answer(text)
    except ExtractError:
        return
    assert isinstance(output, dict)
    encode(output)  # whatever is accepted can be stored


@pytest.mark.parametrize("text", NASTY_ANSWERS[-4:], ids=["json-infinity", "json-1e999", "yaml-inf", "huge-int"])
def test_numbers_json_cannot_carry_are_refused_at_extract_naming_the_field(text):
    with pytest.raises(ExtractError) as refused:
        parse_answer(text)
    assert "'plan'" in refused.value.message


def test_the_same_json_with_other_whitespace_hashes_the_same():
    from uwf_core.store.cas import node_hash

    compact = json.loads('{"name":"Alice","age":30,"tags":["a","b"]}')
    spaced = json.loads(' {\n  "tags" : [ "a" ,\t"b" ],\n  "age" : 30.0 , "name":"Alice" }\n')
    assert node_hash("7XX5H51CVD9H0", compact) == node_hash("7XX5H51CVD9H0", spaced)


workflow_texts = st.one_of(
    st.text(max_size=300),
    st.builds(lambda key, value: f"name: x\n{key}: {value}\n", st.text(max_size=20), st.text(max_size=40)),
    st.builds(lambda depth: "name: x\nroles: " + "[" * depth + "]" * depth + "\n", st.integers(0, 600)),
    st.builds(lambda n: "a: &a [1]\n" + "\n".join(f"k{i}: *a" for i in range(n)), st.integers(1, 20)),
)


@settings(max_examples=300, deadline=None)
@given(workflow_texts)
def test_any_workflow_text_is_accepted_or_refused_with_one_line(text):
    from uwf_core.workflow.lint import build_draft

    try:
        draft = build_draft(parse_yaml_document(text, "wf.yaml"))
    except WorkflowError as exc:
        assert exc.message.startswith("wf.yaml") and "\n" not in exc.message
        return
    for problem in draft.errors:
        assert "\n" not in problem.format(draft.document)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_canonical_cbor_ignores_key_order_and_round_trips(value):
    data = encode(value)
    assert encode(decode(data)) == data
    if isinstance(value, dict):
        assert encode(dict(reversed(list(value.items())))) == data


# -- end to end: a text agent answering garbage never moves the head --------------------------------


@pytest.fixture
def garbage_agent(root, tmp_path):
    from uwf_core.config.model import AgentConfig, Config
    from uwf_core.thread.ops import start_thread
    from uwf_core.workflow.ops import put_workflow

    answer = tmp_path / "answer.txt"
    put_workflow(root, str(EXAMPLES / "analyze-topic.yaml"))
    root.save_config(Config(agents={"garbage": AgentConfig("garbage", "sh", ("-c", f"cat >/dev/null; cat '{answer}'"), "text")}, default_agent="garbage"))
    return root, start_thread(root, "analyze-topic", "x").thread, answer


@pytest.mark.parametrize("text", NASTY_ANSWERS[:9], ids=[f"nasty-{i}" for i in range(9)])
def test_a_step_whose_agent_answers_garbage_fails_cleanly_and_keeps_the_head(garbage_agent, text):
    from uwf_core.engine.attempt import StepOptions
    from uwf_core.engine.step import perform_step

    repo, thread, answer = garbage_agent
    answer.write_text(text, encoding="utf-8", errors="surrogatepass")
    _fails_and_keeps_the_head(repo, thread)


def _fails_and_keeps_the_head(repo, thread: str) -> str:
    from uwf_core.engine.attempt import StepOptions
    from uwf_core.engine.step import perform_step

    head = repo.threads.heads()[thread]
    with pytest.raises(UwfError) as failure:
        perform_step(repo, thread, StepOptions(timeout=60))
    assert len(failure.value.message) < 2000
    assert repo.threads.heads()[thread] == head
    assert [record.status for record in repo.runs.read(thread)][-1] == "failed"
    assert os.path.exists(repo.location)
    return failure.value.message


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=300), st.builds(lambda b: b"---\nplan: " + b + b"\n---\n", st.binary(max_size=60))))
def test_random_bytes_from_an_agent_never_move_the_head_unless_they_are_an_answer(garbage_agent, data):
    """Invalid UTF-8, NULs, anything: a clean failure that keeps the head, or a real step."""
    from uwf_core.engine.attempt import StepOptions
    from uwf_core.engine.step import perform_step

    repo, thread, answer = garbage_agent
    answer.write_bytes(data)
    head = repo.threads.heads().get(thread)
    if head is None:
        return  # an earlier example finished the thread
    try:
        result = perform_step(repo, thread, StepOptions(timeout=60))
    except UwfError as exc:
        assert len(exc.message) < 2000 and repo.threads.heads().get(thread) == head
        return
    assert result.head != head and repo.nodes.get(result.head)  # accepted: a whole new step


def test_an_agent_flooding_stdout_is_stopped_not_buffered(root, tmp_path):
    from uwf_core.config.model import AgentConfig, Config
    from uwf_core.engine.contain import process
    from uwf_core.thread.ops import start_thread
    from uwf_core.workflow.ops import put_workflow

    put_workflow(root, str(EXAMPLES / "analyze-topic.yaml"))
    flood = AgentConfig("flood", "sh", ("-c", "cat >/dev/null; yes plan-plan-plan-plan"), "text")
    root.save_config(Config(agents={"flood": flood}, default_agent="flood"))
    thread = start_thread(root, "analyze-topic", "x").thread
    limit = process.MAX_STDOUT_BYTES
    process.MAX_STDOUT_BYTES = 2_000_000  # the same code path, reached in a moment
    try:
        message = _fails_and_keeps_the_head(root, thread)
    finally:
        process.MAX_STDOUT_BYTES = limit
    assert "printed more than" in message


@pytest.mark.parametrize(
    "text",
    [
        "name: x\nroles: " + "[" * 50_000 + "]" * 50_000 + "\n",
        "name: x\n" + "".join("  " * i + f"k{i}:\n" for i in range(3000)),
        "name: x\n" + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}" if i else "lol"] * 9) + "]\n" for i in range(9)),
    ],
    ids=["flow-50000-deep", "block-3000-deep", "alias-bomb-9x9"],
)
def test_a_hostile_workflow_file_is_one_line_from_workflow_put(uwf, tmp_path, text):
    path = tmp_path / "wf.yaml"
    path.write_text(text)
    result = uwf("workflow", "put", str(path), timeout=60)
    assert result.code == 1 and result.err.startswith("uwf: error: ") and result.err.count("\n") == 1, result
    assert "Traceback" not in result.err and len(result.err) < 1000
