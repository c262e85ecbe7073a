"""Spans that `uwf thread step` processes leave for the one shipper of this host and collector.

A step at its exit writes its spans (already redacted; no header, no key) as one file in the
collector's spool (`$XDG_CACHE_HOME/uwf/otel/<url hash>.spool/`) and starts a shipper only when
none is running: the spool's lock is taken by the step and handed to the shipper it starts,
which holds it while it lives. So a collector that hangs keeps one shipper waiting, not one per
step. The shipper sends what it finds, oldest first, deletes what it sent, and ends when the spool
is empty — after letting the lock go and looking once more, so a file left while it was ending
is never stranded. The spool is bounded (MAX_SPOOL_BYTES, MAX_SPOOL_FILES): a step that finds it
full drops its spans and counts them, and the count is said at most once per half minute on this
host.
"""

from __future__ import annotations

import os
import time

MAX_SPOOL_BYTES = 16 << 20  # spans waiting for the shipper; past this a step's spans are dropped
MAX_SPOOL_FILES = 1000  # ... or past this many steps' files (a step looks at each one's size)
MAX_BATCH_BYTES = 2 << 20  # one export request at most this much of the spool
SUFFIX = ".spans"
LOCK = "lock"
DROPPED = "dropped"  # one line per step that dropped spans: how many


def spool_dir(url: str) -> str:
    from .collector import collector_path

    return collector_path(url, ".spool")


def leave(url: str, data: bytes, spans: int) -> bool:
    """Put one step's spans in the spool. False: it is full (they are counted as dropped), or it
    cannot be written (a cache that is not: traces are best effort)."""
    from ..errors import UwfError
    from ..store.files import atomic_write

    where = spool_dir(url)
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
        files = waiting(where)
        if len(files) >= MAX_SPOOL_FILES or _size(files) + len(data) > MAX_SPOOL_BYTES:
            count_dropped(where, spans)
            return False
        atomic_write(os.path.join(where, f"{time.time_ns():020d}-{os.getpid()}{SUFFIX}"), data, mode=0o600, sync=False)
    except (OSError, UwfError):
        return False  # no cache to write: traces are best effort, the step is not
    return True


def claim(url: str) -> int | None:
    """The spool's lock, open and held (an fd to hand to a new shipper), or None while a shipper
    holds it."""
    import fcntl

    try:
        fd = os.open(os.path.join(spool_dir(url), LOCK), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def waiting(where: str) -> list[str]:
    """The spool's files, oldest first."""
    try:
        names = sorted(name for name in os.listdir(where) if name.endswith(SUFFIX) and not name.startswith("."))
    except OSError:
        return []
    return [os.path.join(where, name) for name in names]


def _size(paths: list[str]) -> int:
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except OSError:
            continue  # sent and deleted meanwhile
    return total


def count_dropped(where: str, spans: int) -> None:
    """Add to the count said later (one short append: steps beside each other never mix lines)."""
    try:
        fd = os.open(os.path.join(where, DROPPED), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    try:
        os.write(fd, f"{spans}\n".encode())
    finally:
        os.close(fd)


def take_dropped(where: str) -> int:
    """The spans dropped since the count was last taken (the count starts again)."""
    path = os.path.join(where, DROPPED)
    taken = f"{path}.{os.getpid()}.taken"
    try:
        os.rename(path, taken)
    except OSError:
        return 0
    try:
        with open(taken, "rb") as file:
            return sum(int(line) for line in file.read().split() if line.isdigit())
    except OSError:
        return 0
    finally:
        try:
            os.unlink(taken)
        except OSError:
            pass
