"""simple_yaml: uwf's own state-file writer and fast reader.

Every scalar reads back as a string (like PyYAML's BaseLoader), so hashes and
ids that happen to be all digits stay strings (design §4). The fast reader must
agree with BaseLoader on everything `dumps` writes, and anything outside its
subset must still load through the BaseLoader fallback.

hypothesis is not installed in the project venv, so the property tests use a
seeded random generator: deterministic, and still hundreds of shapes.
"""

from __future__ import annotations

import random

import pytest
import yaml

from uwf_core.encoding import simple_yaml
from uwf_core.encoding.simple_yaml import _NOT_SUBSET, YamlSyntaxError, _fast_loads, dumps, loads


def _stringified(value):
    """What a YAML BaseLoader gives back for a value `dumps` wrote."""
    if isinstance(value, dict):
        return {str(key): _stringified(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_stringified(item) for item in value]
    return str(value)


def _base_load(text: str):
    return yaml.load(text, Loader=yaml.BaseLoader)


def _fast(text: str):
    result = simple_yaml._fast_loads(text)
    return None if result is simple_yaml._NOT_SUBSET else ("fast", result)


# -- known shapes -----------------------------------------------------------------------

REGISTRY_LIKE = {
    "workflows": {
        "solve-issue": {
            "hash": "3WF8ZA0SDSMWY",
            "timestamp": 1795307079381,
            "source": "02QK1JAC3DDRS",
            "history": [
                {"hash": "0123456789012", "timestamp": 1700000000000},
                {"hash": "5GF21M0TCFMT6", "timestamp": 1600000000000, "source": "DZENXJ6M968DR"},
            ],
        },
        "analyze-topic": {"hash": "5E5R9DHJT2TD9", "timestamp": 1, "history": []},
    }
}

THREADS_LIKE = {"01ARZ3NDEKTSV4RRFFQ69G5FAV": "0123456789012", "01J0000000000000000000000Z": "56GP9CC0KVQF8"}

CASES = [
    REGISTRY_LIKE,
    THREADS_LIKE,
    {},
    {"a": {}},
    {"a": []},
    {"a": "", "b": " ", "c": "  padded  "},
    {"quote": 'say "hi"', "backslash": "C:\\path\\x", "newline": "a\nb", "tab": "a\tb", "both": '\\"\n'},
    {"yes": "no", "true": "false", "null": "~", "on": "off", "y": "n"},
    {"num": "123", "float": "1.5", "exp": "1e3", "hex": "0x1F", "octal": "0o17", "neg": "-1", "under": "1_000"},
    {"colon": "a: b", "hash": "a #b", "dash": "- x", "flow": "{a: b}", "seq": "[1, 2]", "star": "*alias", "amp": "&anchor"},
    {"unicode": "héllo wörld ✓ 中文", "ключ": "значение"},
    {"$START": "x", "has space": "y", "0123456789012": "all-digit key", "": "empty key"},
    {"deep": {"er": {"est": {"leaf": "v", "list": [{"k": "v"}, {"k2": {"nested": "w"}}]}}}},
    {"ints": 0, "big": 2**62, "neg": -5},
    {"list": [{"a": "1", "b": {"c": "2"}, "d": [{"e": "3"}]}]},
    {"scalars": ["a", "0123456789012", 5, "", "a: b", "- x", '"q"'], "mixed": [{"k": "v"}, "s", {"solve-issue": "w"}]},
]


@pytest.mark.parametrize("value", CASES)
def test_round_trip(value):
    text = dumps(value)
    assert loads(text) == (_stringified(value) if value else None)


@pytest.mark.parametrize("value", [case for case in CASES if case])
def test_fast_reader_agrees_with_base_loader(value):
    text = dumps(value, header="a header\nover two lines")
    expected = _stringified(value)
    assert _base_load(text) == expected
    assert loads(text) == expected
    fast = _fast(text)
    if fast is not None:
        assert fast[1] == expected


def test_state_files_are_read_by_the_fast_reader():
    # registry.yaml and threads.yaml shapes never need PyYAML
    for value in (REGISTRY_LIKE, THREADS_LIKE):
        assert _fast(dumps(value, header="header")) == ("fast", _stringified(value))


def test_header_lines_are_comments():
    text = dumps({"a": "b"}, header="line one\nline two")
    assert text.splitlines()[:2] == ["# line one", "# line two"]
    assert loads(text) == {"a": "b"}


def test_every_string_value_is_double_quoted():
    text = dumps({"workflows": {"solve-issue": {"hash": "0123456789012", "timestamp": 5}}, "yes": "1"})
    assert 'hash: "0123456789012"' in text
    assert "timestamp: 5" in text
    assert '"solve-issue":' in text  # names, ids and hashes used as keys are quoted too
    assert '"yes": "1"' in text  # a YAML 1.1 boolean word is never a bare key


def test_empty_document_is_none():
    assert loads("") is None
    assert loads("# only a comment\n\n") is None


# -- all-digit hashes stay strings ------------------------------------------------------


@pytest.mark.parametrize("digits", ["0123456789012", "1234567890123", "0000000000000", "0000000000010", "0777"])
def test_all_digit_hash_written_and_read_back_is_a_string(digits):
    text = dumps({"workflows": {"w": {"hash": digits, "timestamp": 1}}, digits: digits})
    data = loads(text)
    assert data["workflows"]["w"]["hash"] == digits
    assert isinstance(data["workflows"]["w"]["hash"], str)
    assert data[digits] == digits


def test_all_digit_hash_would_be_an_int_to_a_typed_reader():
    # why the quoting and the string-only reader matter
    assert yaml.safe_load("hash: 1234567890123\n")["hash"] == 1234567890123
    assert loads(dumps({"hash": "1234567890123"})) == {"hash": "1234567890123"}


@pytest.mark.parametrize("digits", ["0123456789012", "1234567890123"])
def test_hand_written_unquoted_all_digit_hash_is_a_string(digits):
    assert loads(f"hash: {digits}\n") == {"hash": digits}
    assert loads(f"a: {{hash: {digits}}}\n") == {"a": {"hash": digits}}  # flow style: fallback


def test_integers_read_back_as_strings():
    assert loads(dumps({"timestamp": 1700000000000})) == {"timestamp": "1700000000000"}


# -- randomized agreement with BaseLoader ----------------------------------------------

_ALPHABET = list("abcXYZ019 _-.:$/#'\"\\\n\t{}[],&*!|>%@`?é中") + ["  ", ": ", " #", "- ", "\\n", '\\"']
_WORDS = ["yes", "no", "null", "true", "~", "0123456789012", "1e3", "0x1F", "-1", "", "on", "Off", "NULL", ".inf", "-", "---", "...", "a: b", "a:b", '"q"', "- x"]
_KEYS = ["hash", "timestamp", "history", "workflows", "source", "a", "Cap", "yes", "no", "null", "x1"]


def _random_text(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return rng.choice(_WORDS)
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(0, 9)))


def _random_item(rng: random.Random, depth: int):
    roll = rng.random()
    if roll < 0.3:
        return _random_text(rng)
    if roll < 0.4:
        return rng.randrange(-(10**6), 10**6)
    return _random_mapping(rng, depth + 1) or {"k": "v"}


def _random_mapping(rng: random.Random, depth: int) -> dict:
    result = {}
    for _ in range(rng.randrange(0, 4)):
        key = rng.choice(_KEYS) if rng.random() < 0.5 else _random_text(rng)
        roll = rng.random()
        if depth > 3 or roll < 0.4:
            value = _random_text(rng)
        elif roll < 0.55:
            value = rng.randrange(-(10**15), 10**15)
        elif roll < 0.8:
            value = _random_mapping(rng, depth + 1)
        else:
            value = [_random_item(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
        result[key] = value
    return result


@pytest.mark.parametrize("seed", range(20))
def test_random_documents_round_trip_and_agree_with_base_loader(seed):
    rng = random.Random(seed)
    for _ in range(150):
        value = _random_mapping(rng, 0) or {"a": "b"}
        text = dumps(value, header="h")
        expected = _stringified(value)
        assert _base_load(text) == expected, text
        assert loads(text) == expected, text
        fast = _fast(text)
        if fast is not None:
            assert fast[1] == expected, text


@pytest.mark.parametrize("text", ["a\rb", "a\x00b", "a\x1bb", "a\x7fb", "a\x85b"])
def test_control_characters_are_written_as_valid_yaml(text):
    data = dumps({"k": text})
    assert _base_load(data) == {"k": text}
    assert loads(data) == {"k": text}


# -- hand-edited files outside the subset: the BaseLoader fallback --------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("workflows: {solve: {hash: 0123456789012, timestamp: 5}}\n", {"workflows": {"solve": {"hash": "0123456789012", "timestamp": "5"}}}),
        ("a: b   # a trailing comment\n", {"a": "b"}),
        ("a: 'single quoted'\n", {"a": "single quoted"}),
        ("list: [x, [y]]\n", {"list": ["x", ["y"]]}),  # nested flow: PyYAML's
        ("a: |\n  line one\n  line two\n", {"a": "line one\nline two\n"}),
        ("a: ~\nb: null\nc: true\n", {"a": "~", "b": "null", "c": "true"}),
        ("a: b   \n", {"a": "b"}),
        ('"a": 1\n"a": 2\n', {"a": "2"}),
        ("- a\n- b\n", ["a", "b"]),
        ("a: -5\n", {"a": "-5"}),
        ("a: \"\\u00e9\\x41\"\n", {"a": "éA"}),
    ],
)
def test_hand_edited_yaml_outside_the_subset_still_loads(text, expected):
    assert _fast(text) is None  # not the subset: the fallback reads it
    assert loads(text) == expected
    assert loads(text) == _base_load(text)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a:\n    b: c\n    d:\n      - e: f\n        g: h\n", {"a": {"b": "c", "d": [{"e": "f", "g": "h"}]}}),
        ("a:\n- b: c\n", {"a": [{"b": "c"}]}),  # list not indented under its key
        ('a: "é"\n', {"a": "é"}),
        ("list: [x, y]\n", {"list": ["x", "y"]}),  # one-line flow of scalars: the fast reader's
    ],
)
def test_hand_edited_yaml_in_other_indentations_loads(text, expected):
    assert loads(text) == expected == _base_load(text)


def test_hand_edited_subset_yaml_with_extra_blank_lines_and_comments():
    text = '# edited by hand\n\nworkflows:\n\n  # the main one\n  "solve":\n    hash: "ABC"\n'
    assert loads(text) == {"workflows": {"solve": {"hash": "ABC"}}}


# -- syntax errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, line",
    [
        ("a: [1, 2\nb: c\n", 2),
        ("a: b\n  c: d\n", 2),
        ('a: "b"\nc: "unterminated\n', 3),
        ("a:\n  - b: 1\n  c: 2\n", 3),
        ("ok: 1\nok2: 2\n  bad: [\n", 3),
    ],
)
def test_syntax_error_names_the_line(text, line):
    with pytest.raises(YamlSyntaxError) as info:
        loads(text)
    message = str(info.value)
    assert message.startswith(f"line {line}: ")
    assert "\n" not in message


def test_syntax_error_is_not_a_pyyaml_exception():
    with pytest.raises(YamlSyntaxError) as info:
        loads("a: [\n")
    assert not isinstance(info.value, yaml.YAMLError)


def test_dumps_writes_booleans_as_yaml_does():
    assert dumps({"a": True, "b": False}) == "a: true\nb: false\n"


def test_dumps_refuses_what_it_cannot_write():
    with pytest.raises(TypeError):
        dumps({"a": None})
    with pytest.raises(TypeError):
        dumps({"a": 1.5})
    with pytest.raises(TypeError):
        dumps({"a": [None]})
    with pytest.raises(TypeError):
        dumps({"a": [{}]})


_FLOW_TOKENS = ["x", "-c", "--flag", "a b", "run  twice", '"q, r"', '"\\n"', '"say \\"hi\\""', "-", "--", "1", "k: v", "a:b",
                "'s'", "[n]", "{m}", "", " ", "#c", "~", "http://h/p", "-1", "? x", "[-c, \"q r\"]", "[a b, -x]", "[]", "[x,]"]


@pytest.mark.parametrize("seed", range(300))
def test_flow_collections_read_fast_agree_with_base_loader(seed):
    """Hand-written config uses one-line flow collections (`args: [-c, "x"]`); whatever the fast
    reader accepts of them it must read exactly as PyYAML's BaseLoader does."""
    rng = random.Random(seed)
    items = [rng.choice(_FLOW_TOKENS) for _ in range(rng.randint(0, 4))]
    if rng.random() < 0.5:
        text = f"a: [{', '.join(items)}]\n"
    else:
        text = "a: {" + ", ".join(f"k{i}: {item}" for i, item in enumerate(items)) + "}\n"
    try:
        expected = yaml.load(text, Loader=yaml.BaseLoader)
    except yaml.YAMLError:
        expected = None
    fast = _fast_loads(text)
    if fast is not _NOT_SUBSET:
        assert fast == expected, text


def test_config_in_flow_style_is_read_without_pyyaml():
    text = 'agents:\n  c: {command: claude, protocol: text}\n  s:\n    command: sh\n    args: [-c, "printf -- \\"---\\\\n\\""]\n'
    assert _fast_loads(text) == yaml.load(text, Loader=yaml.BaseLoader)
