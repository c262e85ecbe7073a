"""Workspace trees as nodes: one tree node per directory, a content or bytes node per file.

Names and link targets are bytes (a file system's names need not be UTF-8); in a node they are
text where they decode, base64 where they do not. A tree read back is checked the way a bundle
from a stranger must be: no entry may name `.`, `..`, a path separator or a NUL, and names are
unique, so restoring a tree can write nowhere but inside its directory.
"""

from __future__ import annotations

import base64

from ..encoding.records import record
from ..errors import CorruptError
from ..store.builtin_schemas import BUILTIN_HASHES, BYTES, BYTES_HASH, TREE, TREE_HASH
from ..store.cas import CasStore

CONTENT_HASH = BUILTIN_HASHES["content"]
KINDS = ("file", "exec", "link", "dir")


@record(frozen=True)
class Entry:
    name: bytes
    kind: str  # file, exec (the executable bit), link, dir
    ref: str | None = None  # a file's content or bytes node; a directory's tree
    size: int | None = None  # a file's length in bytes
    target: bytes | None = None  # a link's target, as the link holds it

    @property
    def is_file(self) -> bool:
        return self.kind in ("file", "exec")

    def to_payload(self) -> dict:
        data: dict = _named("name", self.name)
        data["kind"] = self.kind
        if self.ref is not None:
            data["ref"] = self.ref
        if self.size is not None:
            data["size"] = self.size
        if self.target is not None:
            data.update(_named("target", self.target))
        return data

    @classmethod
    def from_payload(cls, payload: dict, where: str) -> Entry:
        name = _unnamed(payload, "name", where)
        if name is None or not valid_name(name):
            shown = "(none)" if name is None else repr(show_path(name))
            raise CorruptError(f"tree {where} has an entry named {shown}, which cannot be a file's name")
        kind = payload.get("kind")
        if kind not in KINDS:
            raise CorruptError(f"tree {where}: entry {show_path(name)!r} is of no kind uwf knows ({kind!r})")
        target = _unnamed(payload, "target", where)
        ref = payload.get("ref")
        if kind == "link" and target is None or kind != "link" and ref is None:
            raise CorruptError(f"tree {where}: entry {name!r} ({kind}) lacks its {'target' if kind == 'link' else 'ref'}")
        return cls(name, kind, ref, payload.get("size"), target)


def _named(key: str, value: bytes) -> dict:
    try:
        return {key: value.decode("utf-8")}
    except UnicodeDecodeError:
        return {key + "Base64": base64.b64encode(value).decode("ascii")}


def _unnamed(payload: dict, key: str, where: str) -> bytes | None:
    if key in payload:
        return payload[key].encode("utf-8")
    if key + "Base64" in payload:
        try:
            return base64.b64decode(payload[key + "Base64"], validate=True)
        except ValueError:
            raise CorruptError(f"tree {where}: {key}Base64 is not base64") from None
    return None


def valid_name(name: bytes) -> bool:
    """A name a snapshot can hold: one that stays in its directory, and never git's own `.git`
    (restoring one would write hooks or config that git runs; snapshots leave it out)."""
    return bool(name) and name not in (b".", b"..") and b"/" not in name and b"\0" not in name and name.lower() != b".git"


def ensure_schemas(store: CasStore) -> None:
    """Register the tree and bytes schemas (once per store; cheap after)."""
    store.ensure_builtins()
    if not store.has(TREE_HASH):
        store.put_schema(TREE)
    if not store.has(BYTES_HASH):
        store.put_schema(BYTES)


def blob_payload(data: bytes) -> tuple[str, object]:
    """(type, payload) of a file's bytes: text as a content node, anything else as bytes."""
    try:
        return CONTENT_HASH, data.decode("utf-8")
    except UnicodeDecodeError:
        return BYTES_HASH, {"base64": base64.b64encode(data).decode("ascii")}


def put_blob(store: CasStore, data: bytes) -> str:
    if len(data) >= STREAM_FROM:
        return put_large_blob(store, data)
    type_hash, payload = blob_payload(data)
    return store.put(type_hash, payload, what="file")


STREAM_FROM = 1 << 20  # a file this large is stored in pieces, its bytes never copied whole
PIECE = 3 << 18  # bytes per piece: a multiple of 3, so the pieces' base64 joins into the whole's


def put_large_blob(store: CasStore, data: bytes) -> str:
    """The node `blob_payload` would give, hashed and written from pieces of `data`: in memory,
    about the file's size (once, not the five copies decoding and encoding would make)."""
    from ..encoding.cbor import encode, text_head

    view = memoryview(data)
    if _is_utf8(view):
        head = text_head(len(data))
        return store.put_encoded(CONTENT_HASH, lambda: (head, data))
    head = encode({"base64": ""})[:-1] + text_head(4 * ((len(data) + 2) // 3))  # the object, its key, the text's head

    def pieces():
        yield head
        for start in range(0, len(data), PIECE):
            yield base64.b64encode(view[start:start + PIECE])

    return store.put_encoded(BYTES_HASH, pieces)


def _is_utf8(view: memoryview) -> bool:
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for start in range(0, len(view), PIECE):
            decoder.decode(view[start:start + PIECE])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def read_blob(store: CasStore, ref: str) -> bytes:
    node = store.get(ref)
    if node.type == CONTENT_HASH and isinstance(node.payload, str):
        return node.payload.encode("utf-8")
    if node.type == BYTES_HASH and isinstance(node.payload, dict):
        return base64.b64decode(node.payload["base64"])
    raise CorruptError(f"{ref} is not a file's content (its type is {node.type})")


def tree_payload(entries: list[Entry]) -> dict:
    return {"entries": [entry.to_payload() for entry in sorted(entries, key=lambda entry: entry.name)]}


def read_tree(store: CasStore, ref: str) -> list[Entry]:
    """A directory's entries, checked (see the module docstring), sorted by name."""
    node = store.get(ref)
    if node.type != TREE_HASH:
        raise CorruptError(f"{ref} is not a tree of files (its type is {node.type})")
    entries = [Entry.from_payload(item, ref) for item in node.payload["entries"]]
    names = [entry.name for entry in entries]
    if len(set(names)) != len(names):
        raise CorruptError(f"tree {ref} names one entry twice")
    return sorted(entries, key=lambda entry: entry.name)


def flatten(store: CasStore, ref: str, prefix: bytes = b"") -> dict[bytes, Entry]:
    """Every file and link under a tree, by its path relative to the tree (directories are implied,
    but an empty directory is kept as itself)."""
    found: dict[bytes, Entry] = {}
    for entry in read_tree(store, ref):
        path = prefix + entry.name
        if entry.kind == "dir":
            inner = flatten(store, entry.ref, path + b"/")
            found.update(inner or {path: entry})
        else:
            found[path] = entry
    return found


def show_path(path: bytes) -> str:
    """A path as a person reads it: undecodable bytes and control characters as \\xNN escapes."""
    return show_text(path.decode("utf-8", "backslashreplace"))


CONTROLS = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))}


def show_text(text: str) -> str:
    """A name an agent chose, safe to print: a control character (an escape sequence that would
    rewrite the terminal, a newline that would forge a line) as a \\xNN escape."""
    return text.translate(CONTROLS)
