"""Host-local file primitives: atomic rewrite (temp file in the same directory, fsync,
rename), append of one line, read, and exclusive locks (flock). The file backend is
built on them, and so is everything that is local to a host whatever the backend:
.env, prompt files, the editor's temp file."""

from __future__ import annotations

import errno
import fcntl
import os

from ..errors import LockedError, UwfError


def ensure_dir(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise UwfError(f"cannot create directory {path}: {exc.strerror}") from None


def remove_tree(path: str) -> None:
    """`path` and everything below it gone, however deep (no recursion; past the longest path the
    kernel takes, coreutils' `chmod -R` and `rm -rf`, which walk by directory) and whatever modes a
    run gave its directories (each is opened to us again first). OSError when something cannot go."""
    try:
        _remove_tree(path)
    except OSError:
        if not os.path.lexists(path):
            raise
        import subprocess

        for argv in (["chmod", "-R", "u+rwx", "--", path], ["rm", "-rf", "--", path]):
            try:
                subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if os.path.lexists(path):
            raise


def _remove_tree(path: str) -> None:
    if not os.path.lexists(path):
        return
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
        return
    stack = [(path, False)]
    while stack:
        directory, emptied = stack.pop()
        if emptied:
            os.rmdir(directory)
            continue
        try:
            os.chmod(directory, 0o700)
        except OSError:
            pass  # not ours to open: the listing below says so
        stack.append((directory, True))
        with os.scandir(directory) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, False))
                else:
                    os.unlink(entry.path)


def temp_path_for(path: str) -> str:
    """A unique temp name beside `path` (same directory, so rename is atomic).

    Built from pid and random bytes rather than `tempfile`, whose import
    costs more than the rest of `uwf`'s start-up.
    """
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")


def atomic_write(path: str, data: bytes, *, mode: int = 0o644, sync: bool = True) -> None:
    """Replace `path` with `data` so readers see the old or the new file, never a mix."""
    ensure_dir(os.path.dirname(path))
    tmp = temp_path_for(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise UwfError(f"cannot write {path}: {exc.strerror}") from None


def append_line(path: str, line: str, *, sync: bool = True) -> None:
    """Append one line, whole or not at all (callers hold the file's lock).

    A write cut short (a full disk) is cut back off, so readers never see half a record; a tail
    torn earlier (a crash mid-write, never acknowledged: readers skip it) is cut off too, into
    `<path>.torn` beside it, so this record is never glued onto it and no half record is left
    in the middle of the log. `sync=False` for a log whose last line may be lost in a power cut
    without losing anything else."""
    ensure_dir(os.path.dirname(path))
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as exc:
        raise UwfError(f"cannot append to {path}: {exc.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            size = _cut_torn_tail(path, fd, size)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if sync:
                os.fsync(fd)
        except OSError as exc:
            _cut_back(fd, size)
            raise UwfError(f"cannot append to {path}: {exc.strerror}") from None
    except OSError as exc:
        raise UwfError(f"cannot append to {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _cut_torn_tail(path: str, fd: int, size: int) -> int:
    """Move the bytes after the last newline to `<path>.torn` (appended, durably), then cut them
    off; the new size. Should the move fail, the tail is ended with a newline instead: a damaged
    line readers skip, which `cas fsck --repair` sets aside."""
    start = size
    while start > 0:
        chunk = os.pread(fd, min(65536, start), max(0, start - 65536))
        found = chunk.rfind(b"\n")
        if found >= 0:
            start = start - len(chunk) + found + 1
            break
        start -= len(chunk)
    tail = os.pread(fd, size - start, start)
    try:
        aside = os.open(path + ".torn", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            view = memoryview(tail + b"\n")
            while view:
                view = view[os.write(aside, view) :]
            os.fsync(aside)
        finally:
            os.close(aside)
        os.ftruncate(fd, start)
        return start
    except OSError:
        os.write(fd, b"\n")
        return size + 1


def _cut_back(fd: int, size: int) -> None:
    """Undo a partial append. Shrinking needs no free block; should it fail all the same, the
    next append ends the torn tail and readers skip it."""
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError:
        pass


def read_lines(path: str, errors: str = "surrogateescape") -> list[str] | None:
    """A file's lines as text, None when it does not exist. Bytes that are not UTF-8 are kept as
    surrogates (a state file rewritten keeps a damaged line byte for byte), or, with
    `errors="replace"`, become U+FFFD (a log read for its records: nothing can print a surrogate)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UwfError(f"cannot read {path}: {exc.strerror}") from None
    return data.decode("utf-8", errors).split("\n")


def read_text(path: str) -> str | None:
    """The file's text, or None when it does not exist."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UwfError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UwfError(f"cannot read {path}: not UTF-8 text") from None


def read_regular(path: str, limit: int) -> bytes | None:
    """A regular file's bytes, at most `limit`; None for anything else. Never through a link,
    never a fifo that would wait for a writer: for files an agent may have made."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_text_lossy(path: str, limit: int = 1 << 26) -> str:
    """A file's text as far as it can be read (at most `limit` bytes), "" when it cannot."""
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


class FileLock:
    """An exclusive flock. With `wait=False` a held lock raises LockedError naming the holder."""

    __slots__ = ("path", "wait", "purpose", "fd", "stale_info")

    def __init__(self, path: str, *, wait: bool = True, purpose: str = "") -> None:
        self.path = path
        self.wait = wait
        self.purpose = purpose
        self.fd: int | None = None
        self.stale_info = ""

    def acquire(self) -> FileLock:
        ensure_dir(os.path.dirname(self.path))
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise UwfError(f"cannot lock {self.path}: {exc.strerror}") from None
        try:
            flags = fcntl.LOCK_EX if self.wait else fcntl.LOCK_EX | fcntl.LOCK_NB
            fcntl.flock(fd, flags)
        except OSError as exc:
            holder = _read_holder(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                what = self.purpose or os.path.basename(self.path)
                raise LockedError(f"{what} is locked by {holder or 'another process'}") from None
            raise UwfError(f"cannot lock {self.path}: {exc.strerror}") from None
        self.fd = fd
        self.stale_info = _read_holder(fd)  # non-empty only if the last holder died holding it
        self.write_info(f"pid {os.getpid()}")
        return self

    def write_info(self, text: str) -> None:
        """Describe the holder (read by whoever finds the lock taken). Advisory: on a full disk
        the lock is still held, only its description is missing."""
        if self.fd is not None:
            data = (text.rstrip("\n") + "\n").encode("utf-8")
            try:
                os.ftruncate(self.fd, 0)
                os.pwrite(self.fd, data, 0)
            except OSError:
                pass

    def release(self) -> None:
        if self.fd is not None:
            try:
                os.ftruncate(self.fd, 0)
            except OSError:
                pass
            finally:
                # unlocked first: a child forked meanwhile (another lane spawning its agent) holds a
                # copy of the descriptor until it execs, and would keep the lock alive
                try:
                    fcntl.flock(self.fd, fcntl.LOCK_UN)
                except OSError:
                    pass
                os.close(self.fd)
                self.fd = None

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self.release()


class SharedFileLock:
    """A shared flock: many holders at once, and an exclusive FileLock of the same file waits for
    all of them. Where the file cannot be made (a read-only root) nothing is held: nothing can
    be written there either, and the write itself says why."""

    __slots__ = ("path", "fd")

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: int | None = None

    def __enter__(self) -> SharedFileLock:
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            fd = os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o644)
        except OSError:
            return self
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
        except OSError as exc:
            os.close(fd)
            raise UwfError(f"cannot lock {self.path}: {exc.strerror}") from None
        self.fd = fd
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing drops the flock
            self.fd = None


class PatientLock:
    """An exclusive FileLock tried for `seconds`, then LockedError naming what it waited for."""

    __slots__ = ("lock", "seconds", "waiting_for")

    def __init__(self, lock: FileLock, seconds: float, waiting_for: str) -> None:
        self.lock, self.seconds, self.waiting_for = lock, seconds, waiting_for

    def __enter__(self) -> FileLock:
        import time

        deadline = time.monotonic() + self.seconds
        while True:
            try:
                return self.lock.acquire()
            except LockedError:
                if time.monotonic() >= deadline:
                    raise LockedError(f"{self.waiting_for} for {self.seconds:g} s; try again") from None
                time.sleep(0.05)

    def __exit__(self, *exc_info: object) -> None:
        self.lock.release()


def _read_holder(fd: int) -> str:
    try:
        return os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
    except OSError:
        return ""
