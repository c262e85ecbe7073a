"""Open a root by its location: a directory path today; anything with a scheme is refused by name,
never taken for a relative directory called `postgresql:`."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import UwfError

if TYPE_CHECKING:
    from .base import Backend

ENV_ROOT = "UWF_STORAGE_ROOT"


def root_location(explicit: str | None = None) -> str:
    """`--root` > `UWF_STORAGE_ROOT` > `~/.uwf`."""
    return explicit or os.environ.get(ENV_ROOT) or os.path.join(os.path.expanduser("~"), ".uwf")


def open_backend(location: str | None = None) -> Backend:
    text = root_location(location)
    scheme, sep, _ = text.partition(":")
    if sep and scheme.isalpha() and len(scheme) > 1 and (text[len(scheme) + 1 :].startswith("//") or scheme.startswith("postgres")):
        raise UwfError(f"root {text!r}: '{scheme}' roots are not supported by this uwf (a root is a directory path)")
    from .fs.backend import FsBackend

    return FsBackend(text)
