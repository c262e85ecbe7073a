"""Reading a bundle file: a stream of untrusted bytes, checked entry by entry as it is read.

Nothing is read whole before it is checked. The tar headers are parsed here (not by `tarfile`,
which reads pax and GNU long-name headers whole, whatever size they declare), so every entry is
refused on its header alone when it is not a regular file, has a name outside the layout, comes
twice, or declares more bytes than its limit. The manifest must be the first entry, as export
writes it: every node is then checked against its list as it arrives. Each node is read into one
buffer of its declared size and verified against its name as soon as it is read (bytes that do
not begin a CBOR map, such as zeros, after the first chunk), decoded under an item budget: its
XXH64 name proves nothing (anyone can hash a hostile node right), and a CBOR array of nulls is a
Python object per byte. It is then spilled to an unnamed temporary file in the root's scratch
space (not TMPDIR, often a tmpfs: memory again), so memory holds one node at a time and an index.
Compression is measured as it goes: the tar bytes produced against the compressed bytes
consumed, so a gzip bomb is refused after a few MiB, not after it has expanded.
"""

from __future__ import annotations

import json
import mmap
import os
import tempfile
from contextlib import contextmanager

from ..encoding.ids import is_cas_ref
from ..errors import CorruptError, NotFoundError
from .bundle_format import BLOCK, CHUNK, FILE_TYPES, FORMAT, MANIFEST, MAX_MANIFEST_BYTES, MAX_NODE_BYTES, MAX_NODE_ITEMS
from .bundle_format import BundleError, MAX_NODES, MAX_RATIO, MAX_TOTAL_BYTES, NODES, RATIO_GRACE_BYTES, VERSION, size_text


class _Counted:
    """The file as the decompressor reads it: counts the compressed bytes consumed."""

    def __init__(self, raw) -> None:
        self.raw = raw
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.count += len(data)
        return data


class _TarStream:
    """The tar bytes, read in bounded pieces; the total and the expansion ratio are checked on
    every piece, so no read makes the decompressor produce more than a chunk past a limit."""

    def __init__(self, source, counted: _Counted, errors: tuple, where: str) -> None:
        self.source = source
        self.counted = counted
        self.errors = errors  # what the decompressor raises on damaged data
        self.where = where
        self.produced = 0

    def read(self, size: int) -> bytes:
        parts = []
        while size > 0:
            piece = self.source.read(min(size, CHUNK))
            if not piece:
                break
            self.produced += len(piece)
            if self.produced > MAX_TOTAL_BYTES:
                raise BundleError(f"{self.where} expands to more than {size_text(MAX_TOTAL_BYTES)}, the limit for a bundle")
            if self.produced > RATIO_GRACE_BYTES and self.produced > MAX_RATIO * self.counted.count:
                raise BundleError(
                    f"{self.where} expands more than {MAX_RATIO}-fold ({self.produced:,} bytes from {self.counted.count:,}), "
                    f"the limit for a bundle past its first {size_text(RATIO_GRACE_BYTES)}: refused as a compression bomb"
                )
            parts.append(piece)
            size -= len(piece)
        return parts[0] if len(parts) == 1 else b"".join(parts)


def _missing(directory: str) -> list[str]:
    """`directory` and those of its parents that do not exist yet, deepest first."""
    missing = []
    path = os.path.abspath(directory)
    while not os.path.exists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return missing


class SpilledNodes:
    """Node bytes verified against their names, kept in an unnamed temporary file (never named
    where O_TMPFILE works, else removed as it is made: gone when closed, or when the process
    dies) in `directory`, the root's scratch space; memory holds only where each is and its type."""

    def __init__(self, where: str, directory: str | None = None) -> None:
        self.where = where
        self.directory = directory or tempfile.gettempdir()
        self.made: list[str] = []  # directories made here, deepest first: removed again on close
        try:
            if directory is not None:
                self.made = _missing(directory)
                os.makedirs(directory, mode=0o700, exist_ok=True)
            # Unbuffered: a full disk fails the write that meets it (one line), not a flush at close.
            self.file = tempfile.TemporaryFile(prefix="uwf-bundle-", dir=directory, buffering=0)
        except OSError as exc:
            raise BundleError(f"{where}: cannot make a temporary file for its nodes in {self.directory} ({exc.strerror})") from None
        self.index: dict[str, tuple[int, int, str]] = {}  # hash -> (offset, length, type)
        self.end = 0
        self._types: dict[str, str] = {}  # one string per type, not one per node

    def add(self, hash_: str, type_hash: str, data: bytes) -> None:
        try:
            done = 0
            while done < len(data):  # unbuffered writes may be short; no memoryview outlives a call
                done += os.pwrite(self.file.fileno(), data if not done else data[done:], self.end + done)
        except OSError as exc:
            raise BundleError(f"{self.where}: cannot hold its nodes in a temporary file in {self.directory} ({exc.strerror})") from None
        self.index[hash_] = (self.end, len(data), self._types.setdefault(type_hash, type_hash))
        self.end += len(data)

    def read(self, hash_: str) -> bytes | None:
        entry = self.index.get(hash_)
        if entry is None:
            return None
        offset, length, _ = entry
        parts = []
        while length:  # reads may be short too
            part = os.pread(self.file.fileno(), length, offset)
            if not part:
                break
            parts.append(part)
            offset, length = offset + len(part), length - len(part)
        return b"".join(parts)

    def type_of(self, hash_: str) -> str:
        return self.index[hash_][2]

    def __contains__(self, hash_: object) -> bool:
        return hash_ in self.index

    def __iter__(self):
        return iter(self.index)

    def __len__(self) -> int:
        return len(self.index)

    def close(self) -> None:
        try:
            self.file.close()
        except OSError:
            pass  # a temporary file: nothing in it is wanted any more
        for path in self.made:  # a refused bundle leaves a root that did not exist as it was: absent
            try:
                os.rmdir(path)
            except OSError:
                break  # not empty: the import wrote the root

    def __enter__(self) -> SpilledNodes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_bundle(path: str, scratch_dir: str | None = None) -> tuple[dict, SpilledNodes]:
    """(manifest, node bytes by hash) of a bundle file: its layout, its manifest's shape, the
    limits and every node's bytes against its name checked; schemas and references not yet.
    The nodes are held in a temporary file in `scratch_dir` (the root's; else the system's)."""
    where = f"bundle {path}"
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise NotFoundError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise BundleError(f"{where} is a directory") from None
    except OSError as exc:
        raise BundleError(f"{where} cannot be read: {exc.strerror}") from None
    with raw:
        stream = _open(raw, where)
        spilled = SpilledNodes(where, scratch_dir)
        try:
            return _read_entries(stream, spilled, where), spilled
        except BaseException:
            spilled.close()
            raise


def _open(raw, where: str) -> _TarStream:
    """The tar stream inside the file: gzip as export writes it; bzip2, xz or none also read."""
    import zlib

    counted = _Counted(raw)
    try:
        magic = raw.peek(6)[:6]
    except OSError as exc:
        raise BundleError(f"{where} cannot be read: {exc.strerror}") from None
    errors: tuple = (OSError, EOFError, zlib.error)
    if magic[:2] == b"\x1f\x8b":
        import gzip

        source = gzip.GzipFile(fileobj=counted, mode="rb")
    elif magic[:3] == b"BZh":
        import bz2

        source = bz2.BZ2File(counted)
    elif magic == b"\xfd7zXZ\x00":
        import lzma

        source = lzma.LZMAFile(counted)
        errors += (lzma.LZMAError,)
    else:
        source = counted
    return _TarStream(source, counted, errors, where)


def _read_entries(stream: _TarStream, spilled: SpilledNodes, where: str) -> dict:
    manifest = None
    listed: set[str] | None = None
    first = True
    while True:
        try:
            header = _next_header(stream, where, first)
        except stream.errors as exc:
            raise BundleError(f"{_broken(where, first)}: {exc}") from None
        if header is None:
            break
        name, size, kind = header
        first = False
        if kind in (b"x", b"g", b"L", b"K"):
            raise BundleError(f"{where}: a pax or GNU extended header ({name!r}) is not accepted: a bundle is plain ustar, as `uwf bundle export` writes it")
        if kind not in FILE_TYPES:
            raise BundleError(f"{where}: unexpected entry {name!r} (a bundle holds only files: {MANIFEST}, {NODES}<HASH>)")
        if name == MANIFEST:
            if manifest is not None:
                raise BundleError(f"{where} holds two manifests")
            if size > MAX_MANIFEST_BYTES:
                raise BundleError(f"{where}: {MANIFEST} is {size:,} bytes, more than the {size_text(MAX_MANIFEST_BYTES)} a manifest may have")
            with _member(stream, name, size) as data:
                manifest = _parse_manifest(data, where)
            continue
        hash_ = name[len(NODES):]
        if not name.startswith(NODES) or not is_cas_ref(hash_):
            raise BundleError(f"{where}: unexpected entry {name!r} (a bundle holds only {MANIFEST} and {NODES}<HASH>)")
        if manifest is None:  # export writes it first, so that each node is checked against it as it is read
            raise BundleError(f"{where} has no {MANIFEST} as its first entry: not a uwf bundle")
        if listed is None:
            listed = _check_manifest(manifest, where)  # before the first node: a bad manifest is refused before any node is read
        if hash_ not in listed:
            raise BundleError(f"{where}: node {hash_} is in the bundle but not listed in the manifest")
        if hash_ in spilled:
            raise BundleError(f"{where} holds node {hash_} twice")
        if size > MAX_NODE_BYTES:
            raise BundleError(f"{where}: node {hash_} is {size:,} bytes, more than the {size_text(MAX_NODE_BYTES)} a node may have")
        with _member(stream, name, size, first=lambda piece: _check_start(hash_, piece, where)) as data:
            spilled.add(hash_, _verified_type(hash_, data, where), data)
    if manifest is None:
        raise BundleError(f"{where} has no {MANIFEST}: not a uwf bundle")
    if listed is None:
        listed = _check_manifest(manifest, where)
    missing = sorted(listed - set(spilled))
    if missing:
        raise BundleError(f"{where}: node {missing[0]} is listed in the manifest but not in the bundle")
    return manifest


def _broken(where: str, first: bool) -> str:
    return f"{where} is not a uwf bundle (a tar.gz file)" if first else f"{where} is damaged"


def _next_header(stream: _TarStream, where: str, first: bool) -> tuple[str, int, bytes] | None:
    """(name, declared size, type flag) of the next entry; None at the end of the archive."""
    block = stream.read(BLOCK)
    if not block or block.count(0) == BLOCK:
        return None  # the end marker (or, as tarfile allows, the end of the file between entries)
    if len(block) < BLOCK:
        raise BundleError(f"{_broken(where, first)}: a tar header is cut short")
    stored = _octal(block[148:156])
    unsigned = sum(block[:148]) + 256 + sum(block[156:])  # the checksum field counts as eight spaces
    signed = unsigned - 256 * sum(1 for byte in block[:148] + block[156:] if byte > 127)  # as some old tars sum
    if stored is None or stored not in (unsigned, signed):
        raise BundleError(f"{_broken(where, first)}: a tar header's checksum is wrong")
    name = block[:100].split(b"\0", 1)[0]
    if block[257:263] == b"ustar\0":
        prefix = block[345:500].split(b"\0", 1)[0]
        if prefix:
            name = prefix + b"/" + name
    size = int.from_bytes(block[125:136], "big") if block[124] == 0x80 else _octal(block[124:136])  # base-256, or octal
    if size is None:
        raise BundleError(f"{where} is damaged: a tar header's size is not a number")
    return name.decode("utf-8", "replace"), size, block[156:157]


def _octal(field: bytes) -> int | None:
    text = field.split(b"\0", 1)[0].strip() or b"0"
    try:
        return int(text, 8)
    except ValueError:
        return None


@contextmanager
def _member(stream: _TarStream, name: str, size: int, first=None):
    """An entry's bytes, read into one buffer of its declared size, a chunk at a time (`first`
    sees the first), its padding skipped. The buffer is anonymous memory, which takes RAM only as
    it is filled (a header declaring 256 MiB that a bomb never fills costs nothing), unmapped on
    leaving the block."""
    if not size:
        yield b""
        return
    try:
        buffer = mmap.mmap(-1, size)
    except OSError as exc:
        raise BundleError(f"{stream.where}: no memory for entry {name!r} of {size:,} bytes ({exc.strerror})") from None
    with buffer as data:
        try:
            while data.tell() < size:
                want = min(CHUNK, size - data.tell())
                piece = stream.read(want)
                if len(piece) < want:
                    raise BundleError(f"{stream.where} is damaged: entry {name!r} is cut short")
                if first is not None and not data.tell():
                    first(piece)
                data.write(piece)
            stream.read(-size % BLOCK)
        except stream.errors as exc:
            raise BundleError(f"{stream.where} is damaged: {exc}") from None
        del piece  # its bytes are in the buffer: one copy of the entry is held, not two
        yield data


def _check_start(hash_: str, piece: bytes, where: str) -> None:
    """A node is a CBOR map: anything else (zeros, text) is refused on its first chunk."""
    if piece[0] >> 5 != 5:
        what = f"its first {len(piece):,} bytes are zeros" if not piece.strip(b"\0") else f"it begins with byte 0x{piece[0]:02x}"
        raise BundleError(f"{where} was refused, nothing was imported: node {hash_} is corrupt: not a CBOR map ({what})")


def _verified_type(hash_: str, data: mmap.mmap, where: str) -> str:
    """The node's type, once its bytes are checked against its name as the store checks them
    (cas.py `_verified_node`, which import's schema check runs again), but decoded under the
    item budget: this decode, and the schema check's of the same bytes, make at most
    MAX_NODE_ITEMS objects. Nesting is bounded by the decoder."""
    from ..encoding.cbor import TooManyItems, decode_envelope
    from ..encoding.ids import xxh64_hash

    refused = f"{where} was refused, nothing was imported: node {hash_}"
    try:
        envelope, payload = decode_envelope(data, max_items=MAX_NODE_ITEMS)
    except TooManyItems:
        raise BundleError(f"{refused} holds more than {MAX_NODE_ITEMS:,} items (values, keys and elements), the limit for a node") from None
    except CorruptError as exc:
        raise BundleError(f"{refused} is corrupt: {exc.message}") from None
    type_hash = envelope.get("type")
    if set(envelope) != {"type", "payload", "timestamp"} or not is_cas_ref(type_hash) or not isinstance(envelope["timestamp"], int):
        raise BundleError(f"{refused} is corrupt: not a {{type, payload, timestamp}} envelope")
    actual = xxh64_hash(payload if type_hash == hash_ else type_hash.encode("ascii") + payload)  # the meta-schema: no type prefix
    if actual != hash_:
        raise BundleError(f"{refused} is corrupt: its content hashes to {actual}")
    return type_hash


def _parse_manifest(data, where: str) -> object:
    from ..encoding.limits import StructureError, check_json_text

    try:
        text = str(data, "utf-8")
        check_json_text(text, f"{where}: {MANIFEST}", max_chars=MAX_MANIFEST_BYTES)  # before json.loads recurses into it
        return json.loads(text)
    except StructureError as exc:
        raise BundleError(exc.message) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise BundleError(f"{where}: {MANIFEST} is not JSON ({exc})") from None


def _check_manifest(manifest: object, where: str) -> set[str]:
    """The manifest's shape; the hashes it lists."""
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleError(f"{where}: the manifest is not a uwf bundle's (format {FORMAT!r})")
    if manifest.get("version") != VERSION:
        raise BundleError(f"{where} is bundle version {manifest.get('version')!r}; this uwf reads version {VERSION}")
    listed = manifest.get("nodes")
    if not isinstance(listed, list) or not all(isinstance(hash_, str) for hash_ in listed):
        raise BundleError(f"{where}: the manifest's nodes must be a list of hashes")
    if len(listed) > MAX_NODES:
        raise BundleError(f"{where} lists {len(listed):,} nodes, more than the {MAX_NODES:,} a bundle may hold")
    threads = manifest.get("threads")
    if not isinstance(threads, list) or not threads:
        raise BundleError(f"{where}: the manifest names no threads")
    from ..encoding.ids import is_ulid

    for item in threads:
        if not isinstance(item, dict) or not is_ulid(str(item.get("thread"))) or not is_cas_ref(str(item.get("head"))):
            raise BundleError(f"{where}: a manifest thread must have a thread id and a head hash, got {str(item)[:120]}")
        if item.get("state") not in ("active", "archived"):
            raise BundleError(f"{where}: thread {item['thread']} has state {item.get('state')!r}, not 'active' or 'archived'")
    workflows = manifest.get("workflows") or []
    if not isinstance(workflows, list) or not all(isinstance(item, dict) and isinstance(item.get("name"), str) and is_cas_ref(str(item.get("hash"))) for item in workflows):
        raise BundleError(f"{where}: the manifest's workflows must be a list of {{name, hash}}")
    from ..workflow.lint import NAME_RULE, valid_workflow_name

    for item in workflows:  # registered as they are: the names `workflow put` takes, and no other
        if not valid_workflow_name(item["name"]):
            raise BundleError(f"{where}: the manifest names a workflow {item['name']!r}, not a valid workflow name ({NAME_RULE}); nothing was imported")
    return set(listed)
