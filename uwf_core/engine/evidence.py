"""An extract model's output held to what the agent said (design §16): every field comes with
quotes of the agent's output, each quote must be in the output, and the quotes must say the
field's value — its words for a string, its digits for a number, one quote for each item of a
list. A model told to fill a form fills it from anything, an error message included; this is
what makes its answer evidence instead.

Quotes are compared as a reader would: case, white space, typographic quotes and dashes,
Unicode compatibility forms and markdown marks aside. A boolean cannot be checked against words:
it needs a quote, nothing more.
"""

from __future__ import annotations

import re
import unicodedata

from .extract import ExtractError

FOLD = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-", "\u2212": "-"})
MARKS = re.compile(r"[*_`#]+")
WORD = re.compile(r"[^\W_]+")
PREFIX = 5  # a word is said when a quoted word begins like it ("rule" / "rules", "analysed" / "analysis")


def check_evidence(output: dict, evidence: dict, answer: str) -> dict:
    """The evidence to keep, field by field; ExtractError naming the first field it cannot support."""
    if not any(value is not None for value in output.values()):
        raise ExtractError("the extract model extracted nothing from the agent's output")
    haystack = normal(answer)
    kept = {}
    for field, value in output.items():
        if value is None:
            continue  # an optional field left empty claims nothing
        quotes = evidence.get(field)
        quotes = [quotes] if isinstance(quotes, str) else quotes
        if not isinstance(quotes, list) or not quotes or not all(isinstance(quote, str) and WORD.search(quote) for quote in quotes):
            raise ExtractError(f"the extract model quoted nothing of the agent's output for field '{field}'")
        for quote in quotes:
            if normal(quote) not in haystack:
                raise ExtractError(f"field '{field}': the extract model's quote is not in the agent's output: {quote[:80]!r}")
        if isinstance(value, list) and len(quotes) < len(value):
            raise ExtractError(f"field '{field}' has {len(value)} items but {len(quotes)} quote(s): each item needs its own")
        said = " ".join(normal(quote) for quote in quotes)
        for leaf in _leaves(value):
            if not _supported(leaf, said):
                raise ExtractError(f"field '{field}': the agent's words quoted for it do not say {str(leaf)[:80]!r}")
        kept[field] = evidence[field]
    return kept


def normal(text: str) -> str:
    """Text as quotes are compared."""
    text = MARKS.sub("", unicodedata.normalize("NFKC", text).translate(FOLD).lower())
    return " ".join(text.split()).strip(" \"'.,;:")


def _leaves(value: object) -> list[object]:
    """The strings and numbers a value claims (booleans and nulls claim no words)."""
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, bool) or value is None:
        return []
    return [value]


def _supported(leaf: object, said: str) -> bool:
    if isinstance(leaf, (int, float)):
        digits = str(int(leaf)) if float(leaf).is_integer() else repr(float(leaf))
        return re.search(rf"(?<![\d.]){re.escape(digits)}(?![\d])", said) is not None
    words = {word for word in WORD.findall(normal(str(leaf))) if len(word) >= 3}
    if not words:  # a short value ("no", "3a"): it must be said as it is
        return normal(str(leaf)) in said
    quoted = set(WORD.findall(said))
    found = sum(1 for word in words if any(other.startswith(word[:PREFIX]) for other in quoted))
    return found * 2 >= len(words)  # at least half of its words: a summary, not an invention
