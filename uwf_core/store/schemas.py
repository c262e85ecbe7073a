"""JSON Schemas as CAS uses them: the meta-schema, the allowed keyword subset,
and validation of payloads (jsonschema, imported only when validating)."""

from __future__ import annotations

from ..encoding.ids import is_cas_ref
from ..errors import ValidationError

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from jsonschema.protocols import Validator

    _Check = Callable[[object], bool]  # True: valid; False: ask jsonschema

JSON_TYPES = ["string", "number", "integer", "boolean", "object", "array", "null"]

# Exactly json-cas's bootstrap meta-schema; its hash is 56GP9CC0KVQF8.
META_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "json-cas JSON Schema meta-schema",
    "properties": {
        "type": {
            "anyOf": [
                {"type": "string", "enum": JSON_TYPES},
                {"type": "array", "items": {"type": "string", "enum": JSON_TYPES}},
            ]
        },
        "properties": {
            "type": "object",
            "additionalProperties": {"type": "object", "additionalProperties": False},
        },
        "required": {"type": "array", "items": {"type": "string"}},
        "additionalProperties": {
            "anyOf": [{"type": "boolean"}, {"type": "object", "additionalProperties": False}]
        },
        "anyOf": {"type": "array", "items": {"type": "object", "additionalProperties": False}},
        "oneOf": {"type": "array", "items": {"type": "object", "additionalProperties": False}},
        "items": {"type": "object", "additionalProperties": False},
        "format": {"type": "string"},
        "title": {"type": "string"},
        "enum": {"type": "array"},
        "const": {},
        "description": {"type": "string"},
    },
}

ALLOWED_KEYWORDS = frozenset(META_SCHEMA["properties"])


def check_schema(schema: object, where: str = "schema") -> None:
    """Refuse a schema that uses anything outside the meta-schema's keyword subset, in the
    reference's words ("Invalid schema: ...") followed by where and why.

    Checked recursively (as the reference does): the meta-schema alone cannot
    say that nested schemas obey the same rules.
    """
    try:
        _check_schema(schema, where)
    except ValidationError as exc:
        raise ValidationError(f"Invalid schema: {exc.message}") from None


def _check_schema(schema: object, where: str) -> None:
    if not isinstance(schema, dict):
        raise ValidationError(f"{where}: a schema must be an object, got {_kind(schema)}")
    problem = _non_json(schema, where)
    if problem:
        raise ValidationError(problem)
    for keyword, value in schema.items():
        if keyword not in ALLOWED_KEYWORDS:
            allowed = ", ".join(sorted(ALLOWED_KEYWORDS))
            raise ValidationError(f"{where}: keyword '{keyword}' is not allowed (allowed: {allowed})")
        _check_keyword(keyword, value, f"{where}.{keyword}")


def _non_json(value: object, where: str) -> str | None:
    """Where a value stops being JSON (a non-string key, a date, bytes...), if it does."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where}: key {key!r} must be a string"
            problem = _non_json(item, f"{where}.{key}")
            if problem:
                return problem
    elif isinstance(value, list):
        for index, item in enumerate(value):
            problem = _non_json(item, f"{where}[{index}]")
            if problem:
                return problem
    elif not (value is None or isinstance(value, (str, bool, int, float))):
        return f"{where}: {type(value).__name__} {value!r} is not a JSON value"
    elif isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return f"{where}: {value!r} is not a JSON number"
    return None


def _check_keyword(keyword: str, value: object, where: str) -> None:
    if keyword == "type":
        names = value if isinstance(value, list) else [value]
        if not names or any(name not in JSON_TYPES for name in names):
            raise ValidationError(f"{where}: must be one of {', '.join(JSON_TYPES)} or a list of them")
    elif keyword == "properties":
        if not isinstance(value, dict):
            raise ValidationError(f"{where}: must be an object of schemas, got {_kind(value)}")
        for name, sub in value.items():
            _check_schema(sub, f"{where}.{name}")
    elif keyword == "required":
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValidationError(f"{where}: must be a list of property names")
    elif keyword == "additionalProperties":
        if not isinstance(value, bool):
            _check_schema(value, where)
    elif keyword in ("anyOf", "oneOf"):
        if not isinstance(value, list) or not value:
            raise ValidationError(f"{where}: must be a non-empty list of schemas")
        for index, sub in enumerate(value):
            _check_schema(sub, f"{where}[{index}]")
    elif keyword == "items":
        _check_schema(value, where)
    elif keyword in ("format", "title", "description"):
        if not isinstance(value, str):
            raise ValidationError(f"{where}: must be a string, got {_kind(value)}")
    elif keyword == "enum":
        if not isinstance(value, list) or not value:
            raise ValidationError(f"{where}: must be a non-empty list")


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def field_order(schema: object) -> list[str]:
    """An object schema's property names: `required` first, in its (authored) order.

    Stored schemas are CBOR maps, whose keys come back in canonical order;
    `required` is a list and keeps the order the author wrote.
    """
    if not isinstance(schema, dict):
        return []
    properties = schema.get("properties") or {}
    required = [name for name in schema.get("required") or [] if name in properties]
    return required + [name for name in properties if name not in required]


_validators: dict[str, Validator] = {}
_checks: dict[str, _Check] = {}


def _fast_check(schema: object, key: str | None) -> _Check:
    """A predicate for `schema` (cached by its hash): True means valid; False means "ask jsonschema"."""
    check = _checks.get(key) if key is not None else None
    if check is None:
        check = _compile(schema)
        if key is not None:
            _checks[key] = check
    return check


_TYPES: dict[str, _Check] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


def _never(value: object) -> bool:
    return False


def _always(value: object) -> bool:
    return True


def _compile(schema: object) -> _Check:
    """The keywords the meta-schema allows, as one closure per subschema (built once)."""
    if schema is True or schema == {}:
        return _always
    if not isinstance(schema, dict):
        return _never  # not a schema we know: let jsonschema decide
    checks: list[_Check] = []
    kind = schema.get("type")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else list(kind)
        if not all(k in _TYPES for k in kinds):
            return _never
        tests = [_TYPES[k] for k in kinds]
        checks.append(lambda v: any(test(v) for test in tests))
    if "enum" in schema:
        options = schema["enum"]
        checks.append(lambda v: any(_json_equal(v, option) for option in options))
    if "const" in schema:
        constant = schema["const"]
        checks.append(lambda v: _json_equal(v, constant))
    fmt = schema.get("format")
    if fmt is not None and fmt != "cas_ref":
        return _never
    if fmt == "cas_ref":
        checks.append(lambda v: not isinstance(v, str) or is_cas_ref(v))
    if "properties" in schema or "required" in schema or "additionalProperties" in schema:
        checks.append(_object_check(schema))
    if "items" in schema:
        item = _compile(schema["items"])
        checks.append(lambda v: not isinstance(v, list) or all(item(x) for x in v))
    if "anyOf" in schema:
        branches = [_compile(sub) for sub in schema["anyOf"]]
        checks.append(lambda v: any(branch(v) for branch in branches))
    if "oneOf" in schema:
        branches = [_compile(sub) for sub in schema["oneOf"]]
        checks.append(lambda v: sum(1 for branch in branches if branch(v)) == 1)
    return lambda v: all(check(v) for check in checks)


def _object_check(schema: dict[str, Any]) -> _Check:
    properties = {name: _compile(sub) for name, sub in (schema.get("properties") or {}).items()}
    required = list(schema.get("required") or [])
    extra = schema.get("additionalProperties", True)
    extra_check = None if extra is True else (_never if extra is False else _compile(extra))

    def check(value: object) -> bool:
        if not isinstance(value, dict):
            return True
        if any(name not in value for name in required):
            return False
        for name, item in value.items():
            sub = properties.get(name)
            if sub is not None:
                if not sub(item):
                    return False
            elif extra_check is not None and not extra_check(item):
                return False
        return True

    return check


def _json_equal(a: object, b: object) -> bool:
    """JSON equality: true is not 1, 1 is 1.0, and containers compare item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _validator_for(schema: dict[str, Any], key: str | None) -> Validator:
    if key is not None and key in _validators:
        return _validators[key]
    from jsonschema import Draft202012Validator, FormatChecker

    checker = FormatChecker()
    checker.checks("cas_ref")(lambda value: not isinstance(value, str) or is_cas_ref(value))
    validator = Draft202012Validator(schema, format_checker=checker)
    if key is not None:
        _validators[key] = validator
    return validator


def validation_errors(schema: dict[str, Any], payload: object, *, cache_key: str | None = None) -> list[str]:
    """Every way `payload` fails `schema` (the first MAX_ERRORS), as short 'at <path>: <message>' lines.

    A payload that passes the compiled check of the meta-schema's keyword subset is valid
    without importing jsonschema (~40 ms, most of a step's start-up); only a failing one
    (or a schema using a format other than cas_ref) goes to jsonschema, for its messages."""
    if _fast_check(schema, cache_key)(payload):
        return []
    validator = _validator_for(schema, cache_key)
    # The first MAX_ERRORS only: each error carries a repr of its value, and a hostile payload
    # (a tree node of 200,000 nulls in a bundle) had 720 MB of them collected.
    found = []
    for error in validator.iter_errors(payload):  # type: ignore[arg-type]  # the stub admits JSON values only; any other is reported invalid
        found.append(error)
        if len(found) == MAX_ERRORS:
            break
    found.sort(key=lambda error: [(0, part, "") if isinstance(part, int) else (1, 0, str(part)) for part in error.absolute_path])
    return [_clipped(f"at {_json_path(error.absolute_path)}: {error.message}") for error in found]


MAX_ERRORS = 100
MAX_ERROR_CHARS = 500


def _clipped(text: str) -> str:
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def validate(schema: dict[str, Any], payload: object, *, what: str = "payload", schema_hash: str | None = None) -> None:
    """Raise ValidationError with the first problem (and a count of the rest), in the reference's
    words ("Validation failed", with the schema's hash when it has one) before uwf's detail."""
    errors = validation_errors(schema, payload, cache_key=schema_hash)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        against = f" for schema {schema_hash}" if schema_hash else ""
        raise ValidationError(f"Validation failed{against}: {what} does not match its schema: {errors[0]}{more}")


def _json_path(path: Iterable[str | int]) -> str:
    text = "$"
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text
