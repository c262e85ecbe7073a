"""uwf_core.llm.client: the OpenAI-compatible client (respx mocks httpx), model resolution and usage."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
import respx

from uwf_core.config.model import Config, ModelConfig, ProviderConfig
from uwf_core.llm import client as llm
from uwf_core.llm.client import ChatClient, LlmError, ResolvedModel, Usage, model_alias_for, resolve_model

KEY = "sk-unit-SECRET-987654"
BASE = "https://llm.example.test/v1"
URL = BASE + "/chat/completions"


def model(api_key: str | None = KEY, base_url: str = BASE) -> ResolvedModel:
    return ResolvedModel("fast", "acme", base_url, "acme/fast-1", "ACME_API_KEY" if api_key else None, api_key)


def completion(content="hello", tool_calls=None, usage=None, finish_reason="stop") -> dict:
    message = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body = {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}]}
    if usage is not None:
        body["usage"] = usage
    return body


@pytest.fixture
def sleeps(monkeypatch):
    """Record the client's backoff waits instead of sleeping."""
    waits: list[float] = []
    monkeypatch.setattr(llm.time, "sleep", waits.append)
    return waits


def one_line(error: LlmError) -> str:
    text = str(error)
    assert "\n" not in text
    assert KEY not in text
    return text


# -- request shape -----------------------------------------------------------------


@respx.mock
def test_request_body_and_headers_with_tools():
    route = respx.post(URL).mock(return_value=httpx.Response(200, json=completion()))
    tools = [{"type": "function", "function": {"name": "read_file", "description": "d", "parameters": {"type": "object"}}}]
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]
    ChatClient(model()).complete(messages, tools=tools)
    assert route.call_count == 1
    request = route.calls.last.request
    assert str(request.url) == URL
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.headers["Content-Type"] == "application/json"
    body = json.loads(request.content)
    assert body == {"model": "acme/fast-1", "messages": messages, "tools": tools, "tool_choice": "auto"}


@respx.mock
def test_request_json_mode_without_tools():
    route = respx.post(URL).mock(return_value=httpx.Response(200, json=completion("{}")))
    ChatClient(model()).complete([{"role": "user", "content": "x"}], json_mode=True)
    body = json.loads(route.calls.last.request.content)
    assert body == {"model": "acme/fast-1", "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}}


@respx.mock
def test_plain_request_has_no_tools_or_response_format():
    route = respx.post(URL).mock(return_value=httpx.Response(200, json=completion()))
    ChatClient(model()).complete([{"role": "user", "content": "x"}], tools=[])
    body = json.loads(route.calls.last.request.content)
    assert set(body) == {"model", "messages"}


@respx.mock
def test_no_authorization_header_without_a_key():
    route = respx.post("http://local.test/v1/chat/completions").mock(return_value=httpx.Response(200, json=completion()))
    ChatClient(model(api_key=None, base_url="http://local.test/v1/")).complete([{"role": "user", "content": "x"}])
    assert "authorization" not in route.calls.last.request.headers


# -- responses ---------------------------------------------------------------------


@respx.mock
def test_usage_content_and_tool_calls_are_parsed():
    calls = [{"id": "c1", "type": "function", "function": {"name": "grep", "arguments": '{"pattern": "x"}'}}]
    respx.post(URL).mock(
        return_value=httpx.Response(
            200,
            json=completion(None, calls, {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}, "tool_calls"),
        )
    )
    response = ChatClient(model()).complete([{"role": "user", "content": "x"}])
    assert response.usage == Usage(12, 7, 19, 1)
    assert response.content == ""
    assert response.tool_calls == calls
    assert response.finish_reason == "tool_calls"


@respx.mock
def test_usage_total_is_computed_when_missing_and_absent_usage_counts_the_request():
    respx.post(URL).mock(
        side_effect=[
            httpx.Response(200, json=completion("a", usage={"prompt_tokens": 4, "completion_tokens": 3})),
            httpx.Response(200, json=completion("b")),
        ]
    )
    client = ChatClient(model())
    first = client.complete([{"role": "user", "content": "x"}])
    second = client.complete([{"role": "user", "content": "x"}])
    assert first.usage == Usage(4, 3, 7, 1)
    assert first.content == "a" and first.tool_calls == []
    assert second.usage == Usage(0, 0, 0, 1)


# -- retries -------------------------------------------------------------------------


@respx.mock
def test_429_then_success_is_retried_with_backoff(sleeps):
    route = respx.post(URL).mock(
        side_effect=[
            httpx.Response(429, json={"error": {"message": "slow down"}}),
            httpx.Response(429, json={"error": {"message": "slow down"}}),
            httpx.Response(200, json=completion("done", usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3})),
        ]
    )
    response = ChatClient(model(), backoff=0.5).complete([{"role": "user", "content": "x"}])
    assert response.content == "done"
    assert route.call_count == 3
    assert sleeps == [0.5, 1.0]


@respx.mock
def test_429_retry_after_header_is_honoured(sleeps):
    route = respx.post(URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "3"}, json={"error": "busy"}),
            httpx.Response(429, headers={"Retry-After": "0"}, json={"error": "busy"}),
            httpx.Response(200, json=completion("ok")),
        ]
    )
    assert ChatClient(model(), backoff=5).complete([{"role": "user", "content": "x"}]).content == "ok"
    assert route.call_count == 3
    assert sleeps == [3.0, 0.0]


@respx.mock
def test_backoff_zero_does_not_wait(sleeps):
    respx.post(URL).mock(side_effect=[httpx.Response(503, text="unavailable"), httpx.Response(200, json=completion("ok"))])
    assert ChatClient(model(), backoff=0).complete([{"role": "user", "content": "x"}]).content == "ok"
    assert sleeps == [0]


@respx.mock
def test_500_four_times_fails_naming_the_attempts(sleeps):
    route = respx.post(URL).mock(return_value=httpx.Response(500, json={"error": {"message": "boom inside"}}))
    with pytest.raises(LlmError) as info:
        ChatClient(model(), backoff=0).complete([{"role": "user", "content": "x"}])
    text = one_line(info.value)
    assert route.call_count == 4
    assert "after 4 attempts" in text
    assert "500" in text and "boom inside" in text
    assert len(sleeps) == 3


@respx.mock
def test_retries_zero_means_one_attempt(sleeps):
    route = respx.post(URL).mock(return_value=httpx.Response(502, text="bad gateway"))
    with pytest.raises(LlmError, match=r"after 1 attempts?\)"):
        ChatClient(model(), retries=0).complete([{"role": "user", "content": "x"}])
    assert route.call_count == 1
    assert sleeps == []


# -- errors ------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
@respx.mock
def test_auth_errors_name_the_env_var_not_the_key(status, sleeps):
    route = respx.post(URL).mock(return_value=httpx.Response(status, json={"error": {"message": f"Incorrect API key provided: {KEY[:6]}..."}}))
    with pytest.raises(LlmError) as info:
        ChatClient(model()).complete([{"role": "user", "content": "x"}])
    text = one_line(info.value)
    assert route.call_count == 1  # not retried
    assert sleeps == []
    assert "ACME_API_KEY" in text
    assert str(status) in text
    assert "acme/fast-1" in text


@respx.mock
def test_auth_error_never_repeats_a_key_the_provider_echoes():
    respx.post(URL).mock(return_value=httpx.Response(401, json={"error": {"message": f"Incorrect API key provided: {KEY}"}}))
    with pytest.raises(LlmError) as info:
        ChatClient(model()).complete([{"role": "user", "content": "x"}])
    assert "ACME_API_KEY" in str(info.value)
    assert KEY not in str(info.value)


@respx.mock
def test_404_mentions_base_url_and_model():
    route = respx.post(URL).mock(return_value=httpx.Response(404, json={"error": {"message": "model not found"}}))
    with pytest.raises(LlmError) as info:
        ChatClient(model()).complete([{"role": "user", "content": "x"}])
    text = one_line(info.value)
    assert route.call_count == 1
    assert "404" in text
    assert "base URL" in text
    assert "acme/fast-1" in text and BASE in text


@respx.mock
def test_400_is_not_retried(sleeps):
    route = respx.post(URL).mock(return_value=httpx.Response(400, json={"error": {"message": "bad request: messages"}}))
    with pytest.raises(LlmError, match="400 bad request: messages"):
        ChatClient(model()).complete([{"role": "user", "content": "x"}])
    assert route.call_count == 1
    assert sleeps == []


@pytest.mark.parametrize(
    "body",
    [{"id": "x", "object": "chat.completion"}, {"choices": []}, {"choices": [{"index": 0}]}, {"choices": [{"message": "text"}]}, [1, 2]],
)
@respx.mock
def test_malformed_body_is_a_clear_error(body):
    respx.post(URL).mock(return_value=httpx.Response(200, json=body))
    with pytest.raises(LlmError) as info:
        ChatClient(model()).complete([{"role": "user", "content": "x"}])
    text = one_line(info.value)
    assert "malformed body" in text
    assert "choices" in text


@respx.mock
def test_body_that_is_not_json():
    respx.post(URL).mock(return_value=httpx.Response(200, text="<html>gateway</html>"))
    with pytest.raises(LlmError) as info:
        ChatClient(model()).complete([{"role": "user", "content": "x"}])
    text = one_line(info.value)
    assert "not JSON" in text
    assert "<html>gateway" in text


@respx.mock
def test_timeout_is_reported_after_retries(sleeps):
    route = respx.post(URL).mock(side_effect=httpx.ReadTimeout("read timed out"))
    with pytest.raises(LlmError) as info:
        ChatClient(model(), timeout=7, retries=1, backoff=0).complete([{"role": "user", "content": "x"}])
    text = one_line(info.value)
    assert route.call_count == 2
    assert "did not answer within 7s" in text
    assert "after 2 attempts" in text


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_connection_refused_says_cannot_reach(sleeps):
    base = f"http://127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(LlmError) as info:
        ChatClient(model(base_url=base), retries=1, backoff=0, timeout=5).complete([{"role": "user", "content": "x"}])
    text = one_line(info.value)
    assert f"cannot reach {base}/chat/completions" in text
    assert "refused" in text
    assert "attempt" not in text  # nothing listens there: failing at once beats retrying
    assert sleeps == []


# -- model resolution --------------------------------------------------------------


def config(**kw) -> Config:
    providers = {
        "acme": ProviderConfig("acme", "https://acme.test/v1", "ACME_API_KEY"),
        "local": ProviderConfig("local", "http://127.0.0.1:1234/v1", None),
    }
    models = {
        "fast": ModelConfig("fast", "acme", "acme/fast-1"),
        "smart": ModelConfig("smart", "acme", "acme/smart-2"),
        "tiny": ModelConfig("tiny", "local", "tiny-7b"),
        "ghost": ModelConfig("ghost", "nowhere", "g"),
    }
    return Config(providers=providers, models=models, **kw)


def test_resolve_model_with_key_from_env():
    resolved = resolve_model(config(), "smart", {"ACME_API_KEY": KEY})
    assert (resolved.alias, resolved.provider, resolved.base_url, resolved.name) == ("smart", "acme", "https://acme.test/v1", "acme/smart-2")
    assert resolved.api_key_env == "ACME_API_KEY"
    assert resolved.api_key == KEY
    assert KEY not in repr(resolved)
    assert KEY not in resolved.describe()


def test_resolve_model_without_api_key_env_needs_no_key():
    resolved = resolve_model(config(), "tiny", {})
    assert resolved.api_key is None and resolved.api_key_env is None


@pytest.mark.parametrize("env", [{}, {"ACME_API_KEY": ""}])
def test_resolve_model_missing_key_names_the_env_var(env):
    with pytest.raises(LlmError) as info:
        resolve_model(config(), "fast", env)
    text = str(info.value)
    assert "ACME_API_KEY" in text
    assert "acme" in text
    assert ".env" in text


def test_resolve_model_unknown_alias_lists_known_ones():
    with pytest.raises(LlmError) as info:
        resolve_model(config(), "nope", {"ACME_API_KEY": KEY})
    text = str(info.value)
    assert "'nope'" in text
    assert "fast, ghost, smart, tiny" in text


def test_resolve_model_unknown_provider():
    with pytest.raises(LlmError, match="provider 'nowhere'.*acme, local"):
        resolve_model(config(), "ghost", {})


def test_no_default_model_points_at_uwf_setup():
    cfg = config()
    alias = model_alias_for(cfg, "extract")
    assert alias is None
    with pytest.raises(LlmError) as info:
        resolve_model(cfg, alias, {}, purpose="extract")
    text = str(info.value)
    assert "uwf setup" in text
    assert "defaultModel" in text
    assert "extract" in text


def test_model_alias_precedence():
    overrides = {"analyze-topic.analyst": "a", "analyst": "b", "builtin": "c"}
    cfg = config(default_model="d", model_overrides=overrides)
    assert model_alias_for(cfg, "builtin", "analyze-topic", "analyst") == "a"
    assert model_alias_for(cfg, "builtin", "other-flow", "analyst") == "b"
    assert model_alias_for(cfg, "builtin", "other-flow", "writer") == "c"
    assert model_alias_for(cfg, "extract", "other-flow", "writer") == "d"
    assert model_alias_for(cfg, None, None, None) == "d"
    # the role key alone needs no workflow; '<workflow>.<role>' needs both
    assert model_alias_for(cfg, None, None, "analyst") == "b"
    assert model_alias_for(config(model_overrides=overrides), "extract", "x", "y") is None
    drop_role = config(default_model="d", model_overrides={"analyze-topic.analyst": "a", "builtin": "c"})
    assert model_alias_for(drop_role, "builtin", "analyze-topic", "analyst") == "a"
    assert model_alias_for(drop_role, "builtin", "analyze-topic", "critic") == "c"


# -- usage -------------------------------------------------------------------------


def test_usage_arithmetic_and_json():
    total = Usage(1, 2, 3, 1) + Usage(10, 20, 30, 1)
    assert total == Usage(11, 22, 33, 2)
    data = total.to_json()
    assert data == {"promptTokens": 11, "completionTokens": 22, "totalTokens": 33, "requests": 2}
    assert Usage.from_json(data) == total
    assert Usage.from_json(None) == Usage()
    assert Usage.from_json({"promptTokens": "7", "requests": 2}) == Usage(0, 0, 0, 2)
