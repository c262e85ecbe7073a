"""The conditions most workflows write — `steps[-1].output.approved = false`, `$last('reviewer')
.score >= 8 and start.prompt != ''` — evaluated without importing jsonata-python (~20 ms,
paid on nearly every step otherwise).

The subset: paths of field names (plain or `backquoted`) with literal index filters (`[-1]`,
`[0]`) starting at `steps`, `start`, or uwf's `$first`, `$last`, `$firstStep` or `$lastStep` of
a literal role; string, number, true, false and null literals; `=`, `!=`, `<`, `<=`, `>`, `>=`, `and`, `or`, `$not(...)` and
parentheses. Anything else does not compile here and goes to JSONata. Whatever JSONata would do
differently at run time — a path through an array (JSONata maps over it), comparing objects or
arrays, mixing types in `<` (an error there) — raises `Unsupported`, and the caller evaluates the
expression with JSONata instead, so the result is always JSONata's. A property test holds the two
to the same answers (tests/workflow/test_simple_condition.py).
"""

from __future__ import annotations

import json

UNDEFINED = object()  # JSONata's `undefined`, distinct from null
_KEYWORDS = {"and", "or", "true", "false", "null"}
_ROOTS = {"steps", "start"}
# uwf's functions of a role name (jsonata_expr.UWF_FUNCTIONS; the moderator gives their values)
ROLE_FUNCTIONS = ("first", "last", "firstStep", "lastStep")


class Unsupported(Exception):
    """Outside the subset (at compile or at run time): evaluate with JSONata."""


def compile_condition(expression: str):
    """A callable `(data, functions) -> value`, or None when the expression is outside the subset."""
    try:
        parser = _Parser(_tokens(expression))
        node = parser.expression()
        if parser.peek() is not None:
            return None
    except (Unsupported, ValueError):  # ValueError: a string literal JSON would not read
        return None
    return node


_OPERATORS = ("!=", "<=", ">=", "=", "<", ">", "(", ")", "[", "]", ".", ",", "-")
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_CHARS = _NAME_START | frozenset("0123456789")
_DIGITS = frozenset("0123456789")


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: number, string, name (plain or `backquoted`), function ($name), op.
    A hand scanner: compiling a regular expression for this costs more than the step's routing."""
    tokens: list[tuple[str, str]] = []
    at, end = 0, len(text)
    while at < end:
        char = text[at]
        if char.isspace():
            at += 1
        elif char in _DIGITS:
            stop = at
            while stop < end and (text[stop] in _DIGITS or text[stop] in ".eE" or (text[stop] in "+-" and text[stop - 1] in "eE")):
                stop += 1
            tokens.append(("number", text[at:stop]))
            at = stop
        elif char in "\"'":
            stop = at + 1
            while stop < end and text[stop] != char:
                stop += 2 if text[stop] == "\\" else 1
            if stop >= end:
                raise Unsupported("an unterminated string")
            tokens.append(("string", text[at : stop + 1]))
            at = stop + 1
        elif char == "`":
            stop = text.find("`", at + 1)
            if stop <= at + 1:
                raise Unsupported("an unterminated or empty `name`")
            tokens.append(("name", text[at : stop + 1]))
            at = stop + 1
        elif char in _NAME_START or (char == "$" and at + 1 < end and text[at + 1] in _NAME_START):
            stop = at + 1
            while stop < end and text[stop] in _NAME_CHARS:
                stop += 1
            tokens.append(("function" if char == "$" else "name", text[at:stop]))
            at = stop
        else:
            op = next((op for op in _OPERATORS if text.startswith(op, at)), None)
            if op is None:
                raise Unsupported(char)
            tokens.append(("op", op))
            at += len(op)
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.at = 0

    def peek(self):
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, value: str | None = None, kind: str | None = None) -> str:
        token = self.peek()
        if token is None or (value is not None and token[1] != value) or (kind is not None and token[0] != kind):
            raise Unsupported(f"expected {value or kind}")
        self.at += 1
        return token[1]

    def accept(self, value: str) -> bool:
        token = self.peek()
        if token is not None and token[1] == value and token[0] in ("op", "name"):
            self.at += 1
            return True
        return False

    def expression(self):
        node = self.conjunction()
        while self.accept("or"):
            node = _Logic("or", node, self.conjunction())
        return node

    def conjunction(self):
        node = self.comparison()
        while self.accept("and"):
            node = _Logic("and", node, self.comparison())
        return node

    def comparison(self):
        node = self.operand()
        token = self.peek()
        if token is not None and token[0] == "op" and token[1] in ("=", "!=", "<", "<=", ">", ">="):
            self.at += 1
            node = _Compare(token[1], node, self.operand())
        return node

    def operand(self):
        kind, value = self.peek() or (None, None)
        if value == "(":
            self.at += 1
            node = self.expression()
            self.take(")")
            return node
        if kind == "string":
            self.at += 1
            return _Literal(json.loads(value) if value.startswith('"') else json.loads('"' + value[1:-1].replace('"', '\\"') + '"'))
        if kind == "number" or value == "-":
            return _Literal(self.number())
        if kind == "name" and value in ("true", "false", "null"):
            self.at += 1
            return _Literal({"true": True, "false": False, "null": None}[value])
        if kind == "function" and value == "$not":
            self.at += 1
            self.take("(")
            inner = self.expression()
            self.take(")")
            return _Not(inner)
        return self.path()

    def number(self) -> int | float:
        negative = self.accept("-")
        text = self.take(kind="number")
        value = float(text) if any(c in text for c in ".eE") else int(text)
        return -value if negative else value

    def path(self):
        kind, value = self.peek() or (None, None)
        if kind == "function" and value[1:] in ROLE_FUNCTIONS:
            self.at += 1
            self.take("(")
            role = self.operand()
            self.take(")")
            if not isinstance(role, _Literal) or not isinstance(role.value, str):
                raise Unsupported("uwf's role functions of a literal role only")
            head: object = (value[1:], role.value)
        elif kind == "name" and value in _ROOTS:
            self.at += 1
            head = value
        else:
            raise Unsupported(f"{value!r} starts no path of the subset")
        parts: list[tuple[str, object]] = []
        while True:
            if self.accept("["):
                parts.append(("index", self.number()))
                self.take("]")
                if isinstance(parts[-1][1], float):
                    raise Unsupported("a fractional index")
            elif self.accept("."):
                name = self.take(kind="name")
                if name in _KEYWORDS:
                    raise Unsupported(name)
                parts.append(("field", name[1:-1] if name.startswith("`") else name))
            else:
                return _Path(head, parts)


# -- the evaluator -----------------------------------------------------------------------------


class _Literal:
    window = 0

    def __init__(self, value: object) -> None:
        self.value = value

    def __call__(self, data, functions):
        return self.value


class _Path:
    def __init__(self, head: object, parts: list[tuple[str, object]]) -> None:
        self.head = head
        self.parts = parts
        first_index = parts[0][1] if parts and parts[0][0] == "index" else None
        if head == "steps":
            # only `steps[-k]...` is bounded; any other use of `steps` may look at all of them
            self.window = -first_index if isinstance(first_index, int) and first_index < 0 else None
        else:
            self.window = 0

    def __call__(self, data, functions):
        if isinstance(self.head, tuple):
            find = functions.get(self.head[0]) if functions else None
            if find is None:
                raise Unsupported("no role functions here")
            value = find(self.head[1])
            value = UNDEFINED if value is None else value
        else:
            value = data.get(self.head, UNDEFINED) if isinstance(data, dict) else UNDEFINED
        for kind, key in self.parts:
            if value is UNDEFINED:
                return UNDEFINED
            if kind == "index":
                items = value if isinstance(value, list) else [value]  # JSONata: a value is a sequence of one
                if any(isinstance(item, list) for item in items):
                    raise Unsupported("an index into nested arrays")
                position = key if key >= 0 else len(items) + key
                value = items[position] if 0 <= position < len(items) else UNDEFINED
            elif isinstance(value, dict):
                value = value.get(key, UNDEFINED)
            elif isinstance(value, list):
                raise Unsupported("a field of an array (JSONata maps over it)")
            else:
                value = UNDEFINED
        return value


class _Compare:
    def __init__(self, op: str, left, right) -> None:
        self.op, self.left, self.right = op, left, right
        self.window = _widest(left, right)

    def __call__(self, data, functions):
        left, right = self.left(data, functions), self.right(data, functions)
        if isinstance(left, (list, dict)) or isinstance(right, (list, dict)):
            raise Unsupported("comparing arrays or objects")
        if self.op in ("=", "!="):
            if left is UNDEFINED or right is UNDEFINED:
                return False  # JSONata: anything = or != undefined is false
            same = _kind(left) == _kind(right) and left == right
            return same if self.op == "=" else not same
        defined = [value for value in (left, right) if value is not UNDEFINED]
        if any(_kind(value) not in ("number", "string") for value in defined) or len({_kind(v) for v in defined}) > 1:
            raise Unsupported("JSONata refuses this comparison with an error of its own")
        if len(defined) < 2:
            return UNDEFINED  # JSONata: < and > with undefined give undefined
        return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[self.op]


class _Logic:
    def __init__(self, op: str, left, right) -> None:
        self.op, self.left, self.right = op, left, right
        self.window = _widest(left, right)

    def __call__(self, data, functions):
        left = _boolean(self.left(data, functions))
        right = _boolean(self.right(data, functions))
        return (left and right) if self.op == "and" else (left or right)


class _Not:
    def __init__(self, inner) -> None:
        self.inner = inner
        self.window = inner.window

    def __call__(self, data, functions):
        value = self.inner(data, functions)
        return UNDEFINED if value is UNDEFINED else not _boolean(value)


def _widest(left, right) -> int | None:
    if left.window is None or right.window is None:
        return None
    return max(left.window, right.window)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else "other"


def _boolean(value: object) -> bool:
    """JSONata's $boolean for what the subset handles; arrays and objects go to JSONata."""
    if value is UNDEFINED or value is None:
        return False
    if isinstance(value, (list, dict)):
        raise Unsupported("the truth of an array or object")
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    return value != ""
