"""An OpenAI-compatible `/chat/completions` client (httpx, imported only here).

Used by the extract fallback and by `uwf-builtin`. Retries with backoff on
429 and 5xx; a clear one-line error on 401/403 (the key), 404 (the model or
URL), an unreachable endpoint and a malformed body. The API key never
appears in an error message, a log line or a CAS node.
"""

from __future__ import annotations

import json
import os
import time

from ..config.model import Config
from ..encoding.records import field, record
from ..errors import UwfError
from ..telemetry.spans import LLM, content_on, span
from .usage import Usage

DEFAULT_TIMEOUT_SECONDS = 300.0
RETRIES = 3
BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 20.0


class LlmError(UwfError):
    """The model endpoint could not be used."""


@record(frozen=True)
class ResolvedModel:
    alias: str
    provider: str
    base_url: str
    name: str
    api_key_env: str | None
    api_key: str | None = field(default=None, repr=False)

    def describe(self) -> str:
        return f"model '{self.alias}' ({self.name} at {self.base_url})"


def model_alias_for(config: Config, scenario: str | None = None, workflow: str | None = None, role: str | None = None) -> str | None:
    """Which model alias a use should take: the most specific modelOverrides key, else defaultModel.

    Keys tried: '<workflow>.<role>', '<role>', then the scenario (e.g. 'extract', 'builtin').
    """
    overrides = config.model_overrides
    for key in (f"{workflow}.{role}" if workflow and role else None, role, scenario):
        if key and overrides.get(key):
            return overrides[key]
    return config.default_model


def resolve_model(config: Config, alias: str | None, env: dict[str, str] | None = None, *, purpose: str = "this") -> ResolvedModel:
    if not alias:
        raise LlmError(
            f"no model is configured for {purpose}: set defaultModel in config.yaml (e.g. `uwf setup --provider NAME "
            f"--base-url URL --api-key KEY --model NAME`)"
        )
    model = config.models.get(alias)
    if model is None:
        known = ", ".join(sorted(config.models)) or "none"
        raise LlmError(f"unknown model alias '{alias}': config.yaml models has {known}")
    provider = config.providers.get(model.provider)
    if provider is None:
        known = ", ".join(sorted(config.providers)) or "none"
        raise LlmError(f"model '{alias}' names provider '{model.provider}', which is not in config.yaml providers ({known})")
    env = os.environ if env is None else env
    key = env.get(provider.api_key_env) if provider.api_key_env else None
    if provider.api_key_env and not key:
        raise LlmError(
            f"no API key for provider '{provider.name}': set {provider.api_key_env} in the root's .env "
            f"(`uwf setup --provider {provider.name} --api-key ...`)"
        )
    return ResolvedModel(alias, provider.name, provider.base_url, model.name, provider.api_key_env, key)


@record(frozen=True)
class ChatResponse:
    message: dict  # the assistant message: role, content, maybe tool_calls
    usage: Usage
    finish_reason: str | None

    @property
    def content(self) -> str:
        content = self.message.get("content")
        return content if isinstance(content, str) else ""

    @property
    def tool_calls(self) -> list[dict]:
        calls = self.message.get("tool_calls")
        return calls if isinstance(calls, list) else []


class ChatClient:
    def __init__(
        self,
        model: ResolvedModel,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        retries: int = RETRIES,
        backoff: float = BACKOFF_SECONDS,
        time_left=None,
        purpose: str = "chat",
    ) -> None:
        self.model = model
        self.purpose = purpose  # who asks (extractor, supervisor, summarizer, builtin): its span says
        self.timeout = timeout
        self.time_left = time_left  # a caller's budget: () -> seconds left (raising when none), or None
        self.retries = retries
        self.backoff = backoff

    @property
    def url(self) -> str:
        return self.model.base_url.rstrip("/") + "/chat/completions"

    def complete(self, messages: list[dict], *, tools: list[dict] | None = None, json_mode: bool = False) -> ChatResponse:
        body: dict = {"model": self.model.name, "messages": messages}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        with span(f"chat {self.model.name}", LLM, self._span_attributes(tools)) as call:
            if content_on():
                call.put({"input.value": json.dumps(messages, ensure_ascii=False), "input.mime_type": "application/json"})
            response = _parse_response(self._post(body), self.model)
            call.put(_usage_attributes(response))
            if content_on():
                call.put({"output.value": response.content or json.dumps(response.message, ensure_ascii=False)})
        return response

    def _span_attributes(self, tools: list[dict] | None) -> dict:
        """The call as OpenTelemetry's GenAI conventions and OpenInference (Phoenix) name it."""
        from urllib.parse import urlsplit

        url = urlsplit(self.model.base_url)
        return {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": self.model.provider,
            "gen_ai.provider.name": self.model.provider,
            "gen_ai.request.model": self.model.name,
            "server.address": url.hostname,
            "server.port": url.port,
            "llm.model_name": self.model.name,
            "llm.provider": self.model.provider,
            "llm.system": self.model.provider,
            "uwf.purpose": self.purpose,
            "uwf.model.alias": self.model.alias,
            "uwf.tools": len(tools) if tools else None,
        }

    def _post(self, body: dict) -> object:
        import httpx

        headers = {"Content-Type": "application/json"}
        if self.model.api_key:
            headers["Authorization"] = f"Bearer {self.model.api_key}"
        for attempt in range(self.retries + 1):
            response = None
            timeout = self._timeout()
            try:
                response = httpx.post(self.url, json=body, headers=headers, timeout=timeout)
            except httpx.TimeoutException:
                error = LlmError(f"{self.model.describe()} did not answer within {timeout:g}s")
            except httpx.ConnectError as exc:
                raise LlmError(f"cannot reach {self.url}: {_reason(exc)}") from None  # nothing listens: retrying won't help
            except httpx.HTTPError as exc:
                error = LlmError(f"cannot reach {self.url}: {_reason(exc)}")
            else:
                if response.status_code == 200:
                    try:
                        return response.json()
                    except ValueError:
                        raise LlmError(f"{self.model.describe()} answered with a body that is not JSON: {response.text[:120]!r}") from None
                error = _status_error(response, self.model)
                if response.status_code != 429 and response.status_code < 500:
                    raise error
            if attempt == self.retries:
                raise LlmError(f"{error.message} (after {attempt + 1} attempt{'s' if attempt else ''})")
            wait = _retry_after(response)
            wait = wait if wait is not None else min(MAX_BACKOFF_SECONDS, self.backoff * (2**attempt))
            time.sleep(min(wait, self._timeout()))
        raise AssertionError("unreachable")

    def _timeout(self) -> float:
        left = None if self.time_left is None else self.time_left()
        return self.timeout if left is None else min(self.timeout, left)


def _usage_attributes(response: ChatResponse) -> dict:
    usage = response.usage
    return {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
        "gen_ai.response.finish_reasons": [response.finish_reason] if response.finish_reason else None,
        "llm.token_count.prompt": usage.prompt_tokens,
        "llm.token_count.completion": usage.completion_tokens,
        "llm.token_count.total": usage.total_tokens or usage.prompt_tokens + usage.completion_tokens,
    }


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    if "Connection refused" in text or "ConnectError" in type(exc).__name__:
        return "connection refused" if "refused" in text.lower() else text
    return text.splitlines()[0]


def _retry_after(response) -> float | None:
    if response is None or response.status_code != 429:
        return None
    value = response.headers.get("retry-after")
    try:
        return min(MAX_BACKOFF_SECONDS, max(0.0, float(value))) if value else None
    except ValueError:
        return None


def _status_error(response, model: ResolvedModel) -> LlmError:
    detail = _error_text(response, model)
    status = response.status_code
    if status in (401, 403):
        hint = f"; check {model.api_key_env} in the root's .env" if model.api_key_env else "; the provider needs an API key (apiKeyEnv)"
        return LlmError(f"{model.describe()} refused the request ({status} {detail}){hint}")
    if status == 404:
        return LlmError(f"{model.describe()}: not found (404 {detail}); check the base URL and the model name")
    if status == 429:
        return LlmError(f"{model.describe()} is rate-limiting (429 {detail})")
    return LlmError(f"{model.describe()} failed ({status} {detail})")


def _error_text(response, model: ResolvedModel) -> str:
    try:
        data = response.json()
        message = data.get("error", {}).get("message") if isinstance(data.get("error"), dict) else data.get("error")
        text = str(message or data)
    except (ValueError, AttributeError):
        text = response.text
    if model.api_key:
        text = text.replace(model.api_key, f"[redacted:{model.api_key_env}]")  # providers echo a wrong key back
    return " ".join(text.split())[:160]


def _parse_response(data: object, model: ResolvedModel) -> ChatResponse:
    try:
        choice = data["choices"][0]
        message = choice["message"]
        if not isinstance(message, dict):
            raise TypeError
    except (KeyError, IndexError, TypeError):
        raise LlmError(f"{model.describe()} answered with a malformed body (no choices[0].message): {json.dumps(data)[:160]}") from None
    raw_usage = data.get("usage") if isinstance(data, dict) else None
    usage = Usage(requests=1)
    if isinstance(raw_usage, dict):
        prompt = raw_usage.get("prompt_tokens") or 0
        completion = raw_usage.get("completion_tokens") or 0
        usage = Usage(int(prompt), int(completion), int(raw_usage.get("total_tokens") or prompt + completion), 1)
    return ChatResponse(message, usage, choice.get("finish_reason"))
