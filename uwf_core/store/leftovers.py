"""What interrupted commands leave behind and nothing else removes: a fork's workspace whose
thread was never added (the fork failed, or was killed midway: up to a whole tree of files), a
repair's or a step's scratch directory of a uwf that was killed, the lock files of threads that
are no longer active (one per thread ever stepped). `uwf cas gc` removes them, `uwf cas fsck`
names them.

gc looks for them under its sweep's locks: no fork, import or repair is midway then, so a fork's
workspace no thread has is a failed one, not one being made; a step's staging directory older
than the oldest running step is no running step's.
"""

from __future__ import annotations

import os

from ..encoding.ids import is_ulid
from ..encoding.records import record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from .base import Backend

SCRATCH = {"repair-": "a repair's scratch directory (the repair was killed)", "stage-": "a step agent's staging directory (its uwf was killed)"}


@record(frozen=True)
class Leftover:
    path: str
    what: str
    lock: bool = False  # a lock file: removed only while held by no one

    def to_dict(self) -> dict:
        return {"path": self.path, "what": self.what}


def leftovers(backend: Backend, workspaces: str | None, cutoff: float) -> list[Leftover]:
    """Every leftover last changed before `cutoff` (seconds since the epoch)."""
    heads = backend.threads.heads()
    known = set(heads) | {record.thread for record in backend.threads.history()} | set(backend.threads.workspaces())
    found: list[Leftover] = []
    for path in _entries(workspaces):
        name = os.path.basename(path)
        if is_ulid(name) and name not in known and os.path.isdir(path) and not os.path.islink(path) and _older(path, cutoff):
            found.append(Leftover(path, "a fork's workspace that no thread has (the fork failed or was killed)"))
    if backend.store_dirs:  # a directory root's own scratch space (a PostgreSQL root's is shared by the host)
        for path in _entries(backend.scratch_dir):
            what = next((text for prefix, text in SCRATCH.items() if os.path.basename(path).startswith(prefix)), None)
            if what and os.path.isdir(path) and not os.path.islink(path) and _older(path, cutoff):
                found.append(Leftover(path, what))
    found += [Leftover(path, "the lock file of a thread that is not active", lock=True) for path in backend.idle_locks(set(heads), cutoff)]
    return found


def remove(backend: Backend, leftover: Leftover) -> bool:
    """Remove it; False when it could not be (a lock someone holds, a file that would not go)."""
    if leftover.lock:
        return backend.drop_idle_lock(leftover.path)
    from .files import remove_tree

    try:
        remove_tree(leftover.path)  # a directory an agent made read-only, or deep, in a fork's workspace too
    except OSError:
        pass
    return not os.path.lexists(leftover.path)


def _entries(directory: str | None) -> list[str]:
    if not directory:
        return []
    try:
        return [os.path.join(directory, name) for name in sorted(os.listdir(directory))]
    except OSError:
        return []


def _older(path: str, cutoff: float) -> bool:
    try:
        return os.lstat(path).st_mtime < cutoff
    except OSError:
        return False
