"""Is the node file whole — not emptied, its header sane (salvage.py), its WAL? SQLite reads a
WAL up to its first frame that fails its checksum and takes the rest for garbage: one bad byte in frame 24 of 56 hid the 11 nodes committed in
frames 29-55, and the next connection to close checkpointed what it saw and deleted the WAL with
them. So before the file is opened for writing (which would overwrite those frames) and by
`cas fsck`, uwf looks past the frames SQLite took: a frame of the same generation (its salts)
that ends a transaction past the first bad frame means the WAL was damaged, not merely cut by a
crash (a crash tears at most the commit it was writing). Then nothing
is written, reads open the file read-only (a read-only connection never checkpoints or deletes
the WAL), and `cas fsck --repair` salvages every intact frame (salvage.py).

The cheap look (the WAL index's frame count, then the headers of the frames past it) runs only
when a WAL is there; the checksums are computed only when it finds something (a commit in flight
in another process looks the same for a moment).
"""

from __future__ import annotations

import os
import struct
import time

WAL_HEADER, FRAME_HEADER = 32, 24
MAGIC = {0x377F0682: "<", 0x377F0683: ">"}  # the checksums' word order
MAX_FRAMES = 1 << 20
PAGE_SIZES = {1 << n for n in range(9, 17)}


def wal_damage(path: str) -> str | None:
    """What is wrong with `<path>-wal`, or None: committed frames SQLite cannot reach. Said only
    when three looks 50 ms apart find it under the same header: another process's commit, or a
    checkpoint that starts the WAL over, can look like damage for a moment."""
    seen = None
    for attempt in range(3):
        if attempt:
            time.sleep(0.05)
        problem, header = _looked(path)
        if problem is None or (seen is not None and header != seen):
            return None
        seen = header
    return problem


def _looked(path: str) -> tuple[str | None, bytes]:
    problem, header = None, b""
    try:
        with open(path + "-wal", "rb") as handle:
            header = handle.read(WAL_HEADER)
            problem = _problem(path, handle, header)
    except OSError:
        pass
    return problem, header


def _problem(path: str, handle, header: bytes) -> str | None:
    """What is wrong with the WAL open as `handle`, whose header is `header`, or None."""
    if len(header) < WAL_HEADER:
        return None
    magic, _, page_size, _, salts, _ = struct.unpack(">IIII8s8s", header)
    size = os.fstat(handle.fileno()).st_size
    if size < WAL_HEADER + FRAME_HEADER + 512:
        return None  # no frame to lose
    # SQLite reads no frame of a WAL whose header is not whole: all of them would be lost.
    if magic not in MAGIC or page_size not in PAGE_SIZES:
        return f"the WAL's header is damaged (its magic number or page size), and {size - WAL_HEADER:,} bytes of frames follow it"
    if _checksum(header[:24], 0, 0, MAGIC[magic]) != struct.unpack(">II", header[24:32]):
        return f"the WAL's header fails its checksum, and {size - WAL_HEADER:,} bytes of frames follow it"
    valid = _valid_frames(path, header)
    if valid is None:
        return None
    frame = FRAME_HEADER + page_size
    total = min((size - WAL_HEADER) // frame, MAX_FRAMES)
    orphans = [i for i in range(valid, total) if _commits(handle, WAL_HEADER + i * frame, salts)]
    if not orphans:
        return None
    first_bad = _first_bad_frame(handle, header, page_size, total)
    if first_bad is None:
        return None  # a commit another process made meanwhile: the chain holds
    # A commit torn by a crash is its own bad frame (its header written, its page not): that
    # transaction never ended, and SQLite is right to drop it. Only a commit past the bad frame
    # is one SQLite no longer reads.
    orphans = [i for i in orphans if i > first_bad]
    if not orphans:
        return None
    return (
        f"the WAL's frame {first_bad + 1} of {total} is damaged, and {len(orphans)} frame(s) after it end "
        f"transactions SQLite no longer reads"
    )


def _commits(handle, offset: int, salts: bytes) -> bool:
    """Whether the frame at `offset` is of this WAL's generation and ends a transaction."""
    handle.seek(offset)
    head = handle.read(FRAME_HEADER)
    return len(head) == FRAME_HEADER and head[8:16] == salts and struct.unpack(">I", head[4:8])[0] != 0


def _valid_frames(path: str, header: bytes) -> int | None:
    """How many frames SQLite reads (the WAL index's count, after a read-only connection has
    rebuilt it if it had to), or None when the index is not this WAL's."""
    import sqlite3

    uri = "file:" + path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
        try:
            conn.execute("select 1 from sqlite_master limit 1").fetchall()
        finally:
            conn.close()  # read-only: no checkpoint, the WAL stays as it is
        index = os.pread(_kept_open(path + "-shm"), 96, 0)
    except (sqlite3.Error, OSError):
        return None
    if len(index) < 96 or index[:48] != index[48:] or index[32:40] != header[16:24]:
        return None  # being written (its two copies differ), or not this WAL's
    return struct.unpack("=I", index[16:20])[0]


_KEPT: dict[str, int] = {}


def _kept_open(path: str) -> int:
    """A descriptor of `path` this process never closes while the file is there: closing any
    descriptor of a file drops every fcntl lock the process holds on it, SQLite's connections'
    among them — the WAL index's, whose loss let another process take it for unused, truncate
    it, and end this one with SIGBUS."""
    fd = _KEPT.get(path)
    if fd is not None:
        try:
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                return fd
            if os.fstat(fd).st_nlink == 0:
                os.close(fd)  # a deleted file's: no connection uses it any more
        except OSError:
            pass
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    _KEPT[path] = fd
    return fd


def _first_bad_frame(handle, header: bytes, page_size: int, total: int) -> int | None:
    """The first frame of this generation whose checksum fails (SQLite's running checksum over
    each frame's first 8 header bytes and its page), or None when every one holds."""
    order = MAGIC[struct.unpack(">I", header[:4])[0]]
    s0, s1 = _checksum(header[:24], 0, 0, order)
    if (s0, s1) != struct.unpack(">II", header[24:32]):
        return 0
    salts = header[16:24]
    frame = FRAME_HEADER + page_size
    for i in range(total):
        handle.seek(WAL_HEADER + i * frame)
        data = handle.read(frame)
        if len(data) < frame:
            return None
        if data[8:16] != salts:
            return i  # a damaged salt (the caller knows frames of this generation follow)
        s0, s1 = _checksum(data[:8], s0, s1, order)
        s0, s1 = _checksum(data[FRAME_HEADER:], s0, s1, order)
        if (s0, s1) != struct.unpack(">II", data[16:24]):
            return i
    return None


def _checksum(data: bytes, s0: int, s1: int, order: str) -> tuple[int, int]:
    words = struct.unpack(f"{order}{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def file_problem(path: str) -> str | None:
    """What is wrong with the file as a whole — its header, its size, its WAL — or None."""
    try:
        if os.path.getsize(path) == 0:
            return "the file is empty (0 bytes): cut short, or emptied"
    except OSError:
        return None
    from .salvage import header_problem  # only when the file looks wrong or a check was asked for

    header = header_problem(path)
    if header:
        return f"damaged header: {header}"
    wal = wal_damage(path)
    return f"damaged WAL: {wal}" if wal else None


def empty_file(path: str) -> bool:
    """0 bytes, and still so a moment later (another process may be setting a new file up)."""
    for wait in (0.0, 0.05, 0.2):
        time.sleep(wait)
        try:
            if os.path.getsize(path) != 0:
                return False
        except OSError:
            return False
    return True


def has_frames(wal: str) -> bool:
    try:
        return os.path.getsize(wal) > 32
    except OSError:
        return False
