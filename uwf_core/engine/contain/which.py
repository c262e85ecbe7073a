"""A program found on a PATH, as `shutil.which` finds it on POSIX, without importing shutil: its
import takes bz2 and lzma with it (~3 ms), on every step that starts an agent."""

from __future__ import annotations

import os


def which(name: str, path: str | None = None) -> str | None:
    """The first runnable `name` along `path` (default $PATH, else os.defpath); a name with a
    directory is looked at as it is. None when there is none, or `path` is empty."""
    if os.path.dirname(name):
        return name if _runnable(name) else None
    if path is None:
        path = os.environ.get("PATH", os.defpath)
    if not path:
        return None
    for entry in dict.fromkeys(path.split(os.pathsep)):
        candidate = os.path.join(entry, name)
        if _runnable(candidate):
            return candidate
    return None


def _runnable(path: str) -> bool:
    return os.path.exists(path) and os.access(path, os.X_OK) and not os.path.isdir(path)
