"""A root's location as text people may see: below store/open.py and the backends, which both
show it (a PostgreSQL URL's password must never reach a message)."""

from __future__ import annotations


def display_location(location: str) -> str:
    """A root's location as people may see it: a URL's password hidden."""
    import re

    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", location)


def not_a_directory(location: str) -> str | None:
    """Why a directory root's path that exists as something cannot be one (None: it is a
    directory, or nothing is there yet): a file, or a symbolic link that leads nowhere."""
    import errno
    import os

    if not os.path.lexists(location) or os.path.isdir(location):  # in this order: made meanwhile, it is a directory
        return None
    if os.path.islink(location):
        try:
            os.stat(location)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return f"the root {location} is a symbolic link that loops back on itself: give a directory with --root or UWF_STORAGE_ROOT"
            return f"the root {location} is a symbolic link to {os.readlink(location)}, which does not exist: create that directory, or give another root"
    return f"the root {location} is a file, not a directory (give a directory with --root or UWF_STORAGE_ROOT)"
