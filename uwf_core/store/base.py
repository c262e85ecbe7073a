"""The storage interface: what the engine asks of a root, whatever holds it.

A backend is five parts and two files' worth of text: node bytes by hash,
thread heads moved by compare-and-set, the workflow registry, the runs log,
a lock per stepped thread, and config.yaml's text. The CAS logic (hashing,
verification, schemas) sits above it in store/cas.py, so every backend stores
the same bytes under the same names. The records in records.py and
registry_model.py are what crosses the interface; no backend type leaks past it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ContextManager, Hashable, Protocol

if TYPE_CHECKING:
    from .records import (
        ArchivedThread,
        DamagedEntry,
        QueuedThread,
        RepairReport,
        RunningStep,
        RunRecord,
    )
    from .registry_model import RegistryEntry

# -- the parts a backend provides ------------------------------------------------------


class NodeStore(Protocol):
    """Node bytes by hash, and the type index. Writes are atomic and idempotent."""

    location: str

    def read(self, hash_: str) -> bytes | None: ...
    def write(self, hash_: str, type_hash: str, data: bytes) -> None: ...
    def exists(self, hash_: str) -> bool: ...
    def freshen(self, hash_: str) -> bool:
        """True when the node exists; its age restarts (gc's grace period)."""
    def hashes(self) -> list[str]: ...
    def of_type(self, type_hash: str) -> list[str]:
        """Members listed in the type index, in order of first write (not checked to exist)."""
    def touched_at(self, hash_: str) -> float | None:
        """When the node was last written or freshened (seconds since the epoch)."""
    def touched_all(self) -> dict[str, float]:
        """touched_at of every node at once (gc over many nodes)."""
    def delete(self, hash_: str) -> None: ...
    def purge(self, hashes: list[str]) -> None:
        """Delete nodes that must leave no copy of their bytes behind (a key an agent wrote)."""
    def rebuild_index(self, members: dict[str, list[str]]) -> None: ...
    def index_lock(self) -> ContextManager: ...
    def batch(self, durable: bool = True) -> ContextManager:
        """Writes inside are made durable together, once, when the outermost batch ends (a step's
        nodes: one commit); an exception inside undoes them. `durable=False`: nodes nothing names
        yet, made durable by the next durable commit (a backend may skip their own fsync)."""
    def pack(self) -> int:
        """Fold whatever the backend keeps apart (a file root's loose node files) into its main
        store; returns how many nodes moved. Callers hold index_lock."""
    def derived(self, key: str) -> bytes | None:
        """Rebuildable data computed from nodes (a head's step count...); None when not kept."""
    def put_derived(self, key: str, value: bytes) -> None: ...
    def strays(self) -> list[tuple[str, bool, float]]:
        """Entries that are not nodes: (name, is an interrupted write's temp file, mtime)."""
    def delete_stray(self, name: str) -> None: ...
    def damage(self) -> tuple[str, str] | None:
        """(what, problem) when the storage itself is damaged beyond any one node (a directory
        root's node file: its header, its pages), else None. Read before any node."""


class ThreadIndex(Protocol):
    """Active thread → head, and the archive of ended threads."""

    location: str

    def heads(self) -> dict[str, str]: ...
    def add(self, thread: str, head: str) -> None: ...
    def compare_and_set(
        self,
        thread: str,
        expected: str,
        new: str,
        *,
        archive_reason: str | None = None,
        workflow: str | None = None,
        check=None,
        summary: str | None = None,
    ) -> None:
        """Move the head from `expected` to `new` (archiving when a reason is given, with `summary` in
        the archive record); ConflictError otherwise.
        `check()`, when given, runs with the heads held and may raise to refuse the move."""
    def archive(self, thread: str, workflow: str | None, reason: str, expected: str | None = None, summary: str | None = None) -> str: ...
    def exclusive(self) -> ContextManager:
        """Hold every head still (gc's sweep); compare_and_set and archive wait meanwhile."""
    def history(self) -> list[ArchivedThread]: ...
    def last_archived(self, thread: str) -> ArchivedThread | None: ...
    def workspaces(self) -> dict[str, str]:
        """Thread → its own workspace directory, where it is not its StartNode's (a fork's)."""
    def set_workspace(self, thread: str, path: str) -> None: ...
    def paused(self) -> dict[str, int]:
        """Paused thread → since when (ms): no step starts on one until it is unpaused."""
    def set_paused(self, thread: str, since: int | None) -> bool:
        """Pause a thread from `since`, or unpause it (None); False when it already was so."""
    def restore_archived(self, record: ArchivedThread) -> None:
        """Append an archive record as it is (`uwf root copy`)."""
    def remove(self, thread: str) -> list[str]:
        """A thread out of the index and the archive, its own workspace mapping too (`uwf thread
        rm`): the heads it had (nodes are gc's); [] when it was in neither."""
    def damaged(self) -> list[DamagedEntry]:
        """Entries of the heads or the archive that cannot be read: each hides only itself."""


class Registry(Protocol):
    location: str

    def entries(self) -> dict[str, RegistryEntry]: ...
    def register(self, name: str, hash_: str, source: str | None) -> bool: ...
    def rollback(self, name: str, hash_prefix: str | None = None) -> RegistryEntry: ...
    def restore(self, entry: RegistryEntry) -> None:
        """Set a name's entry as it is, versions and times included (`uwf root copy`)."""
    def remove(self, name: str) -> RegistryEntry:
        """A name out of the registry, every version (`uwf workflow remove`): its entry as it was."""


class RunLog(Protocol):
    def append(self, record: RunRecord) -> None: ...
    def read(self, thread: str | None = None) -> list[RunRecord]: ...
    def of_step(self, step: str) -> list[RunRecord]:
        """The attempts that wrote the StepNode `step` (one; more when a pick copied a fork's)."""
    def damaged(self) -> list[DamagedEntry]: ...


class StepLease(Protocol):
    """A held step lock. `interrupted` names a holder that died holding it."""

    interrupted: RunningStep | None

    def update(self, **fields) -> None: ...
    def say(self, line: str) -> None:
        """One line of the step's (redacted) output, for `live_feed` readers in any process."""
    def __enter__(self) -> StepLease: ...
    def __exit__(self, *exc_info) -> None: ...


class StepLocks(Protocol):
    def acquire(self, thread: str, worker: str | None = None) -> StepLease:
        """A lease to enter with `with`; entering fails at once (LockedError) when another holds it.
        `worker`: the `uwf worker` taking it, named from the lease's first write."""
    def running(self, thread: str) -> RunningStep | None: ...


class Claim(Protocol):
    """A worker's hold on a queued thread, from `claim()` until `release()` (or the end of a `with`).
    Held by the worker's process (a lock that dies with it), so a worker that dies loses it."""

    thread: str
    lost: bool  # another worker took the thread over (a lapsed lease)

    def beat(self) -> bool:
        """Renew the claim's lease; False when it is lost."""
    def release(self) -> None: ...
    def __enter__(self) -> Claim: ...
    def __exit__(self, *exc_info) -> None: ...


class WorkQueue(Protocol):
    """Threads queued for `uwf worker` processes (`uwf thread run --detach`)."""

    def enqueue(self, thread: str) -> bool:
        """Queue a thread (False when it already was)."""
    def dequeue(self, thread: str) -> None: ...
    def entries(self) -> list[QueuedThread]:
        """Queued threads, oldest first, each with the worker holding it (if one is alive)."""
    def claim(self, worker: str, skip: set[str] | None = None) -> Claim | None:
        """Hold the oldest queued thread no live worker holds (not in `skip`, not asking a person at
        its head); None when none."""
    def ask(self, thread: str, head: str | None) -> None:
        """Mark a queued thread as waiting for a person at `head` (None: no longer)."""
    def damaged(self) -> list[DamagedEntry]: ...


class LiveFeed(Protocol):
    """A reader of one thread's step output as it comes (`uwf thread live`)."""

    def attach(self, running_since: int | None) -> None:
        """Where reading starts: the running step's lines from its start where the backend keeps
        them (`running_since`: when it started, ms; None: no step runs), never an ended step's."""

    def read(self, timeout: float) -> list[str | None]:
        """The lines said since the last read, None where a step's lines begin; waiting up to
        `timeout` seconds for one."""
    def close(self) -> None: ...
    def __enter__(self) -> LiveFeed: ...
    def __exit__(self, *exc_info) -> None: ...


class TextFile(Protocol):
    """A small mutable text (config.yaml), replaced whole."""

    location: str

    def read(self) -> str | None: ...
    def write(self, text: str) -> None: ...


class Backend(Protocol):
    """One root. `location` is what agents get in UWF_STORAGE_ROOT to open it again."""

    location: str
    nodes: NodeStore
    threads: ThreadIndex
    registry: Registry
    runs: RunLog
    locks: StepLocks
    queue: WorkQueue
    config: TextFile
    env_path: str  # this host's .env: secrets never live in shared storage
    scratch_dir: str  # this host's temp space (prompt files)
    cache_dir: str  # this host's caches (the workspaces' stat caches): losing it costs time only
    store_dirs: tuple[str, ...]  # the directories the store is (a step agent's sandbox shows them read-only; a text agent's hides them)
    node_dirs: tuple[str, ...]  # where nodes are written (a step agent without staging writes them)
    private_dirs: tuple[str, ...]  # what a staged step agent never sees (the node file, the locks): it reads through uwf
    socket_dirs: tuple[str, ...]  # Unix-socket directories the store is reached through (shown to step agents)

    def new_stage(self) -> str | None:
        """A staging directory for one sandboxed step agent's nodes, or None (it writes the store)."""
    def stage_env(self, stage: str) -> dict[str, str]:
        """The environment that points a step agent's kit at its stage (and at uwf for its reads)."""
    def serve_nodes(self, stage: str):
        """Serve a staged step agent's reads until `.close()` (None where it reads the store itself)."""
    def staged(self, stage: str) -> dict[str, bytes]: ...
    def staged_derived(self, stage: str) -> dict[str, bytes]: ...
    def drop_stage(self, stage: str) -> None: ...
    def live_feed(self, thread: str) -> LiveFeed:
        """What the steps of `thread` say as they run (StepLease.say), from now on, in any process."""

    def change_token(self) -> Hashable:
        """Changes whenever threads, runs, the registry, a step lock or the queue change (for live views)."""

    def wait_for_change(self, token: Hashable, timeout: float) -> Hashable:
        """The change token once it differs from `token`, or after `timeout` seconds (a worker
        waiting for work, a view waiting to refresh: notified where the backend can, polled otherwise)."""

    def temp_files(self) -> list[tuple[str, float]]:
        """Leftovers of interrupted rewrites of the state files: (name, mtime). gc removes old ones."""

    def delete_temp_file(self, name: str) -> None: ...

    def publishing(self) -> ContextManager:
        """Held by a command from before it writes its first node until its nodes are reachable (a
        head, a registered name): gc sweeps only when none is held, so whatever its grace it never
        takes a node a writer is about to publish. Shared: writers never wait for each other."""

    def sweeping(self, timeout: float) -> ContextManager:
        """Held by gc's sweep (and a repair): no writer is between its first node and its publish
        meanwhile, and none starts. LockedError after `timeout` seconds of writers."""

    def idle_locks(self, active: set[str], cutoff: float) -> list[str]:
        """Lock files of threads not in `active`, last changed before `cutoff` (gc removes them)."""

    def drop_idle_lock(self, path: str) -> bool:
        """Remove one unless someone holds it (False then)."""

    def config_lock(self) -> ContextManager:
        """Held while config.yaml is read, changed and written back: parallel `agent add` and
        `setup` each keep their change."""

    def set_aside(self) -> list[str]:
        """Names of the files a repair or an append set aside (`cas fsck` lists them)."""

    def kept_aside(self) -> list[str]:
        """Nodes the lines a repair set aside name (gc's roots too: a set-aside record can be put back)."""

    def repair_state(self) -> list[str]:
        """Set aside the lines of the state files that cannot be read, each into a
        `<file>.damaged-<UTC>` beside it (`uwf cas fsck --repair`); one `file:line -> aside` each."""

    def repair_nodes(self) -> RepairReport:
        """Rebuild damaged node storage from what can still be read (`uwf cas fsck --repair`); a
        backend with nothing of the kind to repair says so in one line (UwfError)."""
