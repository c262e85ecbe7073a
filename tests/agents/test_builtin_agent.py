"""`uwf-builtin` end to end: the real `uwf` CLI, the real agent process, a fake
OpenAI-compatible server on 127.0.0.1 (tests/support/fake_openai.py). No network."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
from pathlib import Path

import pytest
from node_file import hashes as stored_hashes
from conftest import EXAMPLES
from fake_openai import FakeOpenAI, reply

KEY = "sk-test-SECRET-123"
KEY_ENV = "FAKE_API_KEY"
GOOD = "---\nthesis: Cats rule the internet\nkeyPoints:\n  - they are cute\n  - they are aloof\n---\n## Analysis\n\nCats."
NO_POINTS = "---\nthesis: Cats rule the internet\n---\n## Analysis\n\nI forgot the key points."


@pytest.fixture
def srv():
    with FakeOpenAI() as server:
        yield server


def setup_root(uwf, base_url: str, *agent_args: str) -> None:
    agent = " ".join(["uwf-builtin", *agent_args])
    result = uwf(
        "setup", "--provider", "fake", "--base-url", base_url, "--api-key", KEY, "--model", "fake-model", "--summarizer", "off",
        "--agent", f"builtin={agent}", "--default-agent", "builtin",
    )  # fmt: skip
    assert result.code == 0, result
    assert KEY not in result.out + result.err
    put = uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml"))
    assert put.code == 0, put


@pytest.fixture
def llm_root(uwf, srv):
    setup_root(uwf, srv.base_url)
    return srv


def start(uwf, workspace: Path | None = None, prompt: str = "Why do cats rule the internet?") -> tuple[str, str]:
    args = ["thread", "start", "analyze-topic", "-p", prompt]
    if workspace is not None:
        args += ["-w", str(workspace)]
    result = uwf(*args)
    assert result.code == 0, result
    data = result.json()
    return data["thread"], data["head"]


def error_lines(result) -> list[str]:
    return [line for line in result.err.splitlines() if line.startswith("uwf: error:")]


def assert_failed_cleanly(uwf, root_dir: Path, result, thread: str, head: str, *fragments: str) -> str:
    """Exit 1, exactly one `uwf: error:` line holding the fragments, no traceback, head unchanged."""
    assert result.code == 1, result
    assert result.out == ""
    lines = error_lines(result)
    assert len(lines) == 1, result.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.err
    assert KEY not in result.err
    show = uwf("thread", "show", thread)
    assert show.code == 0, show
    assert show.json()["head"] == head
    assert show.json()["done"] is False
    runs = [json.loads(line) for line in (root_dir / "runs.jsonl").read_text().splitlines()]
    assert runs[-1]["status"] == "failed"
    assert runs[-1]["head"] == head and runs[-1]["step"] is None
    return lines[0]


def details(uwf, step: str) -> dict:
    result = uwf("thread", "step-details", step)
    assert result.code == 0, result
    return result.json()


def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


# -- the happy path, with tools, a 429 and a sandbox escape attempt -------------------


@pytest.fixture
def workspace(tmp_path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text(f"Cats are popular online.\nDeploy token: {KEY}\n")
    (ws / "draft.md").write_text("# Draft\n\nTODO: write the analysis\n")
    return ws


def test_builtin_runs_a_real_thread(uwf, llm_root, root_dir, workspace):
    srv = llm_root
    thread, start_head = start(uwf, workspace)
    srv.add(
        reply(None, [("read_file", {"path": "notes.txt"})], prompt_tokens=100, completion_tokens=10),
        {"status": 429, "body": {"error": {"message": "rate limited"}}, "headers": {"Retry-After": "0"}},
        reply(
            "Editing the draft.",
            [
                ("edit_file", {"path": "draft.md", "search": "TODO: write the analysis", "replace": "Cats rule the internet."}),
                ("read_file", {"path": "../etc/passwd"}),
            ],
            prompt_tokens=200,
            completion_tokens=20,
        ),
        reply(GOOD, prompt_tokens=300, completion_tokens=30),
    )
    result = uwf("thread", "step", thread)
    assert result.code == 0, result
    data = result.json()
    assert data["done"] is True
    assert data["thread"] == thread
    assert data["role"] == "analyst"
    assert data["agent"] == "builtin"
    head = data["head"]
    assert head != start_head

    # the workspace was changed by the edit_file tool
    assert (workspace / "draft.md").read_text() == "# Draft\n\nCats rule the internet.\n"
    assert (workspace / "notes.txt").exists()

    # what the server saw: 4 requests (one answered 429 and retried as is), each with the key
    assert len(srv.requests) == 4
    for request in srv.requests:
        assert request["path"] == "/v1/chat/completions"
        assert request["headers"]["Authorization"] == f"Bearer {KEY}"
        body = request["body"]
        assert body["model"] == "fake-model"
        assert body["tool_choice"] == "auto"
        assert [t["function"]["name"] for t in body["tools"]] == ["read_file", "write_file", "edit_file", "list_dir", "grep"]
        assert "response_format" not in body
    assert srv.requests[1]["body"] == srv.requests[2]["body"]
    first = srv.requests[0]["body"]["messages"]
    assert [m["role"] for m in first] == ["system", "user"]
    assert "Why do cats rule the internet?" in first[1]["content"]
    assert "keyPoints" in first[1]["content"]
    last = srv.requests[3]["body"]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant", "tool", "tool"]
    assert last[3]["tool_call_id"] == "call_0"
    assert last[3]["content"].startswith("Cats are popular online.")
    assert last[5]["content"] == "replaced 1 occurrence(s) in draft.md"
    assert last[6]["content"].startswith("error: ") and "leaves the workspace" in last[6]["content"]

    # the detail node records every turn, tool call, tool result and token count
    step = details(uwf, head)
    assert step["output"] == {"thesis": "Cats rule the internet", "keyPoints": ["they are cute", "they are aloof"]}
    assert step["content"] == GOOD
    assert "Why do cats rule the internet?" in step["prompt"]
    detail = step["detail"]
    assert detail["type"] == "detail"
    payload = detail["payload"]
    assert payload["protocol"] == "step"
    assert payload["extract"] == "frontmatter"
    assert payload["corrections"] == 0
    assert "extractUsage" not in payload
    assert payload["model"] == "fake-model"
    assert payload["modelName"] == "fake-model"
    assert payload["provider"] == "fake"
    assert payload["tools"] == ["read_file", "write_file", "edit_file", "list_dir", "grep"]
    turns = payload["turns"]
    assert [t["role"] for t in turns] == ["assistant", "tool", "assistant", "tool", "tool", "assistant"]
    assert turns[0]["toolCalls"] == [{"id": "call_0", "name": "read_file", "arguments": json.dumps({"path": "notes.txt"})}]
    assert turns[0]["usage"] == {"promptTokens": 100, "completionTokens": 10, "totalTokens": 110, "requests": 1}
    assert turns[0]["finishReason"] == "tool_calls"
    assert turns[1]["name"] == "read_file" and turns[1]["ok"] is True
    assert turns[1]["result"] == "Cats are popular online.\nDeploy token: [redacted:FAKE_API_KEY]\n"
    assert turns[2]["content"] == "Editing the draft."
    assert [c["name"] for c in turns[2]["toolCalls"]] == ["edit_file", "read_file"]
    assert turns[2]["usage"] == {"promptTokens": 200, "completionTokens": 20, "totalTokens": 220, "requests": 1}
    assert turns[3] == {"role": "tool", "name": "edit_file", "ok": True, "result": "replaced 1 occurrence(s) in draft.md"}
    assert turns[4]["name"] == "read_file" and turns[4]["ok"] is False
    assert turns[4]["result"] == "error: '../etc/passwd' leaves the workspace ('..' is not allowed)"
    assert turns[5]["content"] == GOOD
    assert turns[5]["toolCalls"] == []
    assert turns[5]["usage"] == {"promptTokens": 300, "completionTokens": 30, "totalTokens": 330, "requests": 1}
    assert payload["usage"] == {"promptTokens": 600, "completionTokens": 60, "totalTokens": 660, "requests": 3}

    # usage totals on the thread, and in its markdown
    show = uwf("thread", "show", thread)
    assert show.code == 0, show
    shown = show.json()
    assert shown["done"] is True
    assert shown["head"] == head
    assert shown["usage"] == {"promptTokens": 600, "completionTokens": 60, "totalTokens": 660, "requests": 3}
    read = uwf("thread", "read", thread)
    assert read.code == 0, read
    assert "660 tokens (600 prompt, 60 completion)" in read.out

    # the key is in .env (mode 0600) and nowhere else in the root
    env_file = root_dir / ".env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert f"{KEY_ENV}={KEY}" in env_file.read_text()
    grep = subprocess.run(["grep", "-r", "-l", "-F", KEY, str(root_dir)], capture_output=True, text=True)
    assert grep.stdout.splitlines() == [str(env_file)]
    for name in ("config.yaml", "runs.jsonl", "history.jsonl", "threads.yaml", "registry.yaml"):
        path = root_dir / name
        assert path.exists(), name
        assert KEY not in path.read_text(), name
    nodes = stored_hashes(root_dir)
    assert head in nodes and payload is not None
    for node in nodes:
        got = uwf("cas", "get", node)
        assert got.code == 0, got
        assert KEY not in got.out, node
        assert "sk-test" not in got.out, node


def test_a_key_echoed_in_the_final_answer_is_not_stored(uwf, llm_root, root_dir, workspace):
    srv = llm_root
    thread, _ = start(uwf, workspace)
    echo = GOOD + f"\n\nThe notes mention the token {KEY}."
    srv.add(reply(None, [("read_file", {"path": "notes.txt"})]), reply(echo))
    result = uwf("thread", "step", thread)
    assert result.code == 0, result
    grep = subprocess.run(["grep", "-r", "-l", "-F", KEY, str(root_dir)], capture_output=True, text=True)
    assert grep.stdout.splitlines() == [str(root_dir / ".env")]


# -- failures: one clear line, exit 1, the head does not move -------------------------


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ({"raw": "this is not json"}, "answered with a body that is not JSON"),
        ({"status": 200, "body": {"id": "x", "object": "chat.completion"}}, "malformed body (no choices[0].message)"),
    ],
)
def test_malformed_body_fails_the_step(uwf, llm_root, root_dir, entry, fragment):
    srv = llm_root
    thread, head = start(uwf)
    srv.add(entry)
    result = uwf("thread", "step", thread)
    line = assert_failed_cleanly(uwf, root_dir, result, thread, head, fragment, "agent 'builtin' exited with code 1")
    assert "fake-model" in line
    assert len(srv.requests) == 1


def test_401_fails_with_the_env_var_not_the_key(uwf, llm_root, root_dir):
    srv = llm_root
    thread, head = start(uwf)
    srv.add({"status": 401, "body": {"error": {"message": "invalid api key"}}})
    result = uwf("thread", "step", thread)
    assert_failed_cleanly(uwf, root_dir, result, thread, head, "refused the request (401", KEY_ENV)
    assert len(srv.requests) == 1  # an auth error is not retried
    assert KEY not in (root_dir / "runs.jsonl").read_text()


def test_401_echoing_the_key_does_not_leak_it(uwf, llm_root, root_dir):
    srv = llm_root
    thread, head = start(uwf)
    srv.add({"status": 401, "body": {"error": {"message": f"Incorrect API key provided: {KEY}"}}})
    result = uwf("thread", "step", thread)
    assert result.code == 1
    assert KEY not in result.err
    grep = subprocess.run(["grep", "-r", "-l", "-F", KEY, str(root_dir)], capture_output=True, text=True)
    assert grep.stdout.splitlines() == [str(root_dir / ".env")]


def test_missing_api_key_names_the_env_var(uwf, llm_root, root_dir):
    srv = llm_root
    thread, head = start(uwf)
    (root_dir / ".env").unlink()
    result = uwf("thread", "step", thread, env={KEY_ENV: ""})
    line = assert_failed_cleanly(uwf, root_dir, result, thread, head, "no API key for provider 'fake'", KEY_ENV)
    assert "uwf setup" in line
    assert srv.requests == []


def test_unknown_model_alias(uwf, llm_root, root_dir):
    srv = llm_root
    thread, head = start(uwf)
    result = uwf("thread", "step", thread, "--agent", "uwf-builtin --model nope")
    assert_failed_cleanly(uwf, root_dir, result, thread, head, "unknown model alias 'nope'", "fake-model")
    assert srv.requests == []


def test_unreachable_endpoint(uwf, root_dir):
    base = f"http://127.0.0.1:{closed_port()}/v1"
    setup_root(uwf, base)
    thread, head = start(uwf)
    result = uwf("thread", "step", thread, timeout=120)
    assert_failed_cleanly(uwf, root_dir, result, thread, head, f"cannot reach {base}/chat/completions", "connection refused")


def test_model_override_for_the_role_is_used(uwf, llm_root, root_dir):
    """modelOverrides '<workflow>.<role>' picks another alias (same fake server, another model name)."""
    srv = llm_root
    setup = uwf("setup", "--provider", "fake", "--model", "other-model", "--model-alias", "other")
    assert setup.code == 0, setup
    config = (root_dir / "config.yaml").read_text()
    config = config.replace('defaultModel: "other"', 'defaultModel: "fake-model"') + 'modelOverrides:\n  "analyze-topic.analyst": "other"\n'
    (root_dir / "config.yaml").write_text(config)
    thread, _ = start(uwf)
    srv.add(reply(GOOD))
    result = uwf("thread", "step", thread)
    assert result.code == 0, result
    assert [r["body"]["model"] for r in srv.requests] == ["other-model"]
    assert details(uwf, result.json()["head"])["detail"]["payload"]["model"] == "other"


# -- the turn limit -----------------------------------------------------------------


def test_turn_limit_asks_for_a_final_answer(uwf, llm_root, root_dir):
    srv = llm_root
    thread, _ = start(uwf)
    srv.add(
        reply(None, [("list_dir", {})], prompt_tokens=11, completion_tokens=1),
        reply(GOOD, prompt_tokens=22, completion_tokens=2),
    )
    result = uwf("thread", "step", thread, "--agent", "uwf-builtin --max-turns 1")
    assert result.code == 0, result
    assert result.json()["done"] is True
    assert len(srv.requests) == 2
    assert "tools" in srv.requests[0]["body"]
    final = srv.requests[1]["body"]
    assert "tools" not in final and "tool_choice" not in final
    assert final["messages"][-1]["role"] == "user"
    assert "You have used all your tool turns" in final["messages"][-1]["content"]
    payload = details(uwf, result.json()["head"])["detail"]["payload"]
    assert [t["role"] for t in payload["turns"]] == ["assistant", "tool", "user", "assistant"]
    assert payload["usage"] == {"promptTokens": 33, "completionTokens": 3, "totalTokens": 36, "requests": 2}


def test_turn_limit_without_a_final_answer_fails(uwf, llm_root, root_dir):
    srv = llm_root
    thread, head = start(uwf)
    srv.add(reply(None, [("list_dir", {})]), reply(None, [("list_dir", {})]))
    result = uwf("thread", "step", thread, "--agent", "uwf-builtin --max-turns 1")
    assert_failed_cleanly(uwf, root_dir, result, thread, head, "no final answer after 1 tool turns")


# -- corrections (and the LLM extract fallback, which uses the same defaultModel) ------


def test_llm_extract_fallback_lands_a_prose_answer(uwf, llm_root, root_dir):
    srv = llm_root
    thread, _ = start(uwf)
    srv.add(
        reply("Cats rule the internet because they are cute.", prompt_tokens=50, completion_tokens=5),
        reply(json.dumps({"output": {"thesis": "Cats rule", "keyPoints": ["cute"]},
                          "evidence": {"thesis": "Cats rule the internet", "keyPoints": ["they are cute"]}}), prompt_tokens=40, completion_tokens=4),
    )
    result = uwf("thread", "step", thread)
    assert result.code == 0, result
    extract_request = srv.requests[1]["body"]
    assert extract_request["response_format"] == {"type": "json_object"}
    assert "tools" not in extract_request
    assert extract_request["messages"][1] == {"role": "user", "content": "Cats rule the internet because they are cute."}
    step = details(uwf, result.json()["head"])
    assert step["output"] == {"thesis": "Cats rule", "keyPoints": ["cute"]}
    payload = step["detail"]["payload"]
    assert payload["extract"] == "llm"
    assert payload["corrections"] == 0
    assert payload["extractUsage"] == {"promptTokens": 40, "completionTokens": 4, "totalTokens": 44, "requests": 1}
    assert payload["usage"] == {"promptTokens": 50, "completionTokens": 5, "totalTokens": 55, "requests": 1}
    assert uwf("thread", "show", thread).json()["usage"] == {"promptTokens": 90, "completionTokens": 9, "totalTokens": 99, "requests": 2}


def test_one_correction_then_success(uwf, llm_root, root_dir):
    srv = llm_root
    thread, _ = start(uwf)
    srv.add(
        reply(NO_POINTS, prompt_tokens=10, completion_tokens=1),
        reply("{not json", prompt_tokens=7, completion_tokens=1),  # the LLM extract fallback fails too
        reply(GOOD, prompt_tokens=20, completion_tokens=2),
    )
    result = uwf("thread", "step", thread)
    assert result.code == 0, result
    bodies = [r["body"] for r in srv.requests]
    assert len(bodies) == 3
    # 1: the agent's turn; 2: the extract fallback (JSON mode, schema in the system prompt); 3: the correction
    assert "tools" in bodies[0]
    assert bodies[1]["response_format"] == {"type": "json_object"}
    assert bodies[1]["messages"][0]["role"] == "system"
    assert '"keyPoints"' in bodies[1]["messages"][0]["content"]
    assert bodies[1]["messages"][1]["content"] == NO_POINTS
    assert "tools" in bodies[2]
    correction = bodies[2]["messages"][-1]
    assert correction["role"] == "user"
    assert correction["content"].startswith("Your previous answer could not be used:")
    assert "'keyPoints' is a required property" in correction["content"]
    assert [m["role"] for m in bodies[2]["messages"]] == ["system", "user", "assistant", "user"]
    assert bodies[2]["messages"][2]["content"] == NO_POINTS
    step = details(uwf, result.json()["head"])
    assert step["output"]["keyPoints"] == ["they are cute", "they are aloof"]
    assert step["content"] == GOOD
    payload = step["detail"]["payload"]
    assert payload["corrections"] == 1
    assert payload["extract"] == "frontmatter"
    assert [t["role"] for t in payload["turns"]] == ["assistant", "user", "assistant"]
    assert "'keyPoints' is a required property" in payload["turns"][1]["content"]
    assert payload["usage"] == {"promptTokens": 30, "completionTokens": 3, "totalTokens": 33, "requests": 2}


def test_three_failed_answers_fail_the_step(uwf, llm_root, root_dir):
    srv = llm_root
    thread, head = start(uwf)
    for _ in range(3):
        srv.add(reply(NO_POINTS), reply(json.dumps({"output": {"keyPoints": ["only points"]}, "evidence": {}})))
    before = stored_hashes(root_dir)
    result = uwf("thread", "step", thread)
    line = assert_failed_cleanly(uwf, root_dir, result, thread, head, "'keyPoints' is a required property", "after 2 corrections")
    assert "LLM extract" in line and "'thesis' is a required property" in line
    assert len(srv.requests) == 6
    kinds = ["extract" if "response_format" in r["body"] else "agent" for r in srv.requests]
    assert kinds == ["agent", "extract"] * 3
    assert stored_hashes(root_dir) == before
