"""An extract model's output held to what the agent said (design §16): every field comes with
quotes of the agent's output, each quote must be in the output, and the quotes must say the
field's value — its words for a string (all of them for a short one, most for a longer one),
its digits for a number, a quote of its own for each item of a list, an object's keys too. A
model told to fill a form fills it from anything, an error message included; this is what makes
its answer evidence instead.

Quotes are compared as a reader would: case, white space, typographic quotes and dashes,
Unicode compatibility forms, markdown marks and a word's plain endings (-s, -ed, -ing) aside.
What words cannot check is not checked: a boolean needs a quote, nothing more, and a value
built from the output's own words but saying the opposite ("not approved") passes.

A quote that is an error line — an HTTP or API failure, a stack trace — is no evidence at all:
an agent whose call failed and which printed only that (hermes exits 0 on a 401) has no answer,
whatever field the extract model fills with it.
"""

from __future__ import annotations

import re
import unicodedata

from .extract import ExtractError

FOLD = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-", "\u2212": "-"})
MARKS = re.compile(r"[*_`#]+")
WORD = re.compile(r"[^\W_]+")
ENDINGS = ("ing", "ed", "es", "s")
SHORT = 3  # a value of up to this many words must have every one of them said; a longer one, most (MOST)
MOST = 0.75


# A line that reports a failure rather than answering: how agent CLIs and SDKs print a failed API
# call or a crash. Matched at the start of a line (after markdown marks), so an answer that talks
# about an error in a sentence is not one.
ERROR_LINE = re.compile(
    r"^[\W_]*(?:"  # after any decoration: markdown marks, an emoji, a bracket
    r"traceback \(most recent call last\)"
    r"|(?:[a-z_][\w.]*\.)?[a-z]\w*(?:error|exception)\b\s*[:(]"  # openai.AuthenticationError: ..., APIStatusError(
    r"|(?:(?:api |http |request )(?:error|failed)\b|(?:error|fatal|failed|err)\]?\s*(?:code\s*)?[:\-(\[])"  # a word, then its mark
    r".{0,40}?\b(?:[45]\d\d|unauthori[sz]ed|forbidden|rate.?limit|quota|overloaded|invalid.{0,12}(?:api.?key|token|credential)|"
    r"authenticat|econnrefused|connection (?:refused|reset|error)|timed? ?out)"
    r"|(?:error|fatal|failed|err)\]?\s+(?:code\s+)?[45]\d\d\b"  # Error 401, [ERROR] 401, Error code 429
    r"|http(?:/[\d.]+)?\s+[45]\d\d\b"  # HTTP 401: ..., HTTP/1.1 503
    r"|(?:status|error) code:?\s*[45]\d\d\b"
    r"|[45]\d\d\s+(?:unauthori[sz]ed|forbidden|too many requests|internal server error|bad gateway|service unavailable)"
    r"|(?:invalid|incorrect|missing|expired|revoked) (?:x-)?(?:api[ -]?key|token|credentials?|auth)"  # Invalid API key · Please run /login
    r"|(?:authentication|authorization) (?:failed|error|required)"
    r"|please run /login|(?:your )?credit balance is too low|you exceeded your current quota"
    r"|\{\s*\"(?:error|detail)\"\s*:"  # a JSON error body: {"error": {"message": ...}}
    r")",
    re.IGNORECASE,
)


def error_line(text: str, last: int | None = None) -> str | None:
    """The first line of `text` (of its `last` non-blank lines, when given) that is an error
    report — an HTTP/API failure or a stack trace — or None."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines[-last:] if last else lines:
        if ERROR_LINE.match(line):
            return line if len(line) <= 160 else line[:160] + "…"
    return None


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
            failure = error_line(quote)
            if failure is not None:
                raise ExtractError(f"field '{field}' rests on an error message, not an answer: {failure!r}")
        said = [normal(quote) for quote in quotes]
        items = value if isinstance(value, list) else [value]
        if isinstance(value, list) and len(quotes) < len(value):
            raise ExtractError(f"field '{field}' has {len(value)} items but {len(quotes)} quote(s): each item needs its own")
        for item in items:  # each item in one quote of its own (a list: not the same quote for two)
            for leaf in _leaves(item):
                if not any(_supported(leaf, quote) for quote in said):
                    raise ExtractError(f"field '{field}': the agent's words quoted for it do not say {str(leaf)[:80]!r}")
        if isinstance(value, list) and len(set(said)) < len({str(item) for item in value}):
            raise ExtractError(f"field '{field}': {len(value)} different items rest on {len(set(said))} quote(s)")
        kept[field] = evidence[field]
    return kept


def normal(text: str) -> str:
    """Text as quotes are compared."""
    text = MARKS.sub("", unicodedata.normalize("NFKC", text).translate(FOLD).lower())
    return " ".join(text.split()).strip(" \"'.,;:")


def _leaves(value: object) -> list[object]:
    """The strings and numbers a value claims, an object's keys among them (booleans and nulls
    claim no words)."""
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in (key, *_leaves(item))]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, bool) or value is None:
        return []
    return [value]


def _supported(leaf: object, said: str) -> bool:
    if isinstance(leaf, (int, float)):
        digits = str(int(leaf)) if float(leaf).is_integer() else repr(float(leaf))
        return re.search(rf"(?<![\d.\-]){re.escape(digits)}(?![\d])", said) is not None
    words = {word for word in WORD.findall(normal(str(leaf))) if len(word) >= 3}
    if not words:  # a short value ("no", "3a"): said as it is, as a word of its own
        return re.search(rf"(?<![^\W_]){re.escape(normal(str(leaf)))}(?![^\W_])", said) is not None
    quoted = set().union(*(_stems(word) for word in WORD.findall(said)))
    found = sum(1 for word in words if _stems(word) & quoted)
    return found == len(words) if len(words) <= SHORT else found >= MOST * len(words)


def _stems(word: str) -> set[str]:
    """A word and what it is without a plain ending: "rules" is "rule" (or "rul"), "checked" "check"."""
    return {word, *(word[: -len(ending)] for ending in ENDINGS if word.endswith(ending) and len(word) - len(ending) >= 3)}
