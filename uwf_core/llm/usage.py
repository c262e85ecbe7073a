"""Tokens an LLM spent: what every step detail records and threads add up."""

from __future__ import annotations

from ..encoding.records import record


@record(frozen=True)
class Usage:
    """Tokens a model call (or a sum of them) used, as OpenAI-compatible APIs count them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    requests: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
            self.requests + other.requests,
        )

    def to_json(self) -> dict[str, int]:
        return {
            "promptTokens": self.prompt_tokens,
            "completionTokens": self.completion_tokens,
            "totalTokens": self.total_tokens,
            "requests": self.requests,
        }

    @classmethod
    def from_json(cls, data: object) -> Usage:
        if not isinstance(data, dict):
            return cls()
        def value(key: str) -> int:
            found = data.get(key)
            return found if isinstance(found, int) else 0

        return cls(value("promptTokens"), value("completionTokens"), value("totalTokens"), value("requests"))
