"""Mustache prompt templates (chevron), rendered without HTML escaping.

The reference turns escaping off; chevron has no switch for it, so every
escaped variable token is rewritten as an unescaped one before rendering.
"""

from __future__ import annotations

from ..errors import UwfError


def _tokens(template: str) -> list[tuple[str, str]]:
    from chevron.tokenizer import ChevronError, tokenize

    try:
        return list(tokenize(template))
    except ChevronError as exc:
        raise UwfError("; ".join(line.strip() for line in str(exc).strip().splitlines())) from None


def template_error(template: str) -> str | None:
    try:
        _tokens(template)
    except UwfError as exc:
        return exc.message
    return None


def render(template: str, data: object) -> str:
    import chevron

    tokens = [("no escape", key) if kind == "variable" else (kind, key) for kind, key in _tokens(template)]
    return chevron.render(tokens, data)
