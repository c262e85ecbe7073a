"""The empty `.git` uwf makes in a workspace that has none: the mount point of a run's private one.

Threads without a workspace of their own step in the directory they were stepped from, so two
runs (a worker's lanes, two terminals) can share one workspace and so one mount point. Each run
holds a shared lock on it while it runs; it is made by whichever comes first and removed only by
a run that finds it alone, so no run takes another's mount point away mid-run.
"""

from __future__ import annotations

import fcntl
import os


def hold(gitdir: str, locks: str) -> int:
    """The workspace's placeholder .git, made if missing, held until `release`: the lock's fd."""
    fd = _lock(gitdir, locks)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        try:
            os.mkdir(gitdir, 0o755)
        except FileExistsError:
            if not is_placeholder(gitdir):
                raise
    except BaseException:
        os.close(fd)
        raise
    return fd


def release(gitdir: str, locks: str, held: int | None = None) -> None:
    """Let go of the placeholder (`held`: this run's hold), and remove it when no run holds it:
    also one a killed uwf left."""
    if held is not None:
        os.close(held)
    try:
        fd = _lock(gitdir, locks)
    except OSError:
        return  # no lock to take: leave the empty directory (gc-free, harmless) rather than guess
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return  # another run mounts it now: the last one out removes it
    try:
        if is_placeholder(gitdir):
            os.rmdir(gitdir)
    except OSError:
        pass  # something of yours is in it now (a `git init` of yours meanwhile): kept
    finally:
        os.close(fd)


def identity(path: str) -> tuple[int, int, int] | None:
    """What tells the placeholder from a directory made in its place: a freed inode is reused at
    once, but the new directory's ctime is its own."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_ctime_ns)


def in_use(gitdir: str, locks: str) -> bool:
    """Another run holds this placeholder now (its private .git is mounted on it): not a
    repository any run made, and not to be moved."""
    from ....encoding.ids import xxh64_hash

    try:
        fd = os.open(os.path.join(locks, xxh64_hash(os.fsencode(gitdir)) + ".lock"), os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def is_placeholder(path: str) -> bool:
    """An empty `.git` directory: never a repository to git, so nothing of yours."""
    try:
        return os.path.isdir(path) and not os.path.islink(path) and not os.listdir(path)
    except OSError:
        return False


def _lock(gitdir: str, locks: str) -> int:
    from ....encoding.ids import xxh64_hash

    os.makedirs(locks, 0o700, exist_ok=True)
    name = os.path.join(locks, xxh64_hash(os.fsencode(gitdir)) + ".lock")
    return os.open(name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
