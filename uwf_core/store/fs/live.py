"""A reader of a directory root's live step output (`uwf thread live`): tails locks/live-<ID>.log.

Each step writes a new file there, kept until the next step's replaces it (store/fs/locks.py);
the reader reads each file it finds to its end, then takes up the next one. The file of a step
that ended before the reader came is not told (`attach`). Only a regular file with one link is
read, never through a symlink, at most READ_BYTES a look and lines cut at LIVE_MAX_LINE: a
follower's memory stays small whatever a step writes.
"""

from __future__ import annotations

import os
import stat
import time

from ..records import LIVE_MAX_LINE, live_line

POLL_SECONDS = 0.05  # how often the file is looked at while nothing comes
READ_BYTES = 1024 * 1024  # read at one look at most


class FsLiveFeed:
    def __init__(self, locks_dir: str, thread: str) -> None:
        self.path = os.path.join(locks_dir, f"live-{thread}.log")
        self.fd: int | None = None
        self.inode: int | None = None
        self.partial = b""
        self.skipped: tuple | None = None  # the file of a step that ended before we came (an inode is reused: more than it)
        self.at_end = True  # the last read found the end of the file

    def attach(self, running_since: int | None) -> None:
        """Pass over the file there now unless it is the running step's (`running_since`: when
        that step started, ms): the lines of a step that ended before are not told."""
        try:
            status = os.stat(self.path)
        except OSError:
            return
        if running_since is None or status.st_mtime_ns // 1_000_000 < running_since:
            self.skipped = _signature(status)

    def read(self, timeout: float) -> list[str | None]:
        """The lines written since the last read (None where a step's begin), waiting up to
        `timeout` seconds for one."""
        deadline = time.monotonic() + timeout
        while True:
            lines = self._poll()
            left = deadline - time.monotonic()
            if lines or left <= 0:
                return lines
            time.sleep(min(POLL_SECONDS, left))

    def _poll(self) -> list[str | None]:
        try:
            status = os.stat(self.path)
        except OSError:
            status = None
        now = None if status is None else status.st_ino
        lines: list[str | None] = []
        if self.fd is not None:
            lines += self._drain()
            if now != self.inode and self.at_end:  # another step's file replaced it (or it is gone): this one is read
                lines += self._finish()
        if self.fd is None and status is not None and _signature(status) != self.skipped:
            try:  # never through a link, never blocked on a fifo: only a step's own file is read
                self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                return lines
            status = os.fstat(self.fd)
            if not stat.S_ISREG(status.st_mode) or status.st_nlink != 1:  # a fifo, or a hard link to another file
                self.close()
                return lines
            self.inode = status.st_ino
            lines.append(None)  # a file is a step: its lines begin here
            lines += self._drain()
        return lines

    def _drain(self) -> list[str]:
        chunk = os.read(self.fd, READ_BYTES)
        self.at_end = len(chunk) < READ_BYTES
        data = self.partial + chunk
        *whole, self.partial = data.split(b"\n")
        if len(self.partial) > LIVE_MAX_LINE * 4:  # a line with no end in sight: told as far as it goes
            whole.append(self.partial)
            self.partial = b""
        return [live_line(line.decode("utf-8", "replace")) for line in whole]

    def _finish(self) -> list[str]:
        rest = [self.partial.decode("utf-8", "replace")] if self.partial else []
        self.close()
        return rest

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
        self.fd, self.inode, self.partial = None, None, b""

    def __enter__(self) -> FsLiveFeed:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _signature(status: os.stat_result) -> tuple:
    return status.st_ino, status.st_size, status.st_mtime_ns
