"""Extract, layer two: one JSON-mode chat completion with the extract model
(`modelOverrides.extract` → `defaultModel`), the schema in the system prompt,
the result validated against it.

The agent's text is evidence, not a form to fill: the model must quote, for every field, the
words of the answer that support it, and uwf checks each quote is in the answer (design §16).
A field without support, or a model that says the answer holds none (an error transcript, a
refusal), fails the attempt; a model that invents values cannot make a step `done`."""

from __future__ import annotations

import json

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ...config.env import Secrets
from ...config.model import Config
from ...llm.client import ChatClient, model_alias_for, resolve_model
from ...llm.usage import Usage
from .extract import Extracted, ExtractError

if TYPE_CHECKING:
    from typing import Callable

SYSTEM_PROMPT = (
    "You read an agent's answer and report the structured output it gives, with evidence. Reply with one JSON object "
    "and nothing else (no prose, no code fences), in one of two forms:\n"
    '  {{"output": {{...}}, "evidence": {{"<field>": "<quote>", ...}}}}\n'
    '  {{"noAnswer": "<why the answer does not give this output>"}}\n'
    '"output" must match the JSON Schema below and hold only what the answer itself says. For every field of "output", '
    '"evidence" gives the words of the answer that say its value, copied exactly: one quote, or a list of quotes '
    "with one for each item of a list field; leave out optional fields the answer does not fill. If the answer is "
    "an error message, a refusal, or does not contain what a field needs, reply with noAnswer: never invent a "
    "value.\n\nJSON Schema:\n{schema}"
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
        sent = text if self.secrets is None else self.secrets.text(text)
        response = ChatClient(model, time_left=self.time_left, purpose="extractor").complete(
            [
                {"role": "system", "content": SYSTEM_PROMPT.format(schema=json.dumps(schema, indent=2))},
                {"role": "user", "content": sent},
            ],
            json_mode=True,
        )
        try:
            output, evidence = _parse(response.content, schema, sent)
            return Extracted(output, text, "llm", evidence), response.usage
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


def _parse(content: str, schema: dict, answer: str) -> tuple[dict, dict]:
    """(output, evidence) from the extract model's reply, the evidence checked against `answer`
    (engine/extraction/evidence.py)."""
    from ...encoding.limits import StructureError, check_json_text
    from ...store.schemas import validation_errors

    content = content.strip()
    if content.startswith("```"):
        content = content.strip("`").removeprefix("json").strip()
    try:
        check_json_text(content, "the extract model's answer")
        reply = json.loads(content)
    except StructureError as exc:
        raise ExtractError(exc.message) from None
    except ValueError:
        raise ExtractError(f"the extract model did not answer with JSON: {content[:80]!r}") from None
    if not isinstance(reply, dict):
        raise ExtractError("the extract model did not answer with a JSON object")
    if reply.get("noAnswer") is not None:
        reason = " ".join(str(reply["noAnswer"]).split())[:200]
        raise ExtractError(f"the extract model found no answer in the agent's output ({reason})")
    output, evidence = reply.get("output"), reply.get("evidence")
    if not isinstance(output, dict) or not isinstance(evidence, dict):
        raise ExtractError('the extract model did not give "output" and "evidence" objects')
    errors = validation_errors(schema, output)
    if errors:
        raise ExtractError(f"the extract model's answer does not match the schema: {errors[0]}", errors)
    from .evidence import check_evidence

    return output, check_evidence(output, evidence, answer)
