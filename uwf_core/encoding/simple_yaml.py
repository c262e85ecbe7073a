"""Read and write uwf's own state files without importing PyYAML.

registry.yaml and threads.yaml are read on every `uwf` call, and importing
PyYAML costs more than the interpreter's own start-up. uwf writes these
files in a small block subset (nested mappings, lists of mappings, every
string double-quoted); `loads` reads exactly that subset and falls back to
PyYAML's BaseLoader for anything else, so a hand-edited file still reads
the same way. Like BaseLoader, every scalar comes back as a string.
"""

from __future__ import annotations

_PLAIN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-+:$/")


class YamlSyntaxError(Exception):
    """Raised with a one-line message (and line number when PyYAML gives one)."""


def dumps(value: dict, header: str = "") -> str:
    """Emit a mapping of strings, ints, booleans, nested mappings, and lists of scalars or mappings."""
    lines = [f"# {line}" for line in header.splitlines()]
    _emit_mapping(value, 0, lines)
    return "\n".join(lines) + "\n"


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # read back as text (the fast reader's scalars are): config's flag() takes both
    if value is None:
        raise TypeError("simple_yaml writes only strings, integers and booleans")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + "".join(_escape(char) for char in value) + '"'
    raise TypeError(f"simple_yaml cannot write {type(value).__name__}")


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(char: str) -> str:
    """YAML double-quoted escapes; other control characters (C0, DEL, C1, line
    separators) as \\uXXXX, which YAML requires and the fast reader decodes."""
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    if code < 0x20 or 0x7F <= code <= 0x9F or code in (0x2028, 0x2029, 0xFEFF):
        return f"\\u{code:04x}"
    return char


_YAML11_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


def _is_plain_key(key: object) -> bool:
    """Field names stay bare; ids, hashes and user names are quoted."""
    return isinstance(key, str) and key.isalpha() and key[0].islower() and key.lower() not in _YAML11_WORDS


def _emit_mapping(mapping: dict, indent: int, lines: list[str], first_prefix: str | None = None) -> None:
    pad = " " * indent
    for position, (key, value) in enumerate(mapping.items()):
        prefix = first_prefix if (first_prefix is not None and position == 0) else pad
        key_text = key if _is_plain_key(key) else _scalar(str(key))
        if isinstance(value, dict):
            if value:
                lines.append(f"{prefix}{key_text}:")
                _emit_mapping(value, indent + 2, lines)
            else:
                lines.append(f"{prefix}{key_text}: {{}}")
        elif isinstance(value, list):
            if value:
                lines.append(f"{prefix}{key_text}:")
                for item in value:
                    if isinstance(item, dict) and item:
                        _emit_mapping(item, indent + 4, lines, first_prefix=" " * (indent + 2) + "- ")
                    elif isinstance(item, (str, int)) and not isinstance(item, bool):
                        lines.append(" " * (indent + 2) + "- " + _scalar(item))
                    else:
                        raise TypeError("simple_yaml lists hold scalars or non-empty mappings")
            else:
                lines.append(f"{prefix}{key_text}: []")
        else:
            lines.append(f"{prefix}{key_text}: {_scalar(value)}")


def loads(text: str) -> object:
    """Parse a state file: the fast subset reader, else PyYAML BaseLoader."""
    fast = _fast_loads(text)
    if fast is not _NOT_SUBSET:
        return fast
    import yaml

    try:
        loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlSyntaxError(f"{where}{problem}") from None


_NOT_SUBSET = object()


def _fast_loads(text: str) -> object:
    lines = []
    for raw in text.split("\n"):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if "\t" in raw or raw.rstrip() != raw:
            return _NOT_SUBSET
        lines.append(raw)
    if not lines:
        return None
    try:
        value, position = _parse_mapping(lines, 0, 0)
    except _Mismatch:
        return _NOT_SUBSET
    return value if position == len(lines) else _NOT_SUBSET


class _Mismatch(Exception):
    pass


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _parse_mapping(lines: list[str], position: int, indent: int, first_line: str | None = None):
    result: dict = {}
    while position < len(lines):
        line = first_line if first_line is not None else lines[position]
        if first_line is None and _indent_of(line) != indent:
            if _indent_of(line) > indent:
                raise _Mismatch
            break
        first_line = None
        key, rest = _split_key(line.strip())
        if key in result:
            raise _Mismatch
        position += 1
        if rest == "":
            if position < len(lines) and lines[position].lstrip().startswith("- "):
                value, position = _parse_list(lines, position, _indent_of(lines[position]))
            elif position < len(lines) and _indent_of(lines[position]) > indent:
                value, position = _parse_mapping(lines, position, _indent_of(lines[position]))
            else:
                raise _Mismatch
        elif rest.startswith("[") or rest.startswith("{"):
            value = _parse_flow(rest)
        else:
            value = _parse_scalar(rest)
        result[key] = value
    return result, position


def _parse_list(lines: list[str], position: int, indent: int):
    result = []
    while position < len(lines) and _indent_of(lines[position]) == indent:
        line = lines[position]
        if not line.lstrip().startswith("- "):
            raise _Mismatch
        rest = line.lstrip()[2:].strip()
        if rest.startswith('"') or ":" not in rest:
            result.append(_parse_scalar(rest))
            position += 1
            continue
        inner = " " * (indent + 2) + line.lstrip()[2:]
        item, position = _parse_mapping(lines, position, indent + 2, first_line=inner)
        result.append(item)
    return result, position


def _parse_flow(text: str, nested: bool = True) -> list | dict:
    """A one-line flow collection of scalars, as hand-written config uses (`args: [-c, "x y"]`,
    `claude: {command: claude, args: [-p], protocol: text}`: a mapping's values may be flow
    sequences); anything deeper or unusual is left to PyYAML."""
    close = "]" if text[0] == "[" else "}"
    if not text.endswith(close):
        raise _Mismatch
    items = _flow_items(text[1:-1], allow_brackets=nested and close == "}")
    if close == "]":
        return [_flow_scalar_of(item) for item in items]
    mapping = {}
    for item in items:
        key, rest = _split_key(item)
        if key in mapping or rest == "":
            raise _Mismatch
        mapping[key] = _parse_flow(rest, nested=False) if rest.startswith("[") else _flow_scalar_of(rest)
    return mapping


def _flow_items(body: str, allow_brackets: bool = False) -> list[str]:
    """Split on the commas outside double quotes (and, in a mapping, outside one level of
    `[...]`); braces, single quotes and other indicators are not the subset."""
    items, current, quoted, escaped, depth = [], [], False, False, 0
    for char in body:
        if quoted:
            current.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
            current.append(char)
        elif char == "[" and allow_brackets and depth == 0:
            depth = 1
            current.append(char)
        elif char == "]" and depth == 1:
            depth = 0
            current.append(char)
        elif char == "," and depth == 0:
            items.append("".join(current).strip())
            current = []
        elif char in "[]{}'&*!|>%@`#":
            raise _Mismatch
        else:
            current.append(char)
    if quoted or depth:
        raise _Mismatch
    last = "".join(current).strip()
    if last:
        items.append(last)
    elif items:
        raise _Mismatch  # a trailing comma: leave its reading to PyYAML
    if any(not item for item in items):
        raise _Mismatch
    return items


def _flow_scalar_of(text: str) -> str:
    """A scalar inside a flow collection: as in block context, plus what flow allows plainly
    (a leading `-` as in `-c`, inner spaces as in `run tests`)."""
    if text.startswith('"'):
        return _parse_scalar(text)
    words = text.split(" ")
    if any(not word or not _PLAIN_CHARS.issuperset(word) or ":" in word for word in words):
        raise _Mismatch
    if text in ("-", "--") or text.startswith(("- ", "-- ")) or text.startswith(("?", ":")):
        raise _Mismatch
    return text


def _split_key(text: str) -> tuple[str, str]:
    if text.startswith('"'):
        end = text.find('"', 1)
        if end < 0 or "\\" in text[:end]:
            raise _Mismatch
        key, rest = text[1:end], text[end + 1 :]
    else:
        key, colon, tail = text.partition(":")
        if not colon or not key or not _PLAIN_CHARS.issuperset(key):
            raise _Mismatch
        rest = ":" + tail
    if rest == ":":
        return key, ""
    if not rest.startswith(": "):
        raise _Mismatch
    return key, rest[2:].strip()


def _parse_scalar(text: str) -> str:
    if text.startswith('"'):
        if len(text) < 2 or not text.endswith('"'):
            raise _Mismatch
        body = text[1:-1]
        if '"' in body.replace('\\"', ""):
            raise _Mismatch
        if "\\" in body:
            return _unescape(body)
        return body
    if not _PLAIN_CHARS.issuperset(text) or text.startswith(("-", ":")) or text.endswith(":"):
        raise _Mismatch
    return text


def _unescape(body: str) -> str:
    out = []
    position = 0
    while position < len(body):
        char = body[position]
        position += 1
        if char != "\\":
            out.append(char)
            continue
        escaped = body[position : position + 1]
        position += 1
        mapped = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}.get(escaped)
        if mapped is not None:
            out.append(mapped)
        elif escaped == "u" and len(body[position : position + 4]) == 4:
            try:
                out.append(chr(int(body[position : position + 4], 16)))
            except ValueError:
                raise _Mismatch from None
            position += 4
        else:
            raise _Mismatch
    return "".join(out)


# -- block YAML for prompts -------------------------------------------------------------

_PLAIN_FIRST = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$(")
_PLAIN_REST = _PLAIN_FIRST | set("0123456789 ./-')+=;?<>")
_YAML_WORDS = {"yes", "no", "on", "off", "true", "false", "null", "~"}  # what PyYAML reads as non-strings


def dump_block(value: object) -> str:
    """`value` as block YAML in the layout of PyYAML's `safe_dump(sort_keys=False)` (keys in order,
    list items under their key), without importing PyYAML: a prompt's frontmatter example is built
    on every text step. Every output reads back as `value` (tests compare with PyYAML)."""
    lines: list[str] = []
    _block(value, 0, lines)
    return "\n".join(lines) + "\n"


def _block(value: object, indent: int, lines: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict) and value:
        for key, item in value.items():
            head = f"{pad}{_plain_or_quoted(str(key))}:"
            if isinstance(item, dict) and item:
                lines.append(head)
                _block(item, indent + 2, lines)
            elif isinstance(item, list) and item:
                lines.append(head)
                _block(item, indent, lines)
            else:
                lines.append(f"{head} {_flow_scalar(item)}")
    elif isinstance(value, list) and value:
        for item in value:
            if isinstance(item, (dict, list)) and item:
                sub: list[str] = []
                _block(item, indent + 2, sub)
                first = sub[0][indent + 2 :]
                lines.append(f"{pad}- {first}")
                lines.extend(sub[1:])
            else:
                lines.append(f"{pad}- {_flow_scalar(item)}")
    else:
        lines.append(f"{pad}{_flow_scalar(value)}")


def _flow_scalar(value: object) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if value == value and value not in (float("inf"), float("-inf")) else '"nan"'
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _plain_or_quoted(str(value))


def _plain_or_quoted(text: str) -> str:
    plain = (
        bool(text)
        and (text[0] in _PLAIN_FIRST or (text[0] > "\x7f" and text[0].isalpha()))
        and all(char in _PLAIN_REST or (char > "\x7f" and char.isalnum()) for char in text)
        and not text.endswith(" ")
        and " #" not in text
    )
    if plain and text.lower() not in _YAML_WORDS:
        return text
    if text.isprintable():
        return "'" + text.replace("'", "''") + "'"
    return '"' + "".join(_escape(char) for char in text) + '"'
