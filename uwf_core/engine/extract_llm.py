"""Extract, layer two: one JSON-mode chat completion with the extract model
(`modelOverrides.extract` → `defaultModel`), the schema in the system prompt,
the result validated against it."""

from __future__ import annotations

import json

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..config.env import Secrets
from ..config.model import Config
from ..llm.client import ChatClient, model_alias_for, resolve_model
from ..llm.usage import Usage
from .extract import Extracted, ExtractError

if TYPE_CHECKING:
    from typing import Callable

SYSTEM_PROMPT = (
    "You extract structured data from an agent's answer. Reply with one JSON object that matches this JSON Schema "
    "exactly, using only information present in the answer. No prose, no code fences.\n\nJSON Schema:\n{schema}"
)


class LlmExtractor:
    """Callable as `fallback(text, schema) -> (Extracted, Usage)`; None-like when no model is configured."""

    def __init__(
        self,
        config: Config,
        env: dict[str, str] | None = None,
        time_left: Callable[[], float | None] | None = None,
        secrets: Secrets | None = None,
    ) -> None:
        self.config = config
        self.env = env
        self.time_left = time_left  # the step's remaining time (raises when none is left)
        self.secrets = secrets  # a key the agent printed is not sent to the extract model
        self.alias = model_alias_for(config, "extract")

    @property
    def available(self) -> bool:
        return self.alias is not None

    def __call__(self, text: str, schema: dict) -> tuple[Extracted, Usage]:
        model = resolve_model(self.config, self.alias, self.env, purpose="extract")
        response = ChatClient(model, time_left=self.time_left).complete(
            [
                {"role": "system", "content": SYSTEM_PROMPT.format(schema=json.dumps(schema, indent=2))},
                {"role": "user", "content": text if self.secrets is None else self.secrets.text(text)},
            ],
            json_mode=True,
        )
        try:
            return Extracted(_parse(response.content, schema), text, "llm"), response.usage
        except ExtractError as exc:
            exc.usage = response.usage  # the tokens were spent all the same
            raise


def fallback_for(
    config: Config,
    env: dict[str, str] | None = None,
    time_left: Callable[[], float | None] | None = None,
    secrets: Secrets | None = None,
) -> LlmExtractor | None:
    extractor = LlmExtractor(config, env, time_left, secrets)
    return extractor if extractor.available else None


def _parse(content: str, schema: dict) -> dict:
    from ..store.schemas import validation_errors

    content = content.strip()
    if content.startswith("```"):
        content = content.strip("`").removeprefix("json").strip()
    from ..encoding.limits import StructureError, check_json_text

    try:
        check_json_text(content, "the extract model's answer")
        output = json.loads(content)
    except StructureError as exc:
        raise ExtractError(exc.message) from None
    except ValueError:
        raise ExtractError(f"the extract model did not answer with JSON: {content[:80]!r}") from None
    if not isinstance(output, dict):
        raise ExtractError("the extract model did not answer with a JSON object")
    errors = validation_errors(schema, output)
    if errors:
        raise ExtractError(f"the extract model's answer does not match the schema: {errors[0]}", errors)
    return output
