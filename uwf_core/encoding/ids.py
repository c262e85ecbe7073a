"""Identifiers: XXH64 node hashes as 13-char Crockford Base32, and ULID thread ids."""

from __future__ import annotations

from ..errors import UwfError

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
HASH_LEN = 13
ULID_LEN = 26
_CROCKFORD_SET = frozenset(CROCKFORD)


def encode_u64(value: int) -> str:
    """13 Crockford chars, 5 bits at a time from the least significant end."""
    chars = []
    for _ in range(HASH_LEN):
        chars.append(CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def xxh64_hash(data: bytes) -> str:
    """The project's hash of a byte string: XXH64, seed 0, Crockford-encoded."""
    return encode_u64(xxh64_digest(data))


def xxh64_digest(data: bytes) -> int:
    """XXH64, seed 0, as an unsigned 64-bit integer."""
    import xxhash

    return xxhash.xxh64_intdigest(data)


def is_hash(text: object) -> bool:
    """True for a well-formed, upper-case 13-character hash."""
    return (
        isinstance(text, str)
        and len(text) == HASH_LEN
        and "0" <= text[0] <= "F"
        and _CROCKFORD_SET.issuperset(text)
    )


def is_cas_ref(text: object) -> bool:
    """The `cas_ref` string format: 13 characters of the Crockford alphabet."""
    return isinstance(text, str) and len(text) == HASH_LEN and _CROCKFORD_SET.issuperset(text)


def normalize_hash_text(text: str) -> str:
    """Upper-case a hash or hash prefix typed by a user; refuse characters outside the alphabet."""
    value = text.strip().upper()
    if not value:
        raise UwfError("empty hash")
    if len(value) > HASH_LEN:
        raise UwfError(f"'{text}' is not a hash: longer than {HASH_LEN} characters")
    bad = sorted(set(value) - _CROCKFORD_SET)
    if bad:
        raise UwfError(f"'{text}' is not a hash: unexpected character {bad[0]!r}")
    return value


def new_ulid() -> str:
    """A fresh, standard 26-character ULID (python-ulid, imported only here)."""
    from ulid import ULID

    return str(ULID())


def derived_ulid(ms: int, key: bytes) -> str:
    """A ULID whose time is `ms` and whose 80 random bits are a hash of `key`: the same key gives
    the same id, so a thread can be found again from what it was made for (a map's child)."""
    bits = (xxh64_digest(key) << 16) | (xxh64_digest(key + b"\x01") & 0xFFFF)
    value = ((ms & ((1 << 48) - 1)) << 80) | bits
    chars = []
    for _ in range(ULID_LEN):
        chars.append(CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def is_ulid(text: object) -> bool:
    return (
        isinstance(text, str)
        and len(text) == ULID_LEN
        and "0" <= text[0] <= "7"
        and _CROCKFORD_SET.issuperset(text)
    )


def ulid_timestamp_ms(thread_id: str) -> int:
    """The creation time encoded in a ULID's first 10 characters."""
    return crockford_value(thread_id[:10])


def crockford_value(text: str) -> int:
    """The number Crockford Base32 `text` writes, most significant character first."""
    value = 0
    for char in text:
        value = value * 32 + CROCKFORD.index(char)
    return value
