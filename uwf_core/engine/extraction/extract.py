"""Structured output from an agent's raw answer, fast path: no LLM call.

An answer is either frontmatter markdown (a YAML block between `---` lines,
then a markdown body) or a single JSON object (so deterministic tools can
be agents too). The result must validate against the role's schema.
"""

from __future__ import annotations

import json

from ...encoding.frontmatter import split_frontmatter
from ...encoding.records import record
from ...errors import UwfError

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any, Callable

    from ...config.model import Config
    from ...llm.usage import Usage


class ExtractError(UwfError):
    """No valid structured output could be read from the answer."""

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []
        self.usage: Usage | None = None  # tokens an LLM spent on a failed extract, when one was asked


class AmbiguousAnswer(ExtractError):
    """An answer that gives a field twice: corrected by the agent, never settled by the extract model."""


@record(frozen=True)
class Extracted:
    output: dict[str, Any]
    body: str
    method: str  # "frontmatter", "json" or "llm"
    evidence: dict[str, Any] | None = None  # "llm": each field's quotes from the answer, checked verbatim


if TYPE_CHECKING:
    Fallback = Callable[[str, dict[str, Any]], tuple[Extracted, Usage]]  # (answer, schema) -> (output, tokens spent)


def _json_object(text: str) -> dict[str, Any] | None:
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return None
    try:
        value = json.loads(stripped, object_pairs_hook=_unique_keys)  # NaN and Infinity parse to floats: _check_storable refuses them
    except _DuplicateKey as exc:
        raise AmbiguousAnswer(f"the JSON answer gives the field '{exc.key}' twice: give each field once") from None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose every key is given once: which of two values the agent meant is not ours to guess."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return value


def parse_answer(text: str) -> tuple[dict[str, Any], str, str]:
    """(output, body, method) or ExtractError saying why nothing could be read."""
    from ...encoding.limits import (
        StructureError,
        check_json_text,
        check_size,
        check_yaml_text,
    )

    if not text.strip():
        raise ExtractError("the agent's answer is empty")
    try:
        check_size(text, "the agent's answer")
        if text.strip().startswith("{"):
            check_json_text(text, "the agent's answer")
        block = split_frontmatter(text)
        if block is not None:
            check_yaml_text(block[0], "the agent's frontmatter")
    except StructureError as exc:
        raise ExtractError(exc.message[:300]) from None
    obj = _json_object(text)
    if obj is not None:
        check_storable(obj)
        return obj, "", "json"
    if block is None:
        raise ExtractError("the answer has no frontmatter block (--- yaml ---) and is not a JSON object")
    import yaml

    try:
        data = _load_unique(block[0])
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (frontmatter line {mark.line + 1})" if mark is not None else ""
        raise ExtractError(f"the frontmatter is not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict):
        raise ExtractError("the frontmatter is not a mapping of fields")
    output = _jsonable(data)
    assert isinstance(output, dict)  # _jsonable keeps a mapping one
    check_storable(output)
    return output, block[1], "frontmatter"


def _load_unique(text: str) -> object:
    """The frontmatter's YAML, refusing a mapping that gives a key twice (yaml keeps the last
    silently; `workflow put` refuses the same in a workflow): ExtractError with its line."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        stack = [node] if node is not None else []
        while stack:
            current = stack.pop()
            if isinstance(current, yaml.MappingNode):
                seen: dict[object, int] = {}
                for key_node, value_node in current.value:
                    key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                    if key is not None and key in seen:
                        raise AmbiguousAnswer(
                            f"the frontmatter gives the field '{key}' twice (lines {seen[key]} and {key_node.start_mark.line + 1}): give each field once"
                        )
                    if key is not None:
                        seen[key] = key_node.start_mark.line + 1
                    stack.append(value_node)
            elif isinstance(current, yaml.SequenceNode):
                stack.extend(current.value)
        return loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()


INT_LIMIT = 2**64  # CBOR's integers; the reference stores no more either


def check_storable(output: dict[str, Any]) -> None:
    """Refuse here what the store would refuse later (infinity, NaN, integers past 64 bits), so
    the agent gets a correction naming the field instead of a failed step."""
    import math

    stack: list[tuple[str, object]] = [("", output)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{path}.{key}" if path else str(key), item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((f"{path}[{index}]", item) for index, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            raise ExtractError(f"field '{path}' is {value}, which JSON cannot carry: give a finite number")
        elif isinstance(value, int) and not isinstance(value, bool) and not -INT_LIMIT < value < INT_LIMIT:
            raise ExtractError(f"field '{path}' is an integer of {len(str(abs(value)))} digits, more than 64 bits hold")


def _jsonable(value: object) -> object:
    """YAML can produce dates and other non-JSON values; keep JSON types only."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)


def extract_fast(text: str, schema: dict[str, Any], *, cache_key: str | None = None) -> Extracted:
    """The output from the answer's own frontmatter or JSON, held to the schema: tried before the
    LLM fallback, which costs a call."""
    from ...store.schemas import validation_errors

    output, body, method = parse_answer(text)
    errors = validation_errors(schema, output, cache_key=cache_key)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ExtractError(f"the {method} output does not match the role's schema: {errors[0]}{more}", errors)
    return Extracted(output, body, method)


def usage_detail(config: Config, usage: Usage) -> dict[str, Any]:
    """The LLM fallback's tokens as a step's detail records them, under the model alias the ledger
    prices them at (every writer of an extracted answer: text, python, the agent kit)."""
    from ...llm.client import model_alias_for

    return {"extractUsage": usage.to_json(), "extractModel": model_alias_for(config, "extract")}


# -- the layers together: fast path, LLM fallback, corrections ---------------------------

MAX_CORRECTIONS = 2


@record(frozen=True)
class ExtractOutcome:
    extracted: Extracted
    text: str  # the answer that succeeded
    corrections: int
    usage: Usage | None = None  # of the fallback calls, if any


def lazy_fallback(build: Callable[[], Fallback | None]) -> Fallback:
    """The LLM fallback, built by `build()` (None when no extract model is configured) only when
    the fast path has failed: its HTTP client costs an import on every step otherwise."""
    built: list[Fallback | None] = []

    def fallback(text: str, schema: dict[str, Any]) -> tuple[Extracted, Usage]:
        if not built:
            built.append(build())
        if built[0] is None:
            raise NoFallback()
        return built[0](text, schema)

    return fallback


class NoFallback(UwfError):
    """No extract model is configured: the fallback layer is skipped without a note."""

    def __init__(self) -> None:
        super().__init__("no extract model is configured")


def correction_message(error: ExtractError, schema: dict[str, Any]) -> str:
    from ..prompt import output_format_instruction

    problems = "; ".join(error.errors[:5]) if error.errors else error.message
    return (
        f"Your previous answer could not be used: {problems}.\n\n"
        "Answer again. Keep your work, but format the answer exactly like this:\n\n" + output_format_instruction(schema)
    )


def extract_with_corrections(
    text: str,
    schema: dict[str, Any],
    *,
    cache_key: str | None = None,
    fallback: Fallback | None = None,
    retry: Callable[[str], str] | None = None,
    max_corrections: int = MAX_CORRECTIONS,
) -> ExtractOutcome:
    """Fast path, then the LLM `fallback(text, schema)` if given, then up to
    `max_corrections` calls of `retry(message) -> new answer text`. One `extract` span when the
    step is traced (the fallback's LLM calls and the corrections' agent runs under it)."""
    from ...telemetry.spans import CHAIN, span

    with span("extract", CHAIN) as traced:
        outcome = _extract_with_corrections(text, schema, cache_key, fallback, retry, max_corrections)
        traced.put({"uwf.extract.method": outcome.extracted.method, "uwf.extract.corrections": outcome.corrections})
    return outcome


def _extract_with_corrections(
    text: str, schema: dict[str, Any], cache_key: str | None, fallback: Fallback | None, retry: Callable[[str], str] | None,
    max_corrections: int,
) -> ExtractOutcome:
    usage: Usage | None = None
    notes: list[str] = []
    corrections = 0
    while True:
        try:
            return ExtractOutcome(extract_fast(text, schema, cache_key=cache_key), text, corrections, usage)
        except ExtractError as exc:
            error = exc
        if fallback is not None and not isinstance(error, AmbiguousAnswer):  # which value was meant is the agent's to say
            try:
                extracted, used = fallback(text, schema)
                usage = used if usage is None else usage + used
                return ExtractOutcome(extracted, text, corrections, usage)
            except NoFallback:
                fallback = None
            except UwfError as exc:
                notes.append(f"LLM extract: {exc.message}")
                spent = getattr(exc, "usage", None)
                if spent is not None:
                    usage = spent if usage is None else usage + spent
        if retry is None or corrections >= max_corrections:
            tried = f" after {corrections} correction{'s' if corrections != 1 else ''}" if corrections else ""
            extra = f" ({'; '.join(dict.fromkeys(notes))})" if notes else ""
            raise ExtractError(f"{error.message}{tried}{extra}", error.errors)
        corrections += 1
        text = retry(correction_message(error, schema))
