"""Identifiers (design §4): 13-char Crockford XXH64 hashes and standard ULIDs."""

from __future__ import annotations

import random

import pytest
import xxhash

from uwf_core.encoding.ids import (
    CROCKFORD,
    HASH_LEN,
    encode_u64,
    is_cas_ref,
    is_hash,
    is_ulid,
    new_ulid,
    normalize_hash_text,
    ulid_timestamp_ms,
    xxh64_hash,
)
from uwf_core.errors import UwfError


def _decode(text: str) -> int:
    value = 0
    for char in text:
        value = value * 32 + CROCKFORD.index(char)
    return value


def test_alphabet_is_crockford():
    assert CROCKFORD == "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    assert not set("ILOU") & set(CROCKFORD)


@pytest.mark.parametrize(
    "value, expected",
    [
        (0, "0000000000000"),
        (1, "0000000000001"),
        (31, "000000000000Z"),
        (32, "0000000000010"),
        (2**64 - 1, "FZZZZZZZZZZZZ"),
        (2**63, "8000000000000"),
        (2**60, "1000000000000"),
    ],
)
def test_encode_u64_known_values(value, expected):
    assert encode_u64(value) == expected


def test_encode_u64_takes_five_bits_from_the_least_significant_end():
    value = 0x0123456789ABCDEF
    text = encode_u64(value)
    assert CROCKFORD.index(text[-1]) == value & 31
    assert CROCKFORD.index(text[-2]) == (value >> 5) & 31
    assert CROCKFORD.index(text[0]) == value >> 60
    assert _decode(text) == value


def test_encode_u64_round_trips_and_first_char_is_0_to_F():
    rng = random.Random(42)
    for _ in range(2000):
        value = rng.getrandbits(64)
        text = encode_u64(value)
        assert len(text) == HASH_LEN == 13
        assert "0" <= text[0] <= "F"
        assert text[0] in "0123456789ABCDEF"
        assert set(text) <= set(CROCKFORD)
        assert _decode(text) == value
        assert is_hash(text)


def test_xxh64_hash_is_seed_zero_xxh64():
    data = b"hello world"
    assert xxh64_hash(data) == encode_u64(xxhash.xxh64_intdigest(data, seed=0))
    assert xxh64_hash(b"") == encode_u64(0xEF46DB3751D8E999)  # XXH64 of the empty input


def test_xxh64_hash_of_many_inputs_is_a_hash():
    for index in range(500):
        text = xxh64_hash(str(index).encode())
        assert is_hash(text), text


@pytest.mark.parametrize("text", ["56GP9CC0KVQF8", "7XX5H51CVD9H0", "ERARPP19YJT05", "0000000000000", "FZZZZZZZZZZZZ", "0123456789012"])
def test_is_hash_accepts(text):
    assert is_hash(text)
    assert is_cas_ref(text)


@pytest.mark.parametrize(
    "text",
    [
        "56gp9cc0kvqf8",  # lower case: is_hash wants the canonical upper-case form
        "56GP9CC0KVQF",  # 12
        "56GP9CC0KVQF88",  # 14
        "GZZZZZZZZZZZZ",  # first char beyond F: more than 64 bits
        "ZZZZZZZZZZZZZ",
        "56GP9CC0KVQFI",  # I is not in the alphabet
        "56GP9CC0KVQFL",
        "56GP9CC0KVQFO",
        "56GP9CC0KVQFU",
        "56GP9CC0-VQF8",
        "",
        None,
        12345678901234,
        b"56GP9CC0KVQF8",
    ],
)
def test_is_hash_refuses(text):
    assert not is_hash(text)


def test_is_cas_ref_allows_any_first_character_of_the_alphabet():
    # the cas_ref format is the reference's regex ^[0-9A-HJKMNP-TV-Z]{13}$: no 0-F restriction
    assert is_cas_ref("ZZZZZZZZZZZZZ")
    assert is_cas_ref("GZZZZZZZZZZZZ")
    assert not is_hash("ZZZZZZZZZZZZZ")


@pytest.mark.parametrize("text", ["56gp9cc0kvqf8", "56GP9CC0KVQF", "56GP9CC0KVQFU", "", None, 5, "ABCDEFGHJKMN-"])
def test_is_cas_ref_refuses(text):
    assert not is_cas_ref(text)


def test_cas_ref_matches_the_reference_regex():
    import re

    pattern = re.compile(r"^[0-9A-HJKMNP-TV-Z]{13}$")
    rng = random.Random(7)
    alphabet = CROCKFORD + "ILOUilou-_ "
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.choice([12, 13, 13, 13, 14])))
        assert is_cas_ref(text) == bool(pattern.match(text)), text


# -- user-typed hashes and prefixes -----------------------------------------------------


@pytest.mark.parametrize(
    "typed, expected",
    [
        ("56gp9cc0kvqf8", "56GP9CC0KVQF8"),
        ("56GP9CC0KVQF8", "56GP9CC0KVQF8"),
        ("56Gp", "56GP"),
        ("  7xx5  ", "7XX5"),
        ("e", "E"),
        ("0123456789012", "0123456789012"),
    ],
)
def test_normalize_hash_text_is_case_insensitive(typed, expected):
    assert normalize_hash_text(typed) == expected


@pytest.mark.parametrize("typed", ["56GP9CC0KVQF8X", "0" * 14, "abcdefghjkmnpq"])
def test_normalize_hash_text_refuses_too_long(typed):
    with pytest.raises(UwfError, match="longer than 13 characters"):
        normalize_hash_text(typed)


@pytest.mark.parametrize("typed, char", [("56GI", "I"), ("abl", "L"), ("0O", "O"), ("u", "U"), ("12-3", "-"), ("ab!", "!"), ("a b", " ")])
def test_normalize_hash_text_refuses_bad_characters(typed, char):
    with pytest.raises(UwfError) as info:
        normalize_hash_text(typed)
    assert "is not a hash" in str(info.value)
    assert repr(char) in str(info.value)


@pytest.mark.parametrize("typed", ["", "   "])
def test_normalize_hash_text_refuses_empty(typed):
    with pytest.raises(UwfError, match="empty hash"):
        normalize_hash_text(typed)


# -- thread ids -----------------------------------------------------------------------


def test_new_ulid_is_a_standard_ulid():
    from ulid import ULID

    ids = {new_ulid() for _ in range(200)}
    assert len(ids) == 200
    for text in ids:
        assert len(text) == 26
        assert is_ulid(text)
        assert str(ULID.from_str(text)) == text
        assert text == text.upper()


def test_new_ulid_timestamp_is_now():
    import time

    before = int(time.time() * 1000)
    text = new_ulid()
    after = int(time.time() * 1000)
    assert before - 1 <= ulid_timestamp_ms(text) <= after + 1


@pytest.mark.parametrize(
    "text",
    [
        "01ARZ3NDEKTSV4RRFFQ69G5FA",  # 25
        "01ARZ3NDEKTSV4RRFFQ69G5FAVV",  # 27
        "81ARZ3NDEKTSV4RRFFQ69G5FAV",  # first char beyond 7: more than 128 bits
        "01ARZ3NDEKTSV4RRFFQ69G5FAU",  # U not in the alphabet
        "01arz3ndektsv4rrffq69g5fav",
        "56GP9CC0KVQF8",
        None,
    ],
)
def test_is_ulid_refuses(text):
    assert not is_ulid(text)


def test_is_ulid_accepts_a_known_ulid():
    assert is_ulid("01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert is_ulid("7ZZZZZZZZZZZZZZZZZZZZZZZZZ")
    from ulid import ULID

    assert ulid_timestamp_ms("01ARZ3NDEKTSV4RRFFQ69G5FAV") == ULID.from_str("01ARZ3NDEKTSV4RRFFQ69G5FAV").milliseconds
    assert ulid_timestamp_ms("01ARZ3NDEKTSV4RRFFQ69G5FAV") == 1469922850259
