"""runs.jsonl: one line per step attempt (ok, failed, timeout, killed), append-only."""

from __future__ import annotations

import os

from ...errors import UwfError
from ..files import append_line
from ..records import DamagedEntry, RunRecord
from .root import Root, load_jsonl, parse_lines, unterminated, without_lines


class FsRunLog:
    """The log, and once read whole, what was parsed of it: a process that reads it again and
    again (the workbench, a `uwf worker`) parses only the lines appended since its last read."""

    __slots__ = ("root", "_parsed", "_reads")

    def __init__(self, root: Root) -> None:
        self.root = root
        self._parsed: _Parsed | None = None
        self._reads = 0  # of one thread's or step's records: a second one keeps what it parses

    def append(self, record: RunRecord) -> None:
        with self.root.lock("runs"):
            # Not fsynced: the head and the nodes are what must survive a power cut; a lost last
            # attempt line costs nothing else (and readers skip a torn one).
            append_line(self.root.runs_file, record.to_json(), sync=False)

    def mend(self, stamp: str) -> list[str]:
        """Set aside the lines that cannot be read (`cas fsck --repair`)."""
        with self.root.lock("runs"):
            return without_lines(self.root.runs_file, self.damaged(), stamp)

    def damaged(self) -> list[DamagedEntry]:
        return load_jsonl(self.root.runs_file, RunRecord.from_dict)[1]

    def read(self, thread: str | None = None) -> list[RunRecord]:
        """Attempts, oldest first; a torn or foreign line is skipped (`damaged` lists them). A
        thread's records are found by its id in the line before any is parsed, unless the whole
        log is parsed already."""
        if thread is None or self._kept():
            records = self._all()
        else:
            records = load_jsonl(self.root.runs_file, RunRecord.from_dict, wanted=lambda line: thread in line)[0]
        return records if thread is None else [record for record in records if record.thread == thread]

    def of_step(self, step: str) -> list[RunRecord]:
        if self._kept():
            records = self._all()
        else:
            records = load_jsonl(self.root.runs_file, RunRecord.from_dict, wanted=lambda line: step in line)[0]
        return [record for record in records if record.step == step]

    def _kept(self) -> bool:
        """Whether the log is parsed whole and kept: once read whole, or read twice (a one-shot
        command that reads one thread's lines parses only those)."""
        self._reads += 1
        return self._parsed is not None or self._reads > 1

    def _all(self) -> list[RunRecord]:
        if self._parsed is None:
            self._parsed = _Parsed(self.root.runs_file)
        return self._parsed.records()


MARK = 64  # bytes


class _Parsed:
    """The records of the log's whole lines up to `offset`. Appends only add lines after it; a
    log that is another file now (`cas fsck --repair` rewrites it), shorter, or whose bytes before
    `offset` are not those parsed, is read again whole."""

    def __init__(self, path: str) -> None:
        import threading  # here: a one-shot `uwf` command seldom keeps the log, and its start is the hot path

        self.path = path
        self.lock = threading.Lock()  # the workbench reads from several threads
        self._reset(None)

    def _reset(self, inode: int | None) -> None:
        self.inode = inode
        self.offset = 0
        self.lines = 0
        self.mark = b""  # the last bytes parsed: still there, or the file is another one (an inode reused)
        self.parsed: list[RunRecord] = []

    def records(self) -> list[RunRecord]:
        with self.lock:
            tail = self._catch_up()
            return self.parsed + tail

    def _catch_up(self) -> list[RunRecord]:
        """Parse what was appended since; the records of the text after the last newline (not
        kept: the line is still being written, or was cut short)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self._reset(None)
            return []
        except OSError as exc:
            raise UwfError(f"cannot read {self.path}: {exc.strerror}") from None
        try:
            stat = os.fstat(fd)
            if stat.st_ino != self.inode or stat.st_size < self.offset or os.pread(fd, len(self.mark), self.offset - len(self.mark)) != self.mark:
                self._reset(stat.st_ino)
            data = _read_from(fd, self.offset, stat.st_size)
        except OSError as exc:
            raise UwfError(f"cannot read {self.path}: {exc.strerror}") from None
        finally:
            os.close(fd)
        end = data.rfind(b"\n") + 1
        if end:
            lines = data[: end - 1].decode("utf-8", "replace").split("\n")
            parse_lines(self.path, lines, self.lines + 1, RunRecord.from_dict, self.parsed, [])
            self.lines += len(lines)
            self.offset += end
            self.mark = (self.mark + data[:end])[-MARK:]
        return unterminated(data[end:].decode("utf-8", "replace"), RunRecord.from_dict)


def _read_from(fd: int, offset: int, size: int) -> bytes:
    chunks = []
    while offset < size:
        chunk = os.pread(fd, size - offset, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)
