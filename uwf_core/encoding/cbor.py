"""Deterministic CBOR, exactly as the reference CAS library (json-cas) hashes it.

A small encoder for the JSON subset is used rather than cbor2: cbor2's
canonical mode shrinks floats to half/single precision and keeps integral
floats as floats, while the reference writes every non-integral number as an
8-byte float64 and every integral number within ±(2^53-1) as an integer.
"""

from __future__ import annotations

import struct

from ..errors import CorruptError

_MAX_SAFE = 2**53 - 1
MAX_DEPTH = 200  # JSON documents are shallow; anything deeper is garbage, not data


class EncodeError(ValueError):
    """A value that has no JSON-compatible CBOR form (NaN, a lone surrogate, a non-string key...)."""


class TooManyItems(CorruptError):
    """Input holding more items than the decoder was allowed to make (`max_items`)."""


_pack_double = struct.Struct(">d").pack
_unpack_double = struct.Struct(">d").unpack_from
_unpack_single = struct.Struct(">f").unpack_from
_unpack_half = struct.Struct(">e").unpack_from


def _head(major: int, value: int) -> bytes:
    major <<= 5
    if value < 24:
        return bytes((major | value,))
    if value < 0x100:
        return bytes((major | 24, value))
    if value < 0x10000:
        return bytes((major | 25,)) + value.to_bytes(2, "big")
    if value < 0x100000000:
        return bytes((major | 26,)) + value.to_bytes(4, "big")
    return bytes((major | 27,)) + value.to_bytes(8, "big")


def text_head(length: int) -> bytes:
    """The head of a text string of `length` UTF-8 bytes: with the bytes after it, its encoding
    (a large file's, written in pieces)."""
    return _head(3, length)


def envelope_bytes(type_hash: str, payload: bytes, timestamp: int) -> bytes:
    """A node's envelope around its payload's encoding: what `encode` gives for {type, payload,
    timestamp} (envelope=True), without encoding the payload again. The keys in their encoded
    order (a shorter key first): type, payload, timestamp."""
    return b"\xa3\x64type" + _encode_text(type_hash) + b"\x67payload" + payload + b"\x69timestamp" + _encode_number(timestamp)


def _encode_number(value: float | int) -> bytes:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        raise EncodeError(f"{value} is not a JSON number: uwf refuses NaN and ±Infinity (the reference stores them as CBOR floats no JSON reader gives back)")
    if isinstance(value, float):
        if value.is_integer() and abs(value) <= _MAX_SAFE:
            value = int(value)
        else:
            return b"\xfb" + _pack_double(value)
    if abs(value) > _MAX_SAFE:
        try:
            return b"\xfb" + _pack_double(float(value))
        except OverflowError:
            raise EncodeError(f"the number {str(value)[:20]}... is too large for a JSON number") from None
    if value >= 0:
        return _head(0, value)
    return _head(1, -1 - value)


def _encode_text(value: str) -> bytes:
    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError:
        raise EncodeError(
            "a string holds a lone surrogate, which is not Unicode: uwf refuses it (the reference would store U+FFFD in its place, silently)"
        ) from None
    return _head(3, len(data)) + data


def _encode_into(value: object, out: list[bytes], room: int) -> None:
    """`room`: how many more levels of arrays and objects may open (the decoder's limit)."""
    if value is None:
        out.append(b"\xf6")
    elif value is True:
        out.append(b"\xf5")
    elif value is False:
        out.append(b"\xf4")
    elif isinstance(value, str):
        out.append(_encode_text(value))
    elif isinstance(value, (int, float)):
        out.append(_encode_number(value))
    elif isinstance(value, (dict, list, tuple)) and room <= 0:
        raise EncodeError(f"nested deeper than {MAX_DEPTH} levels")
    elif isinstance(value, dict):
        items = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise EncodeError(f"object keys must be strings, not {type(key).__name__} {key!r}")
            sub: list[bytes] = []
            _encode_into(item, sub, room - 1)
            items.append((_encode_text(key), b"".join(sub)))
        items.sort(key=lambda pair: pair[0])
        out.append(_head(5, len(items)))
        for key_bytes, item_bytes in items:
            out.append(key_bytes)
            out.append(item_bytes)
    elif isinstance(value, (list, tuple)):
        out.append(_head(4, len(value)))
        for item in value:
            _encode_into(item, out, room - 1)
    else:
        raise EncodeError(f"{type(value).__name__} is not a JSON value")


def encode(value: object, *, envelope: bool = False) -> bytes:
    """Deterministic CBOR of a JSON-compatible value (EncodeError for anything else, or for
    nesting the decoder would refuse: one limit, so nothing stored is unreadable). A node's
    envelope may add its own level around a payload at the limit."""
    out: list[bytes] = []
    try:
        _encode_into(value, out, MAX_DEPTH + 1 if envelope else MAX_DEPTH)
    except RecursionError:
        raise EncodeError("the value is nested too deeply") from None
    return b"".join(out)


_FLOAT_UNPACK = {25: (2, _unpack_half), 26: (4, _unpack_single), 27: (8, _unpack_double)}
_SIMPLE = {20: False, 21: True, 22: None}
_ARG_SIZE = {24: 1, 25: 2, 26: 4, 27: 8}


class _Decoder:
    """A recursive-descent decoder for the JSON subset; hot on every chain walk, so
    kept to local variables and one method per item."""

    __slots__ = ("data", "pos", "depth")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.depth = 0

    def fail(self, what: str) -> CorruptError:
        return CorruptError(f"invalid CBOR at byte {self.pos}: {what}")

    def argument(self, info: int) -> int:
        if info < 24:
            return info
        size = _ARG_SIZE.get(info)
        pos = self.pos
        if size is None or pos + size > len(self.data):
            raise self.fail("bad length")
        self.pos = pos + size
        return int.from_bytes(self.data[pos : pos + size], "big")

    def value(self) -> object:
        data = self.data
        pos = self.pos
        if pos >= len(data):
            raise self.fail("unexpected end")
        initial = data[pos]
        self.pos = pos + 1
        major = initial >> 5
        info = initial & 31
        if major == 3:
            length = info if info < 24 else self.argument(info)
            start = self.pos
            end = start + length
            if end > len(data):
                raise self.fail("truncated string")
            self.pos = end
            try:
                return data[start:end].decode("utf-8")
            except UnicodeDecodeError:
                raise self.fail("string is not UTF-8") from None
        if major == 5:
            count = info if info < 24 else self.argument(info)
            result = {}
            value = self.value
            self.enter(count + count)
            for _ in range(count):
                key = value()
                if key.__class__ is not str:
                    raise self.fail("map key is not a string")
                result[key] = value()
            self.depth -= 1
            return result
        if major == 0:
            return info if info < 24 else self.argument(info)
        if major == 4:
            count = info if info < 24 else self.argument(info)
            value = self.value
            self.enter(count)
            items = [value() for _ in range(count)]
            self.depth -= 1
            return items
        if major == 1:
            return -1 - (info if info < 24 else self.argument(info))
        if major == 7:
            return self.simple(info)
        raise self.fail(f"unsupported major type {major}")

    def enter(self, count: int) -> None:
        """An array or map opens, holding `count` items (a map's keys and values both count)."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")

    def simple(self, info: int) -> object:
        if info in _SIMPLE:
            return _SIMPLE[info]
        if info not in _FLOAT_UNPACK:
            raise self.fail(f"unsupported simple value {info}")
        size, unpack = _FLOAT_UNPACK[info]
        if self.pos + size > len(self.data):
            raise self.fail("truncated float")
        (number,) = unpack(self.data, self.pos)
        self.pos += size
        return number


class _BoundedDecoder(_Decoder):
    """The decoder for untrusted input: every array's and map's declared count is charged to a
    budget before any of its items is made, so input over the budget is refused having made
    almost nothing (an array of 30 million nulls is refused at its first byte). Apart, so the
    hot path of every chain walk carries no counter."""

    __slots__ = ("left", "max_items")

    def __init__(self, data: bytes, max_items: int) -> None:
        super().__init__(data)
        self.max_items = max_items
        self.left = max_items - 1  # the outermost item

    def enter(self, count: int) -> None:
        self.charge(count)
        _Decoder.enter(self, count)

    def charge(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise TooManyItems(f"more than {self.max_items:,} items (arrays, maps and what they hold), at byte {self.pos}")


def _decoder(data: bytes, max_items: int | None) -> _Decoder:
    return _Decoder(data) if max_items is None else _BoundedDecoder(data, max_items)


def decode(data: bytes, *, max_items: int | None = None) -> object:
    """Decode one CBOR item that must span the whole input. `max_items` (for untrusted input):
    TooManyItems when it holds more items than that, every key, value and element counting."""
    decoder = _decoder(data, max_items)
    value = decoder.value()
    if decoder.pos != len(data):
        raise decoder.fail("trailing bytes")
    return value


def decode_envelope(data: bytes, *, max_items: int | None = None) -> tuple[dict, bytes]:
    """Decode a node file and return it with the exact bytes of its payload.

    The payload bytes are hashed as stored, so a node is verified without
    re-encoding it, and any non-canonical edit shows up as corruption.
    `max_items`: as for `decode`, the envelope's own keys and values counting.
    """
    decoder = _decoder(data, max_items)
    if not data or data[0] >> 5 != 5:
        raise decoder.fail("node is not a CBOR map")
    decoder.pos = 1
    envelope: dict = {}
    payload_bytes = b""
    count = decoder.argument(data[0] & 31)
    if max_items is not None:
        decoder.charge(count + count)  # no level of nesting: the envelope may add its own
    for _ in range(count):
        key = decoder.value()
        if key.__class__ is not str:
            raise decoder.fail("map key is not a string")
        start = decoder.pos
        envelope[key] = decoder.value()
        if key == "payload":
            payload_bytes = data[start : decoder.pos]
    if decoder.pos != len(data):
        raise decoder.fail("trailing bytes")
    return envelope, payload_bytes
