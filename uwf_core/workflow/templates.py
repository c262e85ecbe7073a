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


def renders_blank(template: str) -> bool:
    """True when the template can only render empty or whitespace: no variables or sections,
    and its text is blank (comments count as nothing). The template must parse."""
    tokens = _tokens(template)
    if any(kind not in ("literal", "comment") for kind, _ in tokens):
        return False
    return not "".join(text for kind, text in tokens if kind == "literal").strip()


def literal_prefix(template: str) -> tuple[str, bool]:
    """The template's text before its first tag (comments count as nothing), and whether it has
    any tag that renders. The template must parse."""
    prefix = []
    for kind, text in _tokens(template):
        if kind == "literal":
            prefix.append(text)
        elif kind != "comment":
            return "".join(prefix), True
    return "".join(prefix), False


def render(template: str, data: object) -> str:
    import chevron

    tokens = [("no escape", key) if kind == "variable" else (kind, key) for kind, key in _tokens(template)]
    return chevron.render(tokens, data)
