"""The content-addressed store: meta-schema → schema nodes → data nodes.

A node is stored as the deterministic CBOR of `{type, payload, timestamp}`;
the hash covers type and payload, never the timestamp, and the first write
of a hash is kept. The bytes live wherever the backend's NodeStore keeps
them; hashing, verification and schema validation happen here, so every
backend stores the same bytes under the same names. Every read is verified
against its name.
"""

from __future__ import annotations

import time
from collections import deque

from ..encoding.records import record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..encoding.cbor import EncodeError, decode_envelope, encode, envelope_bytes
from ..encoding.ids import HASH_LEN, encode_u64, is_cas_ref, normalize_hash_text, xxh64_hash
from ..errors import (
    AmbiguousError,
    CorruptError,
    NotFoundError,
    UwfError,
    ValidationError,
)
from . import builtin_schemas
from .builtin_schemas import META_HASH
from .schemas import META_SCHEMA, check_schema, validate

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any

    from .base import NodeStore

CACHE_NODES = 50_000  # verified nodes kept per store


@record(frozen=True)
class Node:
    hash: str
    type: str
    payload: Any  # decoded CBOR, whatever the node's schema admits: typed where it is read
    timestamp: int

    def envelope(self) -> dict:
        return {"type": self.type, "payload": self.payload, "timestamp": self.timestamp}


def node_hash(type_hash: str, payload: object) -> str:
    """The hash of a node; the meta-schema alone is hashed without a type prefix."""
    return _hash_of(type_hash, payload, _encoded(payload))


def _encoded(payload: object) -> bytes:
    try:
        return encode(payload)
    except EncodeError as exc:
        raise ValidationError(f"the payload cannot be stored: {exc}") from None


def _hash_of(type_hash: str, payload: object, data: bytes) -> str:
    if type_hash == META_HASH and payload == META_SCHEMA:
        return xxh64_hash(data)
    return xxh64_hash(type_hash.encode("ascii") + data)


class CasStore:
    """The CAS over one backend's node bytes. Cheap to create: nothing is read until asked for.

    Nodes never change, so each one is read and verified once per store: a
    step asks for the start node, the workflow and the head several times.
    """

    def __init__(self, nodes: NodeStore) -> None:
        self.nodes = nodes
        self._schemas: dict[str, dict] = {}
        self._cache: dict[str, Node] = {}
        self._builtins_ready = False

    # -- writing -------------------------------------------------------------

    def ensure_builtins(self) -> dict[str, str]:
        """Register the meta-schema and the built-in schemas (idempotent)."""
        if not self._builtins_ready:
            if not self.has(META_HASH):
                self._write(META_HASH, META_HASH, META_SCHEMA)
            for name, schema in builtin_schemas.BUILTIN.items():
                if not self.has(builtin_schemas.BUILTIN_HASHES[name]):
                    self.put_schema(schema)
            self._builtins_ready = True
        return dict(builtin_schemas.BUILTIN_HASHES)

    def put_schema(self, schema: object, *, where: str = "schema") -> str:
        """Store a JSON Schema node after checking its keywords."""
        check_schema(schema, where)
        if not self.has(META_HASH):
            self._write(META_HASH, META_HASH, META_SCHEMA)
        return self._put_checked(META_HASH, schema)

    def put(self, type_hash: str, payload: object, *, what: str = "payload") -> str:
        """Validate `payload` against the schema `type_hash` and store it."""
        type_hash = self.resolve(type_hash)
        if type_hash == META_HASH:
            return self.put_schema(payload)
        schema = self.schema(type_hash)
        data = _encoded(payload)  # once: for the hash, then inside the envelope
        hash_ = _hash_of(type_hash, payload, data)
        if self.nodes.freshen(hash_):
            return hash_
        validate(schema, payload, what=what, schema_hash=type_hash)
        self._write(hash_, type_hash, payload, data)
        return hash_

    def put_built(self, type_hash: str, payload: object) -> str:
        """Store a payload uwf built itself from typed values, whose shape its schema cannot refuse
        (a workspace tree from its entries: workspace/tree.py): without the schema check `put`
        makes of anything that came from outside. `type_hash` must be a full hash."""
        return self._put_checked(type_hash, payload)

    def put_encoded(self, type_hash: str, payload_pieces: Callable[[], Iterable[bytes]]) -> str:
        """A node whose payload comes as the pieces of its encoding, called for once to hash them and
        once more to write them: a large file's bytes are never copied whole. The caller vouches
        that the pieces are the encoding of a payload valid for `type_hash` (workspace/tree.py
        makes them for a content or bytes node, and its tests hold them to `put`'s hash)."""
        import xxhash

        digest = xxhash.xxh64(type_hash.encode("ascii"))
        for piece in payload_pieces():
            digest.update(piece)
        hash_ = encode_u64(digest.intdigest())
        if self.nodes.freshen(hash_):
            return hash_
        marker = b"\0uwf: the payload goes here\0"
        before, after = envelope_bytes(type_hash, marker, int(time.time() * 1000)).split(marker)

        def pieces() -> Iterator[bytes]:
            yield before
            yield from payload_pieces()
            yield after

        write_pieces = getattr(self.nodes, "write_pieces", None)
        if write_pieces is not None:
            write_pieces(hash_, type_hash, pieces)
        else:
            self.nodes.write(hash_, type_hash, b"".join(pieces()))
        return hash_

    def _put_checked(self, type_hash: str, payload: object) -> str:
        data = _encoded(payload)
        hash_ = _hash_of(type_hash, payload, data)
        if not self.nodes.freshen(hash_):
            self._write(hash_, type_hash, payload, data)
        return hash_

    def _write(self, hash_: str, type_hash: str, payload: object, data: bytes | None = None) -> None:
        """`data`: the payload's encoding when the caller has it (it is not encoded again)."""
        data = _encoded(payload) if data is None else data
        self.nodes.write(hash_, type_hash, envelope_bytes(type_hash, data, int(time.time() * 1000)))

    def cache_derived(self, items: list[tuple[str, bytes]]) -> None:
        """Keep derived data a read computed (a head's step counts, its spend) in one commit. It is
        a cache: on a read-only root or a full disk it is not kept, and the read goes on."""
        try:
            with self.nodes.batch():
                for key, value in items:
                    self.nodes.put_derived(key, value)
        except UwfError:
            pass

    # -- reading -------------------------------------------------------------

    def has(self, hash_: str) -> bool:
        return hash_ in self._cache or self.nodes.exists(hash_)

    def resolve(self, text: str) -> str:
        """A full hash from a hash or unambiguous prefix (case-insensitive)."""
        prefix = normalize_hash_text(text)
        if len(prefix) == HASH_LEN:
            if not self.has(prefix):
                raise NotFoundError(f"no node {prefix} in {self.nodes.location}")
            return prefix
        matches = [hash_ for hash_ in self.nodes.hashes() if hash_.startswith(prefix)]
        if not matches:
            raise NotFoundError(f"no node matches '{text}'")
        if len(matches) > 1:
            shown = ", ".join(sorted(matches)[:5])
            raise AmbiguousError(f"'{text}' is ambiguous: {len(matches)} nodes match ({shown}{', ...' if len(matches) > 5 else ''})")
        return matches[0]

    def get(self, text: str) -> Node:
        """Read and verify one node; a node whose bytes no longer match its name is refused."""
        hash_ = text if is_cas_ref(text) else self.resolve(text)
        node = self._cache.get(hash_)
        if node is None:
            data = self.nodes.read(hash_)
            if data is None:
                raise NotFoundError(f"no node {hash_} in {self.nodes.location}")
            node = _verified_node(hash_, data)
            if len(self._cache) >= CACHE_NODES:
                self._cache.clear()  # a long TUI session reads many; a step reads a few dozen
            self._cache[hash_] = node
        return node

    def forget(self, hash_: str) -> None:
        """Drop a node from the cache (gc deleted it)."""
        self._cache.pop(hash_, None)

    def payload(self, text: str) -> Any:
        return self.get(text).payload

    def schema(self, type_hash: str) -> dict:
        """The JSON Schema stored at `type_hash` (cached per store)."""
        cached = self._schemas.get(type_hash)
        if cached is not None:
            return cached
        node = self.get(type_hash)
        if node.type != META_HASH:
            raise UwfError(f"{type_hash} is not a schema (its type is {node.type})")
        if not isinstance(node.payload, (dict, bool)):
            raise CorruptError(f"schema {type_hash} is not a JSON Schema object")
        self._schemas[type_hash] = node.payload
        return node.payload

    def title_of(self, type_hash: str) -> str | None:
        schema = self.schema(type_hash)
        title = schema.get("title") if isinstance(schema, dict) else None
        return title if isinstance(title, str) else None

    def refs(self, text: str) -> list[str]:
        """Direct references: `cas_ref` strings found by walking schema and payload together."""
        node = self.get(text)
        if node.type == node.hash:
            return []
        found: list[str] = []
        _collect_refs(self.schema(node.type), node.payload, found)
        return list(dict.fromkeys(found))

    def walk(self, text: str) -> list[str]:
        """Breadth-first over references, each node once, starting with `text`."""
        start = self.resolve(text)
        seen = {start}
        order = [start]
        queue = deque([start])
        while queue:
            current = queue.popleft()
            for ref in self.refs(current):
                if ref in seen:
                    continue
                if not self.has(ref):
                    raise NotFoundError(f"node {current} refers to {ref}, which is not in the store")
                seen.add(ref)
                order.append(ref)
                queue.append(ref)
        return order

    # -- listing and the type index -------------------------------------------

    def all_hashes(self) -> list[str]:
        return self.nodes.hashes()

    def of_type(self, type_hash: str) -> list[str]:
        """Members of a type, from the index (each once, in order of first write)."""
        return [hash_ for hash_ in self.nodes.of_type(type_hash) if self.has(hash_)]

    def schemas(self) -> list[tuple[str, str | None]]:
        """Every schema node with its title, the meta-schema first."""
        result = []
        for hash_ in self.of_type(META_HASH):
            title = "meta-schema" if hash_ == META_HASH else self.title_of(hash_)
            result.append((hash_, title))
        return result

    def reindex(self) -> int:
        """Rebuild the type index from the nodes themselves; returns the number indexed."""
        with self.nodes.index_lock():  # scanned under the lock: a put meanwhile waits, never lost
            members: dict[str, list[str]] = {}
            for hash_ in self.all_hashes():
                try:
                    node = self.get(hash_)
                except UwfError:
                    continue
                members.setdefault(node.type, []).append(hash_)
            self.nodes.rebuild_index(members)
        return sum(len(hashes) for hashes in members.values())


def _verified_node(hash_: str, data: bytes) -> Node:
    try:
        envelope, payload_bytes = decode_envelope(data)
    except CorruptError as exc:
        raise CorruptError(f"node {hash_} is corrupt: {exc.message}") from None
    type_hash = envelope.get("type")
    timestamp = envelope.get("timestamp")
    if set(envelope) != {"type", "payload", "timestamp"} or not is_cas_ref(type_hash) or not isinstance(timestamp, int):
        raise CorruptError(f"node {hash_} is corrupt: not a {{type, payload, timestamp}} envelope")
    if type_hash == hash_:
        actual = xxh64_hash(payload_bytes)
    else:
        actual = xxh64_hash(type_hash.encode("ascii") + payload_bytes)
    if actual != hash_:
        raise CorruptError(f"node {hash_} is corrupt: its content hashes to {actual}")
    return Node(hash_, type_hash, envelope["payload"], timestamp)


def _collect_refs(schema: object, value: object, out: list[str]) -> None:
    if value is None or not isinstance(schema, dict):
        return
    if isinstance(value, str):
        if schema.get("format") == "cas_ref" and is_cas_ref(value):
            out.append(value)
    elif isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key, extra)
            if isinstance(sub, dict):
                _collect_refs(sub, item, out)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                _collect_refs(items, item, out)
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key) or ():
            _collect_refs(sub, value, out)

