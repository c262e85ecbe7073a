"""Deterministic CBOR (design §4): the exact bytes the reference library hashes."""

from __future__ import annotations

import struct

import pytest

from uwf_core.encoding.cbor import TooManyItems, decode, decode_envelope, encode
from uwf_core.errors import CorruptError

MAX_SAFE = 2**53 - 1


# -- integers: the smallest head that holds the value ------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        (0, "00"),
        (1, "01"),
        (23, "17"),
        (24, "1818"),
        (255, "18ff"),
        (256, "190100"),
        (65535, "19ffff"),
        (65536, "1a00010000"),
        (2**32 - 1, "1affffffff"),
        (2**32, "1b0000000100000000"),
        (MAX_SAFE, "1b001fffffffffffff"),
    ],
)
def test_unsigned_integers_use_the_smallest_width(value, expected):
    assert encode(value).hex() == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        (-1, "20"),
        (-24, "37"),
        (-25, "3818"),
        (-256, "38ff"),
        (-257, "390100"),
        (-65536, "39ffff"),
        (-65537, "3a00010000"),
        (-(2**32), "3affffffff"),
        (-(2**32) - 1, "3b0000000100000000"),
        (-MAX_SAFE, "3b001ffffffffffffe"),
    ],
)
def test_negative_integers_use_major_type_1(value, expected):
    assert encode(value).hex() == expected


@pytest.mark.parametrize(
    "value, as_int",
    [(30.0, 30), (0.0, 0), (1.0, 1), (-1.0, -1), (255.0, 255), (-257.0, -257), (float(MAX_SAFE), MAX_SAFE), (-float(MAX_SAFE), -MAX_SAFE)],
)
def test_integral_floats_are_encoded_as_integers(value, as_int):
    assert encode(value) == encode(as_int)


def test_integral_float_30_is_one_byte_head():
    assert encode(30.0) == bytes([0x18, 30])


@pytest.mark.parametrize("value", [1.5, -0.5, 0.1, 3.141592653589793, 1e-300, 1e300, -12345.678])
def test_non_integral_numbers_are_float64(value):
    data = encode(value)
    assert data[0] == 0xFB
    assert len(data) == 9
    assert data[1:] == struct.pack(">d", value)


def test_float64_even_when_a_smaller_float_would_do():
    # cbor2's canonical mode would shrink 1.5 to a half float (0xf9 3e00); the reference does not.
    assert encode(1.5).hex() == "fb3ff8000000000000"


@pytest.mark.parametrize("value", [2**53, -(2**53), 2**60, -(2**60), 2**64 - 1])
def test_integers_beyond_the_safe_range_are_float64(value):
    data = encode(value)
    assert data[0] == 0xFB
    assert data[1:] == struct.pack(">d", float(value))


@pytest.mark.parametrize("value", [float(2**53), 2.0**60, -(2.0**53)])
def test_integral_floats_beyond_the_safe_range_are_float64(value):
    assert encode(value) == b"\xfb" + struct.pack(">d", value)


def test_simple_values():
    assert encode(None) == b"\xf6"
    assert encode(True) == b"\xf5"
    assert encode(False) == b"\xf4"
    assert encode([None, True, False]).hex() == "83f6f5f4"


def test_booleans_are_not_integers():
    assert encode(True) != encode(1)
    assert encode(False) != encode(0)


def test_text_strings():
    assert encode("").hex() == "60"
    assert encode("a").hex() == "6161"
    assert encode("é") == bytes([0x62]) + "é".encode()
    long = "x" * 24
    assert encode(long) == bytes([0x78, 24]) + long.encode()
    assert encode("x" * 300)[:3] == bytes([0x79, 0x01, 0x2C])


def test_arrays():
    assert encode([]).hex() == "80"
    assert encode([1, 2, 3]).hex() == "83010203"
    assert encode((1, 2)) == encode([1, 2])
    assert encode(list(range(24)))[:2] == bytes([0x98, 24])


def test_map_keys_sorted_shorter_first_then_bytewise():
    data = encode({"bb": 1, "a": 2, "c": 3, "aa": 4})
    # a, c (length 1) before aa, bb (length 2)
    assert data.hex() == "a4" + "616102" + "616303" + "62616104" + "62626201"


def test_map_key_order_is_independent_of_insertion_order():
    first = {"zeta": 1, "b": [1, 2], "alpha": {"y": 1, "x": 2}, "B": None}
    second = {"alpha": {"x": 2, "y": 1}, "B": None, "zeta": 1, "b": [1, 2]}
    assert encode(first) == encode(second)


def test_map_keys_bytewise_within_a_length():
    # "B" (0x42) sorts before "a" (0x61); "é" (2 UTF-8 bytes) after every 1-byte key
    data = encode({"a": 0, "é": 0, "B": 0})
    assert data == bytes([0xA3]) + b"\x61B\x00" + b"\x61a\x00" + b"\x62" + "é".encode() + b"\x00"


def test_empty_map():
    assert encode({}).hex() == "a0"


def test_non_string_keys_and_unknown_types_are_refused():
    from uwf_core.encoding.cbor import EncodeError

    with pytest.raises(EncodeError):
        encode({1: "x"})
    with pytest.raises(EncodeError):
        encode(b"bytes")
    with pytest.raises(EncodeError):
        encode({"a": object()})
    with pytest.raises(EncodeError):
        encode(float("nan"))
    with pytest.raises(EncodeError):
        encode("\ud800")


# -- decoding ----------------------------------------------------------------------


ROUND_TRIP = [
    0,
    23,
    24,
    -1,
    -25,
    2**32,
    MAX_SAFE,
    -MAX_SAFE,
    1.5,
    -0.25,
    1e300,
    "",
    "hello",
    "ünïcødé ✓",
    None,
    True,
    False,
    [],
    {},
    [1, "two", 3.5, None, [True, False], {"k": "v"}],
    {"name": "Alice", "age": 30, "tags": ["a", "b"], "nested": {"deep": {"deeper": [1, 2, {"x": None}]}}},
    {"x" * 30: "y" * 300},
]


@pytest.mark.parametrize("value", ROUND_TRIP)
def test_round_trip(value):
    assert decode(encode(value)) == value


def test_round_trip_integral_float_comes_back_as_int():
    assert decode(encode(30.0)) == 30
    assert isinstance(decode(encode(30.0)), int)


def test_decode_reads_smaller_floats_written_by_others():
    assert decode(bytes.fromhex("f93e00")) == 1.5  # half
    assert decode(bytes.fromhex("fa3fc00000")) == 1.5  # single


def test_decode_envelope_returns_exact_payload_bytes():
    payload = {"b": [1, 2.5, "x", None, True], "a": {"c": "d"}}
    envelope = {"type": "56GP9CC0KVQF8", "payload": payload, "timestamp": 1700000000000}
    data = encode(envelope)
    decoded, payload_bytes = decode_envelope(data)
    assert decoded == envelope
    assert payload_bytes == encode(payload)
    assert data.find(payload_bytes) >= 0


def test_decode_envelope_payload_bytes_are_as_stored_not_reencoded():
    # a non-canonical payload (keys out of order) is returned byte for byte, so
    # verification against the name detects the edit instead of re-canonicalizing it
    noncanonical_payload = bytes.fromhex("a2" + "616202" + "616101")  # {"b": 2, "a": 1}
    data = bytes([0xA1]) + encode("payload") + noncanonical_payload
    decoded, payload_bytes = decode_envelope(data)
    assert decoded == {"payload": {"b": 2, "a": 1}}
    assert payload_bytes == noncanonical_payload
    assert payload_bytes != encode({"b": 2, "a": 1})


def test_decode_envelope_scalar_payload():
    data = encode({"type": "F1T74N293WADE", "payload": "hello", "timestamp": 5})
    decoded, payload_bytes = decode_envelope(data)
    assert decoded["payload"] == "hello"
    assert payload_bytes == encode("hello")


# -- corrupt input ------------------------------------------------------------------

SAMPLE = encode({"type": "56GP9CC0KVQF8", "payload": {"a": [1, 2.5, "x", None, True], "bb": {"c": "d"}}, "timestamp": 1700000000000})


@pytest.mark.parametrize("cut", range(len(SAMPLE)))
def test_every_truncation_raises_corrupt_error(cut):
    with pytest.raises(CorruptError):
        decode(SAMPLE[:cut])
    with pytest.raises(CorruptError):
        decode_envelope(SAMPLE[:cut])


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xff",  # break code, not allowed
        b"\x1c",  # reserved additional info
        b"\x5f",  # indefinite byte string
        b"\x42ab",  # byte string: not JSON
        b"\xc1\x00",  # tag
        b"\x7f",  # indefinite text string
        b"\x62\xff\xfe",  # text that is not UTF-8
        b"\xa1\x01\x02",  # map with an integer key
        b"\xf7",  # undefined
        b"\x00\x00",  # trailing bytes
        b"\x1b\x00\x00",  # truncated 8-byte argument
        b"\xfb\x00\x00",  # truncated float
    ],
)
def test_garbage_raises_corrupt_error(data):
    with pytest.raises(CorruptError):
        decode(data)


@pytest.mark.parametrize("data", [b"", b"\x80", b"\x00", b"\x61a", b"\xa1\x61a\x00\x00", b"\xa2\x61a"])
def test_decode_envelope_garbage_raises_corrupt_error(data):
    with pytest.raises(CorruptError):
        decode_envelope(data)


def test_corrupt_error_names_the_byte_offset():
    with pytest.raises(CorruptError, match=r"invalid CBOR at byte \d+"):
        decode(b"\x82\x01")


def test_decode_envelope_with_unhashable_key_raises_corrupt_error():
    with pytest.raises(CorruptError):
        decode_envelope(b"\xa1\x80\x00")  # {[]: 0}


def test_deeply_nested_garbage_raises_corrupt_error():
    with pytest.raises(CorruptError):
        decode(b"\x81" * 5000 + b"\x00")


# -- an item budget for untrusted input (a bundle's nodes) ---------------------------

ITEMS = encode({"a": [1, 2], "b": None})  # the map, two keys, the array and its two elements, null: 7 items


def test_a_budget_changes_nothing_for_input_within_it():
    assert decode(ITEMS, max_items=1_000_000) == decode(ITEMS)
    assert decode_envelope(SAMPLE, max_items=1_000_000) == decode_envelope(SAMPLE)


def test_every_element_key_and_value_counts():
    assert decode(ITEMS, max_items=7) == {"a": [1, 2], "b": None}
    with pytest.raises(TooManyItems, match="more than 6 items"):
        decode(ITEMS, max_items=6)
    assert decode(b"\x00", max_items=1) == 0


def test_a_container_over_the_budget_is_refused_on_its_header_before_any_item_is_made():
    declared = b"\x9a" + (30_000_000).to_bytes(4, "big") + b"\xf6" * 10  # declares 30 million nulls, holds 10
    with pytest.raises(TooManyItems, match="more than 1,000,000 items \\(arrays, maps and what they hold\\), at byte 5"):
        decode(declared, max_items=1_000_000)
    with pytest.raises(CorruptError, match="unexpected end"):
        decode(declared)  # no budget: the hot path reads on until the bytes run out
    assert issubclass(TooManyItems, CorruptError)  # every caller of the decoder already handles it


def test_decode_envelope_counts_the_envelope_too():
    data = encode({"type": "F1T74N293WADE", "payload": [1, 2], "timestamp": 0})  # 1 + 3 keys + 3 values + 2 elements
    assert decode_envelope(data, max_items=9) == decode_envelope(data)
    with pytest.raises(TooManyItems):
        decode_envelope(data, max_items=8)
    with pytest.raises(TooManyItems, match="at byte 5"):
        decode_envelope(b"\xba" + (10**9).to_bytes(4, "big"), max_items=100)  # a billion pairs, refused on the header


def test_the_budget_keeps_the_nesting_limit():
    with pytest.raises(CorruptError, match="nested deeper than 200 levels"):
        decode(b"\x81" * 5000 + b"\x00", max_items=1_000_000)


@pytest.mark.parametrize("payload", [None, "text", {"b": [1, 2.5, {"deep": True}], "a": ""}, list(range(30)), "é" * 300])
@pytest.mark.parametrize("timestamp", [0, 23, 1_764_000_000_000])
def test_an_envelope_around_a_payloads_encoding_is_the_envelope_encoded_whole(payload, timestamp):
    from uwf_core.encoding.cbor import envelope_bytes

    whole = encode({"type": "7XX5H51CVD9H0", "payload": payload, "timestamp": timestamp}, envelope=True)
    assert envelope_bytes("7XX5H51CVD9H0", encode(payload), timestamp) == whole
