"""Open a root by its location: a directory path, or a `postgresql://` URL (libpq is loaded
only then); any other scheme is refused by name, never taken for a relative directory."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import UwfError
from .location import display_location

if TYPE_CHECKING:
    from .base import Backend

ENV_ROOT = "UWF_STORAGE_ROOT"


def root_location(explicit: str | None = None) -> str:
    """`--root` > `UWF_STORAGE_ROOT` > `~/.uwf`."""
    return explicit or os.environ.get(ENV_ROOT) or os.path.join(os.path.expanduser("~"), ".uwf")


POSTGRES_FORM = "postgresql://[user[:password]@][host][:port]/database[?host=/socket/dir]"


def open_backend(location: str | None = None) -> Backend:
    text = root_location(location)
    scheme, sep, rest = text.partition(":")
    is_scheme = len(scheme) > 1 and scheme[0].isalpha() and all(c.isalnum() or c in "+.-" for c in scheme)
    postgres = scheme.lower().startswith("postgres")
    if sep and is_scheme and (rest.startswith("//") or postgres):
        shown = display_location(text)
        if scheme.lower() in ("postgresql", "postgres") and rest.startswith("//"):
            return _postgres(text)
        if postgres:
            raise UwfError(f"root {shown!r} is not a PostgreSQL URL uwf reads: write {POSTGRES_FORM}")
        raise UwfError(f"root {shown!r}: '{scheme}' roots are not supported (a root is a directory or a postgresql:// URL)")
    from .fs.backend import FsBackend

    return FsBackend(text)


def _postgres(url: str) -> Backend:
    from .pg.libpq import LibpqMissing, load

    try:
        load()
    except LibpqMissing:
        raise UwfError("a postgresql:// root needs libpq, PostgreSQL's client library: install it (apt-get install libpq5) or uwf's postgres extra (pip install -e '.[postgres]' in a checkout)") from None
    from .pg.backend import PgBackend

    backend = PgBackend(url)
    backend.check()  # unreachable or refused: one clear line now, not a traceback later
    return backend
