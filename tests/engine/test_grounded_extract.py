"""No answer from an error (design §16): the LLM extract fallback reads an agent's output as
evidence. The extract model must quote, for every field, the words of the output that support
it, and uwf checks each quote is there; a field without support, or a model that says there is
no answer, fails the attempt — so a model that fills any schema with invented values can never
turn an error transcript into a `done` step."""

from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES
from fake_openai import FakeOpenAI, fill_any_schema, grounded, reply
from uwf_core.engine.extraction.extract import ExtractError
from uwf_core.engine.extraction.llm import _parse

SCHEMA = {"type": "object", "properties": {"thesis": {"type": "string"}, "approved": {"type": "boolean"}}, "required": ["thesis"]}
OUTPUT = "I looked at it closely.\nMy thesis: cats rule the internet.\nI would not approve this change as it stands."


def _reply(data: dict) -> str:
    return json.dumps(data)


def test_each_field_must_rest_on_a_quote_of_the_output():
    output, evidence = _parse(
        _reply({"output": {"thesis": "Cats rule", "approved": False},
                "evidence": {"thesis": "My  thesis: Cats rule the internet", "approved": ["would not approve this change"]}}),
        SCHEMA, OUTPUT,
    )
    assert output == {"thesis": "Cats rule", "approved": False}
    assert evidence["approved"] == ["would not approve this change"]  # case and white space aside, verbatim


@pytest.mark.parametrize(
    "reply_, says",
    [
        ({"noAnswer": "the output is an error message"}, "found no answer in the agent's output (the output is an error message)"),
        ({"output": {"thesis": "x"}, "evidence": {}}, "quoted nothing of the agent's output for field 'thesis'"),
        ({"output": {"thesis": "x"}, "evidence": {"thesis": "as the agent clearly explained"}}, "quote is not in the agent's output"),
        ({"output": {"thesis": "x"}, "evidence": {"thesis": "i."}}, "quoted for it do not say 'x'"),
        ({"thesis": "cats"}, 'did not give "output" and "evidence" objects'),  # a plain form, filled: no evidence
        ({"output": {"approved": "yes"}, "evidence": {"approved": "approve"}}, "does not match the schema"),
    ],
)
def test_an_answer_without_support_is_refused_saying_why(reply_, says):
    with pytest.raises(ExtractError) as caught:
        _parse(_reply(reply_), SCHEMA, OUTPUT)
    assert says in caught.value.message


def _setup(uwf, root_dir, server, script: str) -> str:
    assert uwf("setup", "--provider", "fake", "--base-url", server.base_url, "--api-key", "sk-test-extract-key",
               "--model", "fake-model").code == 0
    config = root_dir / "config.yaml"
    config.write_text(config.read_text() + f"agents:\n  cli:\n    command: sh\n    args: [-c, {json.dumps(script)}]\n    protocol: text\n")
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    return uwf("thread", "start", "analyze-topic", "-p", "topic").json()["thread"]


def test_an_error_transcript_is_a_failed_attempt_even_with_a_model_that_fills_any_schema(uwf, root_dir):
    """hermes and aider exit 0 when their API call fails; the extract model here invents a value
    for every field of whatever schema it is given, with a made-up quote for each."""
    with FakeOpenAI([fill_any_schema] * 3) as server:
        thread = _setup(uwf, root_dir, server, "echo 'Error: 401 Unauthorized'; echo 'API call failed after 3 retries'")
        head = uwf("thread", "show", thread).json()["head"]
        result = uwf("thread", "step", thread, "--agent", "cli")
        assert len(server.requests) == 3  # the first run and two corrections, each read by the model
    assert result.code == 1
    assert "quote is not in the agent's output" in result.err
    assert "began: 'Error: 401 Unauthorized ⏎ API call failed after 3 retries'" in result.err  # the agent's own words
    assert uwf("thread", "show", thread).json()["head"] == head
    assert [run["status"] for run in uwf("thread", "runs", thread).json()] == ["failed"]


def test_agent_test_fails_an_agent_that_answers_with_an_error(uwf, root_dir):
    with FakeOpenAI([fill_any_schema] * 3) as server:
        _setup(uwf, root_dir, server, "echo 'Error: connect ECONNREFUSED 127.0.0.1:443'")
        result = uwf("agent", "test", "cli")
    assert result.code == 1 and result.json()["ok"] is False
    assert "ECONNREFUSED" in result.json()["error"]


def test_prose_that_holds_the_answer_is_extracted_with_its_evidence_kept(uwf, root_dir):
    prose = "After reading the sources, my thesis is that cats rule. The key points: they are cute."
    extracted = {"thesis": "cats rule", "keyPoints": ["they are cute"]}
    with FakeOpenAI([grounded(extracted, {"thesis": "my thesis is that cats rule", "keyPoints": ["they are cute"]})]) as server:
        thread = _setup(uwf, root_dir, server, f"echo {json.dumps(prose)}")
        result = uwf("thread", "step", thread, "--agent", "cli")
        system = server.requests[0]["body"]["messages"][0]["content"]
    assert result.code == 0, result
    assert "noAnswer" in system and "never invent a value" in system
    step = uwf("thread", "steps", thread).json()[-1]
    assert step["output"] == extracted
    detail = uwf("cas", "get", "--payload", step["detail"]).json()
    assert detail["extract"] == "llm" and detail["extractEvidence"]["thesis"] == "my thesis is that cats rule"


def test_the_model_saying_there_is_no_answer_fails_the_step_with_its_reason(uwf, root_dir):
    no = reply(json.dumps({"noAnswer": "the text is a stack trace, not an analysis"}))
    with FakeOpenAI([no, no, no]) as server:
        thread = _setup(uwf, root_dir, server, "echo 'Traceback (most recent call last):'; exit 0")
        result = uwf("thread", "step", thread, "--agent", "cli")
    assert result.code == 1 and "the text is a stack trace, not an analysis" in result.err


LIST_SCHEMA = {"type": "object", "properties": {"thesis": {"type": "string"}, "points": {"type": "array", "items": {"type": "string"}},
                                                "score": {"type": "number"}, "note": {"type": ["string", "null"]}}}


@pytest.mark.parametrize(
    "output, evidence, answer, says",
    [
        # a quote that is in the output but does not say the value: the lie of an error transcript
        ({"thesis": "The topic is thoroughly analysed and sound"}, {"thesis": "Error"}, "Error: 401 Unauthorized", "do not say"),
        ({"points": ["fast", "cheap"]}, {"points": ["it is fast and cheap"]}, "it is fast and cheap", "each item needs its own"),
        ({"score": 9}, {"score": "score: 7/10"}, "score: 7/10", "do not say '9'"),
        ({"thesis": "x"}, {"thesis": 5}, "x", "quoted nothing"),  # a number given as a quote: refused, no traceback
        ({"thesis": "x"}, {"thesis": {"a": "x"}}, "x", "quoted nothing"),
        ({}, {}, "anything", "extracted nothing"),
        # a second item resting on the first one's quote
        ({"points": ["src/auth.py", "src/backdoor.py"]}, {"points": ["changed src/auth.py", "changed src/auth.py"]},
         "changed src/auth.py", "do not say 'src/backdoor.py'"),
        ({"thesis": "no"}, {"thesis": "Not done"}, "Not done", "do not say 'no'"),  # a short value is a word of its own
        ({"score": 3}, {"score": "-3 points"}, "-3 points", "do not say '3'"),
        ({"thesis": "fixed the login bug"}, {"thesis": "the login page"}, "the login page", "do not say"),  # every word of a short value
        # the error quoted as its own evidence (hermes' 401, as the extract model filled the form with it)
        ({"thesis": "HTTP 401: Unauthorized"}, {"thesis": "HTTP 401: Unauthorized"}, "HTTP 401: Unauthorized", "rests on an error message"),
        ({"points": ["Traceback (most recent call last):"]}, {"points": ["Traceback (most recent call last):"]},
         "Traceback (most recent call last):\n  File x", "rests on an error message"),
        ({"thesis": "Error: 429 rate limit exceeded"}, {"thesis": "API Error: 429 rate limit exceeded"}, "API Error: 429 rate limit exceeded",
         "rests on an error message"),
    ],
)
def test_quotes_must_say_the_values_they_support(output, evidence, answer, says):
    with pytest.raises(ExtractError) as caught:
        _parse(_reply({"output": output, "evidence": evidence}), LIST_SCHEMA, answer)
    assert says in caught.value.message


@pytest.mark.parametrize(
    "output, evidence, answer",
    [
        ({"thesis": "No"}, {"thesis": "No"}, "Verdict: No."),  # short values are said as they are
        ({"score": 3}, {"score": "3"}, "Score: 3"),
        ({"thesis": "reject"}, {"thesis": "Verdict: reject"}, "**Verdict:** reject"),  # markdown marks aside
        ({"thesis": "well-tested code"}, {"thesis": "well–tested code"}, "It is well-tested code."),  # an en dash for a hyphen
        ({"thesis": "cats rule", "note": None}, {"thesis": "Cats rules the web"}, "Cats rules the web"),  # null: nothing to quote
        ({"points": ["fast", "cheap"]}, {"points": ["it is fast", "and cheap"]}, "it is fast and cheap"),
        # an answer about an error is an answer: only a line that reports one is refused
        ({"thesis": "the server returns HTTP 401 on expiry"}, {"thesis": "The server returns HTTP 401 on expiry"},
         "The server returns HTTP 401 on expiry."),
        ({"thesis": "error handling improved"}, {"thesis": "Error handling: improved"}, "Error handling: improved for 401 responses"),
    ],
)
def test_honest_quotes_are_taken_as_a_reader_would(output, evidence, answer):
    assert _parse(_reply({"output": output, "evidence": evidence}), LIST_SCHEMA, answer)[0] == output


def test_an_answer_only_the_extract_model_read_from_an_agent_that_reported_an_api_error_fails(uwf, root_dir):
    """hermes exits 0 on a 401 and prints the error; an agent may also print prose and end its
    stderr with its SDK's error. With the output read by the extract model alone, the attempt
    fails, naming the error; an answer in the role's own format is the agent's word and stands."""
    quoted = {"thesis": "HTTP 401: Unauthorized", "keyPoints": ["HTTP 401: Unauthorized"]}
    with FakeOpenAI([grounded(quoted, {"thesis": "HTTP 401: Unauthorized", "keyPoints": ["HTTP 401: Unauthorized"]})] * 3) as server:
        thread = _setup(uwf, root_dir, server, "echo 'HTTP 401: Unauthorized'")
        result = uwf("thread", "step", thread, "--agent", "cli")
    assert result.code == 1 and "rests on an error message" in result.err, result
    prose = "My thesis is that cats rule. The key points: they are cute."
    extracted = {"thesis": "cats rule", "keyPoints": ["they are cute"]}
    evidence = {"thesis": "My thesis is that cats rule", "keyPoints": ["they are cute"]}
    with FakeOpenAI([grounded(extracted, evidence)]) as server:
        thread = _setup(uwf, root_dir, server, f"echo {json.dumps(prose)}; echo 'openai.APIConnectionError: Connection error.' >&2")
        result = uwf("thread", "step", thread, "--agent", "cli")
    assert result.code == 1, result
    assert "reported an error instead of answering (its stderr ends with 'openai.APIConnectionError: Connection error.')" in result.err
    assert uwf("thread", "runs", thread).json()[-1]["status"] == "failed"
    framed = "---\nthesis: cats rule\nkeyPoints: [they are cute]\n---\nbody\n"
    with FakeOpenAI([]) as server:
        thread = _setup(uwf, root_dir, server, f"printf -- {json.dumps(framed)}; echo 'Error: 429 rate limit, retried' >&2")
        assert uwf("thread", "step", thread, "--agent", "cli").code == 0  # its own frontmatter: the fast path, no model


@pytest.mark.parametrize("line", [
    "HTTP 401: Unauthorized", "Error: 401 Unauthorized", 'API Error: 500 {"type":"error"}', "Traceback (most recent call last):",
    "openai.AuthenticationError: Error code: 401 - {'error': ...}", "anthropic.APIStatusError(status_code=529)", "status code: 429",
    "503 Service Unavailable", "**Error:** invalid api key", "Request failed with status code 401", "HTTP/1.1 502 Bad Gateway",
    # the shapes an adversary's trial found first missing
    "Error 401: Unauthorized", "[ERROR] 401 Unauthorized", "❌ Error code: 401 - invalid x-api-key",
    '{"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}', "Invalid API key · Please run /login",
    "Credit balance is too low", "Authentication failed",
])
def test_an_error_line_is_one(line):
    from uwf_core.engine.extraction.evidence import error_line

    assert error_line(line) is not None


@pytest.mark.parametrize("line", [
    "The server returns HTTP 401 when the token expires.", "thesis: errors are handled", "I fixed the 401 handling in auth.py",
    "keyPoints: [error handling, retries]", "Failed tests: none", "Error handling: improved for 401 responses",
    "Failed: 0 of 12 tests", "Invalidation of the cache is handled", "- error budget: 5%",
])
def test_an_answer_about_errors_is_no_error_line(line):
    from uwf_core.engine.extraction.evidence import error_line

    assert error_line(line) is None
