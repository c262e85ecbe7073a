"""The regex engine of conditions: JSONata's regex literals (JavaScript syntax) on RE2, whose
matching is linear in the text.

Python's `re` backtracks: `/^(a+)+$/` against 40 a's and a `!` runs for hours while holding the
GIL, past JSONata's clock, the step's timeout, SIGTERM and every thread of the workbench. RE2
cannot backtrack, and has no backreferences or lookaround: a pattern that needs them is refused
when the condition is compiled (`uwf workflow put` says so), never while a step runs.

What a pattern means follows JavaScript, the reference's language, where RE2 and Python differ:
`$` is the end of the text (not also before a final newline), `\\d`, `\\w` and `\\b` are ASCII,
`\\s` is JavaScript's Unicode whitespace, `\\uXXXX` is a code point and `[\\b]` a backspace.
A replacement string keeps jsonata-python's meaning: `$1` is group 1 (empty when the group did
not take part), `$12` with fewer than 12 groups is group 1 then "2".
"""

from __future__ import annotations

REGEX_MEMORY = 8 << 20  # bytes RE2 may use for one pattern's automata

# JavaScript's \s: ECMAScript WhiteSpace and LineTerminator (RE2's \s is ASCII only).
_JS_SPACE = "\\t\\n\\x0b\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}"
_HEX = set("0123456789abcdefABCDEF")
_TEMPLATE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a", "\\": "\\"}


class RegexError(ValueError):
    """A regex literal RE2 cannot run; raised inside jsonata's tokenizer, caught as any compile error."""


def linear_regex(pattern: str, flags) -> LinearPattern:
    """jsonata-python's regex engine hook: the literal `pattern` with its `flags`, on RE2."""
    import re2

    options = re2.Options()
    options.log_errors = False  # its C++ logger would print beside uwf's one line
    options.max_mem = REGEX_MEMORY
    inline = ("i" if flags.case_insensitive else "") + ("m" if flags.multiline else "")
    translated = to_re2(pattern)
    try:
        return LinearPattern(re2.compile(f"(?{inline}){translated}" if inline else translated, options))
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise RegexError(f"regular expression /{pattern}/ cannot run on RE2, uwf's linear-time regex engine: {reason}{_hint(reason)}") from None


def _hint(reason: str) -> str:
    if "perl operator" in reason and any(form in reason for form in ("(?=", "(?!", "(?<")):
        return " (lookaround is not supported)"
    if "escape sequence" in reason and reason.rstrip()[-1:].isdigit():
        return " (backreferences are not supported)"
    return ""


def to_re2(pattern: str) -> str:
    """A JavaScript pattern in RE2's syntax, where the two read the same text differently."""
    out = []
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            following = pattern[index + 1]
            hex_digits = pattern[index + 2 : index + 6]
            if following == "u" and len(hex_digits) == 4 and set(hex_digits) <= _HEX:
                out.append(f"\\x{{{hex_digits}}}")
                index += 6
                continue
            if following == "s":
                out.append(_JS_SPACE if in_class else f"[{_JS_SPACE}]")
            elif following == "S" and not in_class:
                out.append(f"[^{_JS_SPACE}]")
            elif following == "b" and in_class:
                out.append("\\x08")
            else:
                out.append(char + following)
            index += 2
            continue
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        out.append(char)
        index += 1
    return "".join(out)


class LinearPattern:
    """An RE2 pattern with the methods jsonata-python calls on a compiled regex."""

    __slots__ = ("compiled",)

    def __init__(self, compiled) -> None:
        self.compiled = compiled

    def search(self, string: str):
        return self.compiled.search(string)

    def finditer(self, string: str):
        return self.compiled.finditer(string)

    def split(self, string: str, maxsplit: int = 0) -> list[str]:
        return self.compiled.split(string, maxsplit)

    def sub(self, repl, string: str, count: int = 0) -> str:
        """`repl` a function of the match, or a template as jsonata-python writes it for Python's
        `re` (`\\g<1>`), expanded here: RE2's own expansion refuses what jsonata relies on."""
        function = repl if callable(repl) else _expander(repl, self.compiled.groups)
        return self.compiled.sub(function, string, count)


def _expander(template: str, groups: int):
    parts: list[str | int] = []
    index = 0
    while index < len(template):
        char = template[index]
        if char != "\\" or index + 1 == len(template):
            parts.append(char)
            index += 1
            continue
        following = template[index + 1]
        end = template.find(">", index + 3)
        if following == "g" and template[index + 2 : index + 3] == "<" and end > 0 and template[index + 3 : end].isdigit():
            parts.extend(_group_parts(template[index + 3 : end], groups))
            index = end + 1
        elif following.isdigit():
            digits = following + (template[index + 2] if template[index + 2 : index + 3].isdigit() else "")
            parts.extend(_group_parts(digits, groups))
            index += 1 + len(digits)
        else:
            parts.append(_TEMPLATE_ESCAPES.get(following, char + following))
            index += 2

    def expand(match) -> str:
        return "".join(part if isinstance(part, str) else (match.group(part) or "") for part in parts)

    return expand


def _group_parts(digits: str, groups: int) -> list[str | int]:
    """Group `digits`, or, past the last group, a shorter number and the rest as text
    (jsonata's reading of `$12` with one group); one digit past the last group is empty."""
    number = int(digits)
    if number <= groups:
        return [number]
    if len(digits) > 1:
        return [*_group_parts(digits[:-1], groups), digits[-1]]
    return [""]
