"""What a bundle file may be: its layout, the limits it is read under, and the one error for
what it may not be. The numbers are what bundle_read.py enforces entry by entry as it reads."""

from __future__ import annotations

from ..errors import UwfError

FORMAT = "uwf-bundle"
VERSION = 1
PREFIX = "uwf-bundle/"
MANIFEST = PREFIX + "manifest.json"
NODES = PREFIX + "nodes/"

MIB = 1024 * 1024
MAX_NODE_BYTES = 256 * MIB  # far above any node uwf writes (a bytes node of a 50 MB file is 67 MB of base64)
MAX_MANIFEST_BYTES = 64 * MIB  # a million nodes' hashes take about 25 MB
MAX_NODES = 1_000_000
# Items (elements, keys and values) a node may hold, each a Python object when decoded, up to ~72
# bytes (an empty map). Above the densest JSON an 8,000,000-character answer holds ([0,0,...]:
# 4,000,000) and a directory of 500,000 files (9 per tree entry); an array of 30 million nulls, a
# 30 MB node, is refused on its first bytes.
MAX_NODE_ITEMS = 5_000_000
MAX_TOTAL_BYTES = 16 * 1024 * MIB  # tar bytes in all, what the temporary file may reach
MAX_RATIO = 100  # tar bytes per compressed byte; JSON in CBOR compresses 3 to 20-fold
RATIO_GRACE_BYTES = 32 * MIB  # a small bundle may compress as well as it likes
CHUNK = MIB
BLOCK = 512
FILE_TYPES = (b"0", b"\0", b"7")  # regular and contiguous files, as tarfile reads them


class BundleError(UwfError):
    """A bundle that cannot be read or must be refused; nothing was imported."""


def size_text(count: int) -> str:
    for unit, size in (("GiB", 1024 * MIB), ("MiB", MIB)):
        if count >= size and count % size == 0:
            return f"{count // size:,} {unit}"
    return f"{count:,} bytes"
