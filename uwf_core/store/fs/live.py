"""A reader of a directory root's live step output (`uwf thread live`): tails locks/live-<ID>.log.

Each step writes a new file there and removes it when it ends (store/fs/locks.py); the reader
keeps the file it opened until it has read it to the end, then takes up the next one, so a
step's last lines are read even after its file is gone.
"""

from __future__ import annotations

import os
import stat
import time

POLL_SECONDS = 0.05  # how often the file is looked at while nothing comes


class FsLiveFeed:
    def __init__(self, locks_dir: str, thread: str) -> None:
        self.path = os.path.join(locks_dir, f"live-{thread}.log")
        self.fd: int | None = None
        self.inode: int | None = None
        self.partial = b""

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
            now = os.stat(self.path).st_ino
        except OSError:
            now = None
        lines: list[str | None] = []
        if self.fd is not None:
            lines += self._drain()
            if now != self.inode:  # the step ended (its file is gone) or another began: this one is read
                lines += self._finish()
        if self.fd is None and now is not None:
            try:  # never through a link, never blocked on a fifo: only a step's own file is read
                self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                return lines
            status = os.fstat(self.fd)
            if not stat.S_ISREG(status.st_mode):
                self.close()
                return lines
            self.inode = status.st_ino
            lines.append(None)  # a file is a step: its lines begin here
            lines += self._drain()
        return lines

    def _drain(self) -> list[str]:
        chunks = [self.partial]
        while True:
            chunk = os.read(self.fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        data = b"".join(chunks)
        *whole, self.partial = data.split(b"\n")
        return [line.decode("utf-8", "replace") for line in whole]

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
