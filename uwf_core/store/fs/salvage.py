"""The node file read page by page, without SQLite: what `uwf cas fsck --repair` salvages.

SQLite refuses a whole file for one bad byte in its header or in a page on its way to the rows
(and the `.recover` of Debian 12's sqlite3 3.40 fails even on a healthy file), yet every node
row proves itself: its bytes hash to its name. So this reads what the file format spec
(https://www.sqlite.org/fileformat.html) needs for that and no more — the 100-byte header, the
table b-tree leaf pages wherever they are, their overflow chains, the WAL's frames — and yields
every row shaped like a node row, for the CAS to verify. Nothing here trusts a byte it reads:
a bad pointer, size or chain skips that cell, never the page or the file. Not the header's
geometry either: a page size or a reserved-bytes count can be damaged into another plausible
value, so the file is read under each geometry it may have (a row read wrongly only fails its
check; a row not read is lost). Standard library only.
"""

from __future__ import annotations

import mmap
import os
import struct

MAGIC = b"SQLite format 3\x00"
HEADER_SIZE = 100
PAGE_SIZES = tuple(1 << n for n in range(9, 17))  # 512 .. 65536
WAL_MAGIC = (0x377F0682, 0x377F0683)
WAL_HEADER, WAL_FRAME_HEADER = 32, 24
TABLE_LEAF = 0x0D
NOT_TABLE_LEAF = (0x02, 0x05, 0x0A)  # index interior, table interior, index leaf: any other type byte may be a damaged 0x0D
GUESS_BYTES = 8 << 20  # the start of the file looked at to guess its page size: the same bytes for every size


def header_problem(path: str) -> str | None:
    """What is wrong with the node file's 100-byte header, or None (also for a missing or empty file)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEADER_SIZE)
            size = os.fstat(handle.fileno()).st_size
    except OSError:
        return None  # not ours to say: opening it says what is wrong
    if not head:
        return None
    try:
        wal_frames = os.path.getsize(path + "-wal") > WAL_HEADER
    except OSError:
        wal_frames = False
    return _header_problem(head, size, wal_frames)


def _header_problem(head: bytes, size: int, wal_frames: bool) -> str | None:
    if len(head) < HEADER_SIZE:
        return f"the file is {len(head)} bytes, shorter than its header"
    if head[:16] != MAGIC:
        return "it does not begin with 'SQLite format 3'"
    page_size = _page_size(head)
    if page_size is None:
        return f"page size {struct.unpack('>H', head[16:18])[0]} is not a power of two from 512 to 65536"
    for offset, what in ((18, "write"), (19, "read")):
        if head[offset] not in (1, 2):
            return f"file format {what} version {head[offset]}, where SQLite writes 1 or 2"
    if head[20]:  # SQLite reserves none unless an extension (encryption, checksums) asks; uwf uses none
        return f"reserved bytes per page {head[20]}, where SQLite writes 0"
    if head[21:24] != b"\x40\x20\x20":
        return f"payload fractions {head[21]}/{head[22]}/{head[23]}, where SQLite writes 64/32/32"
    pages, change, valid_for = struct.unpack(">I", head[28:32])[0], head[24:28], head[92:96]
    if not wal_frames:  # pages in the WAL may make up for the file (a checkpoint cut short)
        if size % page_size:
            return f"the file is {size} bytes, not a whole number of {page_size}-byte pages: cut short?"
        if pages and change == valid_for and pages * page_size > size:
            return f"it counts {pages} pages of {page_size} bytes, the file holds {size // page_size}: cut short?"
    return None


def _page_size(head: bytes) -> int | None:
    if len(head) < 18:
        return None
    value = struct.unpack(">H", head[16:18])[0]
    value = 65536 if value == 1 else value
    return value if value in PAGE_SIZES else None


def node_rows(path: str):
    """Every row in the file and its WAL shaped like a node row: (seq, hash, type, data, touched) as
    yielded whatever the file's column order, with
    `data` as stored (maybe compressed) and not yet verified. A row can come more than once (an older
    copy of its page, another geometry); a row on a damaged page or behind a broken overflow chain is
    skipped."""
    with _Files(path) as files:
        for page_size, usable in files.geometries():
            pages = _Pages(files, page_size)
            yield from _rows(pages.newest, pages.numbers(), usable)
            if pages.wal:  # the copies in the file that the WAL replaced: one may be whole where the WAL's is not
                yield from _rows(pages.main, sorted(n for n in pages.wal if pages.main(n) is not None), usable)


class _Files:
    """The node file and its WAL, memory-mapped (None for one missing or empty)."""

    def __init__(self, path: str) -> None:
        self._maps: list[mmap.mmap] = []
        self.file = self._map(path)
        self.wal = self._map(path + "-wal")

    def __enter__(self) -> _Files:
        return self

    def __exit__(self, *exc_info) -> None:
        for mapped in self._maps:
            mapped.close()

    def _map(self, path: str) -> mmap.mmap | None:
        try:
            with open(path, "rb") as handle:
                mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # missing, unreadable or empty
            return None
        self._maps.append(mapped)
        return mapped

    def geometries(self) -> list[tuple[int, int]]:
        """(page size, usable size) pairs to read under: the page sizes the header and the WAL's
        header name and the one the pages suggest, each with the header's reserved bytes and none.
        A damaged byte can turn a page size into another power of two, or reserve bytes that the
        cells at the end of each page lie in."""
        head = self.file[:HEADER_SIZE] if self.file is not None else b""
        reserved = head[20] if len(head) > 20 else 0
        pairs: list[tuple[int, int]] = []
        for size in (_page_size(head), _wal_page_size(self.wal), self._guess()):
            for usable in (size - reserved, size) if size else ():
                if usable >= 480 and (size, usable) not in pairs:
                    pairs.append((size, usable))
        return pairs

    def _guess(self) -> int | None:
        """The page size under which the most cells in the file's first bytes decode as records."""
        if self.file is None:
            return None
        scores = {}
        for size in PAGE_SIZES:
            pages = _Pages(self, size, wal=False)
            count = -(-min(len(self.file), GUESS_BYTES) // size)
            scores[size] = sum(1 for n in range(1, count + 1) for _ in _cells(pages.main, n, size, headers_only=True))
        best = max(scores, key=lambda size: (scores[size], size))
        return best if scores[best] else None


class _Pages:
    """The pages of the files under one page size: the file's, and the WAL's newest copy of each page
    it holds (when the WAL has that page size)."""

    def __init__(self, files: _Files, page_size: int, wal: bool = True) -> None:
        self.file = files.file
        self.page_size = page_size
        # A WAL whose header lost its page size is read under the file's (its frames are the same size).
        use_wal = wal and files.wal is not None and _wal_page_size(files.wal) in (page_size, None)
        self.wal = _wal_frames(files.wal, page_size) if use_wal else {}

    def main(self, number: int) -> bytes | None:
        """Page `number` (1-based) as the file holds it; a page cut short is padded with zeros."""
        size = self.page_size
        start = (number - 1) * size
        if self.file is None or number < 1 or start >= len(self.file):
            return None
        page = self.file[start : start + size]
        return page if len(page) == size else page + bytes(size - len(page))

    def newest(self, number: int) -> bytes | None:
        frame = self.wal.get(number)
        if frame is None:
            return self.main(number)
        mapped, offset = frame
        return mapped[offset : offset + self.page_size]

    def numbers(self) -> list[int]:
        count = -(-len(self.file) // self.page_size) if self.file is not None else 0
        return sorted(set(range(1, count + 1)) | set(self.wal))


def _wal_page_size(wal: mmap.mmap | None) -> int | None:
    if wal is None or len(wal) < WAL_HEADER:
        return None
    magic, _, size = struct.unpack(">III", wal[:12])
    return size if magic in WAL_MAGIC and size in PAGE_SIZES else None


def _generation(wal: mmap.mmap, page_size: int) -> bytes:
    """The salts of the WAL's current frames: the header's when a frame has them, else (a damaged
    header) the ones most frames have."""
    from collections import Counter

    found = Counter(wal[offset + 8 : offset + 16] for offset in range(WAL_HEADER, len(wal) - WAL_FRAME_HEADER - page_size + 1, WAL_FRAME_HEADER + page_size))
    header = wal[16:24]
    return header if header in found or not found else found.most_common(1)[0][0]


def _wal_frames(wal: mmap.mmap, page_size: int) -> dict[int, tuple[mmap.mmap, int]]:
    """Page number -> (the WAL, offset) of its newest frame. Frames of an earlier WAL generation
    (their salts differ from the header's) are older than the file itself and are left out."""
    salts = _generation(wal, page_size)
    frames: dict[int, tuple[mmap.mmap, int]] = {}
    offset = WAL_HEADER
    while offset + WAL_FRAME_HEADER + page_size <= len(wal):
        number = struct.unpack(">I", wal[offset : offset + 4])[0]
        if wal[offset + 8 : offset + 16] == salts and number:
            frames[number] = (wal, offset + WAL_FRAME_HEADER)
        offset += WAL_FRAME_HEADER + page_size
    return frames


def _rows(page_of, numbers, usable: int):
    for number in numbers:
        yield from _cells(page_of, number, usable)


def _cells(page_of, number: int, usable: int, headers_only: bool = False):
    """The node rows of one page read as a table leaf (with `headers_only`: one None per cell whose
    record header decodes on a page typed as a leaf, to score a page size). A page of another type
    but an index or interior one is read too: its type byte may be what was damaged."""
    page = page_of(number)
    if page is None:
        return
    start = HEADER_SIZE if number == 1 else 0
    if page[start] in NOT_TABLE_LEAF or (headers_only and page[start] != TABLE_LEAF):
        return
    count = struct.unpack(">H", page[start + 3 : start + 5])[0]
    first = start + 8
    index = 0
    # Past the cell count as well, while the pointers look sound: a damaged count hides no cell.
    while first + 2 * index + 2 <= usable:
        pointer = struct.unpack(">H", page[first + 2 * index : first + 2 * index + 2])[0]
        index += 1
        if not first + 2 * index <= pointer < usable:
            if index > count:
                return
            continue
        try:
            row = _cell(page_of, page, pointer, usable, headers_only)
        except (IndexError, ValueError, struct.error):
            row = False
        if row is not False:
            yield row
        elif index > count:
            return


def _cell(page_of, page: bytes, pointer: int, usable: int, headers_only: bool):
    """One cell: the node row it holds, or False."""
    size, at = _varint(page, pointer)
    rowid, at = _varint(page, at)  # the seq column (an INTEGER PRIMARY KEY is the rowid)
    x = usable - 35
    if size <= x:
        local = size
    else:
        m = (usable - 12) * 32 // 255 - 23
        k = m + (size - m) % (usable - 4)
        local = k if k <= x else m
    if at + local > usable or (local < size and at + local + 4 > usable):
        return False
    head = bytes(page[at : at + min(local, 64)])
    types = _serial_types(head)
    if types is None:
        return False
    if headers_only:
        return None
    if len(types) != 5 or _data_at(types) is None:
        return False
    payload = bytes(page[at : at + local])
    if local < size:
        payload = _overflow(page_of, payload, struct.unpack(">I", page[at + local : at + local + 4])[0], size, usable)
        if payload is None:
            return False
    row = _node_row(payload, types)
    if row is False:
        return False
    return (rowid - (1 << 64) if rowid >= 1 << 63 else rowid, *row)  # a varint holds 64 bits; a rowid is signed


def _overflow(page_of, payload: bytes, number: int, size: int, usable: int) -> bytes | None:
    """The payload completed from its overflow chain; None when the chain is broken."""
    parts = [payload]
    have = len(payload)
    seen = set()
    while have < size:
        if number in seen or number < 1:
            return None
        seen.add(number)
        page = page_of(number)
        if page is None:
            return None
        chunk = page[4 : 4 + min(usable - 4, size - have)]
        parts.append(bytes(chunk))
        have += len(chunk)
        number = struct.unpack(">I", page[:4])[0]
    return b"".join(parts)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = 0
    for i in range(8):
        byte = data[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    return (value << 8) | data[at + 8], at + 9


def _serial_types(head: bytes) -> list[int] | None:
    """A record's serial types from its first bytes, or None when they are no record header."""
    try:
        size, at = _varint(head, 0)
        if not 1 <= size <= len(head):
            return None
        types = []
        while at < size:
            kind, at = _varint(head, at)
            if kind in (10, 11):
                return None
            types.append(kind)
        return types if at == size else None
    except IndexError:
        return None


def _data_at(types: list[int]) -> int | None:
    """Where `data` is in a row shaped like a node's, or None: seq (NULL: it is the rowid), hash and
    type as text, then data (a blob, or text if a hand wrote it) and touched (a real, stored as an
    integer when it has no fraction) in either order (a node file since issue 41 has data last)."""
    seq, hash_, type_, third, fourth = types
    if not (seq in (0, 1, 2, 3, 4, 5, 6, 8, 9) and hash_ == 13 + 2 * 13 and type_ == 13 + 2 * 13):
        return None
    real = (1, 2, 3, 4, 5, 6, 7, 8, 9)
    return 3 if third >= 12 and fourth in real else 4 if third in real and fourth >= 12 else None


def _node_row(payload: bytes, types: list[int]):
    size, _ = _varint(payload, 0)
    values = []
    at = size
    for kind in types:
        length = _length(kind)
        if at + length > len(payload):
            return False
        values.append(_value(kind, payload[at : at + length]))
        at += length
    hash_, type_ = values[1], values[2]
    data, touched = (values[3], values[4]) if _data_at(types) == 3 else (values[4], values[3])
    try:
        touched = float(touched)
    except (TypeError, ValueError):
        return False
    # The hash and type columns as found, even with a damaged byte: the repair names each row by its
    # content, so only `data` must be whole.
    return hash_.decode("ascii", "replace"), type_.decode("ascii", "replace"), bytes(data), touched


def _length(kind: int) -> int:
    if kind >= 12:
        return (kind - 12) // 2
    return (0, 1, 2, 3, 4, 6, 8, 8, 0, 0)[kind]


def _value(kind: int, raw: bytes):
    if kind == 7:
        return struct.unpack(">d", raw)[0]
    if kind in (8, 9):
        return kind - 8
    if 1 <= kind <= 6:
        return int.from_bytes(raw, "big", signed=True)
    return raw
