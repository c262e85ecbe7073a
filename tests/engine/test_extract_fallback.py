"""Extract in layers: the LLM fallback for a text-protocol agent (fake OpenAI server),
corrections by re-running a text agent, and extract_with_corrections at kit level."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import httpx
import pytest
import respx
from node_file import hashes as stored_hashes
from conftest import EXAMPLES
from fake_openai import FakeOpenAI, reply

from uwf_core.config.model import AgentConfig, Config, ModelConfig, ProviderConfig, with_agent
from uwf_core.engine.extraction.extract import (
    MAX_CORRECTIONS,
    Extracted,
    ExtractError,
    correction_message,
    extract_fast,
    extract_with_corrections,
)
from uwf_core.engine.extraction.llm import LlmExtractor, fallback_for
from uwf_core.errors import UwfError
from uwf_core.llm.client import Usage
from uwf_core.repo import Repo

KEY = "sk-test-SECRET-123"
SCHEMA = {
    "type": "object",
    "properties": {"thesis": {"type": "string"}, "keyPoints": {"type": "array", "items": {"type": "string"}}, "caveats": {"type": "string"}},
    "required": ["thesis", "keyPoints"],
}
PROSE = "Cats rule the internet. They are cute, and they are aloof."
GOOD = "---\nthesis: Cats rule\nkeyPoints:\n  - cute\n  - aloof\n---\n## Why\n\nBecause."


# -- end to end: a text-protocol shell agent ------------------------------------------


@pytest.fixture
def srv():
    with FakeOpenAI() as server:
        yield server


def write_agent(tmp_path: Path, name: str, body: str) -> Path:
    """A text-protocol agent: a shell script reading the prompt on stdin.

    Each run appends a line to <name>.runs and saves the prompt as <name>.prompt.<n>.
    """
    runs = tmp_path / f"{name}.runs"
    script = tmp_path / f"{name}.sh"
    script.write_text(
        "#!/bin/sh\n"
        'prompt=$(cat)\n'
        f'echo run >> "{runs}"\n'
        f'n=$(wc -l < "{runs}" | tr -d " ")\n'
        f'printf "%s" "$prompt" > "{tmp_path}/{name}.prompt.$n"\n'
        + body
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def runs_of(tmp_path: Path, name: str) -> int:
    path = tmp_path / f"{name}.runs"
    return len(path.read_text().splitlines()) if path.exists() else 0


def configure(uwf, root_dir: Path, script: Path, base_url: str | None) -> None:
    if base_url is not None:
        result = uwf("setup", "--provider", "fake", "--base-url", base_url, "--api-key", KEY, "--model", "fake-model", "--summarizer", "off")
        assert result.code == 0, result
    root = Repo.open(str(root_dir))
    # It keeps its counts beside its script: a path outside the workspace it is allowed to write.
    config = with_agent(root.config, AgentConfig("shell", "sh", (str(script),), "text", writable=(str(script.parent),)))
    root.save_config(Config(**{**config.__dict__, "default_agent": "shell"}))
    put = uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml"))
    assert put.code == 0, put


def start(uwf) -> tuple[str, str]:
    result = uwf("thread", "start", "analyze-topic", "-p", "Why do cats rule the internet?")
    assert result.code == 0, result
    return result.json()["thread"], result.json()["head"]


def details(uwf, step: str) -> dict:
    result = uwf("thread", "step-details", step)
    assert result.code == 0, result
    return result.json()


CORRECTING = (
    'case "$prompt" in\n'
    '  *"# Correction"*) printf -- "---\\nthesis: Cats rule\\nkeyPoints:\\n  - cute\\n---\\nFixed.\\n" ;;\n'
    '  *) echo "Cats are great, trust me." ;;\n'
    "esac\n"
)


def test_text_agent_prose_is_extracted_by_the_llm(uwf, srv, root_dir, tmp_path):
    script = write_agent(tmp_path, "prose", f'echo "{PROSE}"\n')
    configure(uwf, root_dir, script, srv.base_url)
    thread, _ = start(uwf)
    evidence = {"thesis": "Cats rule the internet", "keyPoints": ["They are cute", "they are aloof"]}
    srv.add(reply(json.dumps({"output": {"thesis": "Cats rule", "keyPoints": ["cute", "aloof"]}, "evidence": evidence}),
                  prompt_tokens=120, completion_tokens=15))
    result = uwf("thread", "step", thread)
    assert result.code == 0, result
    assert result.json()["done"] is True
    assert result.json()["agent"] == "shell"
    assert runs_of(tmp_path, "prose") == 1
    assert "Why do cats rule the internet?" in (tmp_path / "prose.prompt.1").read_text()

    assert len(srv.requests) == 1
    request = srv.requests[0]
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    body = request["body"]
    assert body["model"] == "fake-model"
    assert body["response_format"] == {"type": "json_object"}
    assert "tools" not in body
    system, user = body["messages"]
    assert system["role"] == "system"
    assert "JSON Schema" in system["content"]
    schema_text = system["content"].split("JSON Schema:\n", 1)[1]
    assert json.loads(schema_text)["required"] == ["thesis", "keyPoints"]
    assert set(json.loads(schema_text)["properties"]) == {"thesis", "keyPoints", "caveats"}
    assert user == {"role": "user", "content": PROSE + "\n"}

    step = details(uwf, result.json()["head"])
    assert step["output"] == {"thesis": "Cats rule", "keyPoints": ["cute", "aloof"]}
    assert step["agent"] == "shell"
    assert step["content"] == PROSE + "\n"
    payload = step["detail"]["payload"]
    assert payload["protocol"] == "text"
    assert payload["extract"] == "llm"
    assert payload["extractEvidence"] == evidence  # what each field rests on, kept with the step
    assert payload["corrections"] == 0
    assert payload["exitCode"] == 0
    assert payload["extractUsage"] == {"promptTokens": 120, "completionTokens": 15, "totalTokens": 135, "requests": 1}
    show = uwf("thread", "show", thread).json()
    assert show["usage"] == {"promptTokens": 120, "completionTokens": 15, "totalTokens": 135, "requests": 1}
    grep_hits = [p for p in root_dir.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert grep_hits == [root_dir / ".env"]


def test_text_agent_frontmatter_needs_no_llm(uwf, srv, root_dir, tmp_path):
    script = write_agent(tmp_path, "good", f"printf -- '{GOOD}\\n'\n")
    configure(uwf, root_dir, script, srv.base_url)
    thread, _ = start(uwf)
    result = uwf("thread", "step", thread)
    assert result.code == 0, result
    assert srv.requests == []
    payload = details(uwf, result.json()["head"])["detail"]["payload"]
    assert payload["extract"] == "frontmatter"
    assert "extractUsage" not in payload


def test_failed_llm_extract_then_correction_rerun(uwf, srv, root_dir, tmp_path):
    script = write_agent(tmp_path, "corr", CORRECTING)
    configure(uwf, root_dir, script, srv.base_url)
    thread, _ = start(uwf)
    srv.add(reply("Sorry, I cannot find structured data here."))  # not JSON: the fallback fails
    result = uwf("thread", "step", thread)
    assert result.code == 0, result
    assert runs_of(tmp_path, "corr") == 2
    assert len(srv.requests) == 1
    assert srv.requests[0]["body"]["response_format"] == {"type": "json_object"}
    assert srv.requests[0]["body"]["messages"][1]["content"] == "Cats are great, trust me.\n"
    second_prompt = (tmp_path / "corr.prompt.2").read_text()
    assert "# Correction" in second_prompt
    assert "Your previous answer could not be used: the answer has no frontmatter block" in second_prompt
    payload = details(uwf, result.json()["head"])["detail"]["payload"]
    assert payload["corrections"] == 1
    assert payload["extract"] == "frontmatter"


def test_tokens_of_a_failed_llm_extract_are_counted(uwf, srv, root_dir, tmp_path):
    script = write_agent(tmp_path, "corr", CORRECTING)
    configure(uwf, root_dir, script, srv.base_url)
    thread, _ = start(uwf)
    srv.add(reply(json.dumps({"thesis": "no points"}), prompt_tokens=70, completion_tokens=7))
    result = uwf("thread", "step", thread)
    assert result.code == 0, result
    assert len(srv.requests) == 1
    assert uwf("thread", "show", thread).json().get("usage") == {"promptTokens": 70, "completionTokens": 7, "totalTokens": 77, "requests": 1}


def test_correction_without_a_model(uwf, root_dir, tmp_path):
    script = write_agent(tmp_path, "corr", CORRECTING)
    configure(uwf, root_dir, script, None)
    thread, _ = start(uwf)
    result = uwf("thread", "step", thread)
    assert result.code == 0, result
    assert runs_of(tmp_path, "corr") == 2
    first, second = (tmp_path / "corr.prompt.1").read_text(), (tmp_path / "corr.prompt.2").read_text()
    assert "# Correction" not in first
    assert second.startswith(first.rstrip("\n"))
    assert "# Correction" in second
    assert "# Deliverable format" in second[second.index("# Correction") :]
    step = details(uwf, result.json()["head"])
    assert step["output"] == {"thesis": "Cats rule", "keyPoints": ["cute"]}
    assert step["content"] == "---\nthesis: Cats rule\nkeyPoints:\n  - cute\n---\nFixed.\n"
    payload = step["detail"]["payload"]
    assert payload["corrections"] == 1
    assert payload["extract"] == "frontmatter"
    assert payload["protocol"] == "text"
    assert "extractUsage" not in payload


def test_always_garbage_fails_after_two_corrections(uwf, root_dir, tmp_path):
    script = write_agent(tmp_path, "junk", 'echo "lol no"\n')
    configure(uwf, root_dir, script, None)
    thread, head = start(uwf)
    cas_before = stored_hashes(root_dir)
    assert cas_before  # the thread's nodes: a comparison of two empty lists would prove nothing
    result = uwf("thread", "step", thread)
    assert result.code == 1, result
    assert result.out == ""
    lines = [line for line in result.err.splitlines() if line.startswith("uwf: error:")]
    assert len(lines) == 1, result.err
    assert "could not read the output of agent 'shell'" in lines[0]
    assert "the answer has no frontmatter block" in lines[0]
    assert "after 2 corrections" in lines[0]
    assert "Traceback" not in result.err
    assert runs_of(tmp_path, "junk") == 1 + MAX_CORRECTIONS
    show = uwf("thread", "show", thread).json()
    assert show["head"] == head and show["done"] is False
    runs = [json.loads(line) for line in (root_dir / "runs.jsonl").read_text().splitlines()]
    assert runs[-1]["status"] == "failed" and runs[-1]["head"] == head and runs[-1]["step"] is None
    assert stored_hashes(root_dir) == cas_before


def test_schema_invalid_answers_fail_with_the_validation_errors(uwf, root_dir, tmp_path):
    script = write_agent(tmp_path, "bad", "printf -- '---\\nthesis: 5\\n---\\nbody\\n'\n")
    configure(uwf, root_dir, script, None)
    thread, head = start(uwf)
    result = uwf("thread", "step", thread)
    assert result.code == 1, result
    line = [line for line in result.err.splitlines() if line.startswith("uwf: error:")][0]
    assert "does not match the role's schema" in line
    assert "after 2 corrections" in line
    assert "(and 1 more)" in line
    assert runs_of(tmp_path, "bad") == 3
    assert "'keyPoints' is a required property" in (tmp_path / "bad.prompt.2").read_text()
    assert "5 is not of type 'string'" in (tmp_path / "bad.prompt.3").read_text()
    assert uwf("thread", "show", thread).json()["head"] == head


# -- kit level: extract_with_corrections with fake callables ---------------------------


class Fallback:
    def __init__(self, *results):
        self.results = list(results)
        self.calls: list[tuple[str, dict]] = []

    def __call__(self, text, schema):
        self.calls.append((text, schema))
        result = self.results.pop(0)
        if isinstance(result, Exception):
            raise result
        return result


class Retry:
    def __init__(self, *answers):
        self.answers = list(answers)
        self.messages: list[str] = []

    def __call__(self, message):
        self.messages.append(message)
        return self.answers.pop(0)


def test_fast_path_needs_no_fallback_or_retry():
    fallback, retry = Fallback(), Retry()
    outcome = extract_with_corrections(GOOD, SCHEMA, fallback=fallback, retry=retry)
    assert outcome.extracted == Extracted({"thesis": "Cats rule", "keyPoints": ["cute", "aloof"]}, "## Why\n\nBecause.", "frontmatter")
    assert outcome.text == GOOD
    assert outcome.corrections == 0
    assert outcome.usage is None
    assert fallback.calls == [] and retry.messages == []


def test_json_object_answer_is_the_fast_path():
    outcome = extract_with_corrections('  {"thesis": "t", "keyPoints": []}  ', SCHEMA)
    assert outcome.extracted.method == "json"
    assert outcome.extracted.output == {"thesis": "t", "keyPoints": []}


def test_fallback_success_carries_its_usage():
    extracted = Extracted({"thesis": "t", "keyPoints": ["k"]}, PROSE, "llm")
    fallback = Fallback((extracted, Usage(30, 3, 33, 1)))
    retry = Retry()
    outcome = extract_with_corrections(PROSE, SCHEMA, fallback=fallback, retry=retry)
    assert outcome.extracted is extracted
    assert outcome.usage == Usage(30, 3, 33, 1)
    assert outcome.corrections == 0
    assert outcome.text == PROSE
    assert fallback.calls == [(PROSE, SCHEMA)]
    assert retry.messages == []


def test_fallback_failure_then_correction():
    fallback = Fallback(ExtractError("the extract model did not answer with JSON: 'x'"))
    retry = Retry(GOOD)
    outcome = extract_with_corrections(PROSE, SCHEMA, fallback=fallback, retry=retry)
    assert outcome.corrections == 1
    assert outcome.text == GOOD
    assert outcome.extracted.method == "frontmatter"
    assert outcome.usage is None
    assert len(fallback.calls) == 1
    assert retry.messages == [correction_message(ExtractError("the answer has no frontmatter block (--- yaml ---) and is not a JSON object"), SCHEMA)]


def test_fallback_is_tried_again_on_each_corrected_answer():
    extracted = Extracted({"thesis": "t", "keyPoints": ["k"]}, "still prose", "llm")
    fallback = Fallback(ExtractError("no JSON"), (extracted, Usage(5, 1, 6, 1)))
    retry = Retry("still prose")
    outcome = extract_with_corrections(PROSE, SCHEMA, fallback=fallback, retry=retry)
    assert outcome.corrections == 1
    assert outcome.extracted is extracted
    assert outcome.text == "still prose"
    assert outcome.usage == Usage(5, 1, 6, 1)
    assert [call[0] for call in fallback.calls] == [PROSE, "still prose"]


def test_gives_up_after_max_corrections_with_the_errors():
    bad = "---\nthesis: t\n---\nbody"
    fallback = Fallback(*[ExtractError("the extract model's answer does not match the schema: x")] * 3)
    retry = Retry(bad, bad, GOOD)
    with pytest.raises(ExtractError) as info:
        extract_with_corrections(bad, SCHEMA, fallback=fallback, retry=retry)
    error = info.value
    assert len(retry.messages) == 2
    assert retry.answers == [GOOD]  # never asked a third time
    assert len(fallback.calls) == 3
    assert error.errors == ["at $: 'keyPoints' is a required property"]
    assert error.message == (
        "the frontmatter output does not match the role's schema: at $: 'keyPoints' is a required property after 2 corrections "
        "(LLM extract: the extract model's answer does not match the schema: x)"
    )


def test_without_retry_fails_at_once():
    with pytest.raises(ExtractError) as info:
        extract_with_corrections("", SCHEMA)
    assert info.value.message == "the agent's answer is empty"


@pytest.mark.parametrize("max_corrections", [0, 1, 3])
def test_max_corrections_is_honoured(max_corrections):
    retry = Retry(*["junk"] * 5)
    with pytest.raises(ExtractError) as info:
        extract_with_corrections("junk", SCHEMA, retry=retry, max_corrections=max_corrections)
    assert len(retry.messages) == max_corrections
    if max_corrections:
        suffix = "correction" if max_corrections == 1 else "corrections"
        assert f"after {max_corrections} {suffix}" in info.value.message
    else:
        assert "after" not in info.value.message


def test_a_non_extract_uwf_error_of_the_fallback_is_noted():
    fallback = Fallback(UwfError("no API key for provider 'fake': set FAKE_API_KEY in the root's .env"))
    with pytest.raises(ExtractError) as info:
        extract_with_corrections(PROSE, SCHEMA, fallback=fallback)
    assert "LLM extract: no API key for provider 'fake'" in info.value.message


def test_correction_message_lists_problems_and_the_format():
    error = ExtractError("bad", [f"problem {i}" for i in range(7)])
    message = correction_message(error, SCHEMA)
    assert message.startswith("Your previous answer could not be used: problem 0; problem 1; problem 2; problem 3; problem 4.\n")
    assert "problem 5" not in message
    assert "# Deliverable format" in message
    assert "- `keyPoints` (array of string, required)" in message
    assert correction_message(ExtractError("the agent's answer is empty"), SCHEMA).startswith(
        "Your previous answer could not be used: the agent's answer is empty."
    )


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("   \n", "the agent's answer is empty"),
        ("just prose", "no frontmatter block"),
        ("---\n- a\n- b\n---\nbody", "not a mapping of fields"),
        ("---\nthesis: [unclosed\n---\nbody", "not valid YAML"),
        ('{"thesis": 1, "keyPoints": []}', "the json output does not match the role's schema"),
    ],
)
def test_extract_fast_errors(text, fragment):
    with pytest.raises(ExtractError, match=None) as info:
        extract_fast(text, SCHEMA)
    assert fragment in info.value.message


# -- LlmExtractor against a mocked endpoint -------------------------------------------


def llm_config(**kw) -> Config:
    return Config(
        providers={"acme": ProviderConfig("acme", "https://acme.test/v1", "ACME_API_KEY")},
        models={"m": ModelConfig("m", "acme", "acme/m"), "x": ModelConfig("x", "acme", "acme/x")},
        **kw,
    )


def test_fallback_for_needs_a_model():
    assert fallback_for(Config()) is None
    assert fallback_for(llm_config()) is None
    assert fallback_for(llm_config(default_model="m")).alias == "m"
    assert fallback_for(llm_config(default_model="m", model_overrides={"extract": "x"})).alias == "x"


@respx.mock
def test_llm_extractor_request_and_code_fences():
    route = respx.post("https://acme.test/v1/chat/completions").mock(
        return_value=httpx.Response(
            200,
            json={
                "choices": [{"message": {"role": "assistant", "content": '```json\n{"output": {"thesis": "Cats rule", "keyPoints": ["aloof"]}, '
                                         '"evidence": {"thesis": "Cats rule", "keyPoints": "they are aloof"}}\n```'}}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
            },
        )
    )
    extractor = LlmExtractor(llm_config(default_model="m", model_overrides={"extract": "x"}), {"ACME_API_KEY": "k-123456"})
    extracted, usage = extractor(PROSE, SCHEMA)
    assert extracted == Extracted({"thesis": "Cats rule", "keyPoints": ["aloof"]}, PROSE, "llm", {"thesis": "Cats rule", "keyPoints": "they are aloof"})
    assert usage == Usage(9, 4, 13, 1)
    request = route.calls.last.request
    assert request.headers["Authorization"] == "Bearer k-123456"
    body = json.loads(request.content)
    assert body["model"] == "acme/x"
    assert body["response_format"] == {"type": "json_object"}
    assert json.dumps(SCHEMA, indent=2) in body["messages"][0]["content"]
    assert body["messages"][1] == {"role": "user", "content": PROSE}


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("not json at all", "did not answer with JSON"),
        ("[1, 2]", "did not answer with a JSON object"),
        ('{"output": {"thesis": "t"}, "evidence": {}}', "does not match the schema: at $: 'keyPoints' is a required property"),
        ('{"thesis": "t", "keyPoints": ["a"]}', 'did not give "output" and "evidence" objects'),
    ],
)
@respx.mock
def test_llm_extractor_refuses_bad_answers(content, fragment):
    respx.post("https://acme.test/v1/chat/completions").mock(
        return_value=httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": content}}]})
    )
    extractor = LlmExtractor(llm_config(default_model="m"), {"ACME_API_KEY": "k-123456"})
    with pytest.raises(ExtractError) as info:
        extractor(PROSE, SCHEMA)
    assert fragment in info.value.message


@pytest.mark.parametrize(
    "answer, said",
    [
        ("---\nthesis: t\nkeyPoints: [a]\nthesis: other\n---\nbody", "the frontmatter gives the field 'thesis' twice (lines 1 and 3)"),
        ("---\nthesis: t\nkeyPoints:\n  - {a: 1, a: 2}\n---\n", "the frontmatter gives the field 'a' twice"),
        ('{"thesis": "t", "keyPoints": [], "thesis": "u"}', "the JSON answer gives the field 'thesis' twice"),
    ],
)
def test_a_field_given_twice_is_a_correction(answer, said):
    """YAML and JSON keep the last of two values silently; which one the agent meant is not
    uwf's to guess (`workflow put` refuses the same in a workflow)."""
    retry = Retry(GOOD)
    outcome = extract_with_corrections(answer, SCHEMA, retry=retry)
    assert outcome.corrections == 1 and outcome.text == GOOD
    assert said in retry.messages[0]


def test_a_field_given_twice_is_not_settled_by_the_extract_model():
    fallback, retry = Fallback(), Retry(GOOD)
    outcome = extract_with_corrections("---\nthesis: a\nkeyPoints: [k]\nthesis: b\n---\n", SCHEMA, fallback=fallback, retry=retry)
    assert fallback.calls == [] and outcome.corrections == 1 and outcome.text == GOOD
