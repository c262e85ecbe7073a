"""A root that is a directory: the file backend's parts bundled behind store.base.Backend."""

from __future__ import annotations

import os
from functools import cached_property

from ...errors import UwfError
from ..files import atomic_write, read_text, read_text_lossy
from ..location import not_a_directory
from .root import PUBLISH_LOCK, Root

POLL_SECONDS = 0.1  # how often wait_for_change looks at the state files


class FsConfigFile:
    __slots__ = ("location",)

    def __init__(self, path: str) -> None:
        self.location = path

    def read(self) -> str | None:
        return read_text(self.location)

    def write(self, text: str) -> None:
        atomic_write(self.location, text.encode("utf-8"))


class FsBackend:
    """Every part reads its own file when asked; nothing is cached here (the Repo above caches
    what never changes). Parts are built on first use, so `uwf workflow list` loads the
    registry's module and nothing else."""

    def __init__(self, path: str) -> None:
        self.root = Root(path)
        self.location = self.root.path
        problem = not_a_directory(self.location)
        if problem:
            raise UwfError(problem)
        self.config = FsConfigFile(self.root.config_file)
        self.env_path = self.root.env_file
        self.scratch_dir = self.root.join("tmp")
        self.cache_dir = self.root.join("cache")  # the workspaces' stat caches
        self.store_dirs = (self.root.path,)  # the whole store: hidden from text agents, read-only to step agents
        self.node_dirs = (self.root.cas_dir,)  # where nodes are written (a step agent without a sandbox writes there)
        self.private_dirs = (self.root.cas_dir, self.root.locks_dir)  # never shown to a staged step agent: it reads through uwf
        self.socket_dirs: tuple[str, ...] = ()

    @cached_property
    def nodes(self):
        from .nodes import FsNodeStore

        stage = os.environ.get("UWF_STAGING")  # a sandboxed step agent: its writes go to uwf's staging file
        if stage:
            from .node_broker import NODES_ENV, BrokeredNodes
            from .staged import StagedNodeStore

            broker = os.environ.get(NODES_ENV)  # and its reads come through uwf (node_broker.py)
            main = BrokeredNodes(broker, self.root.cas_dir) if broker else FsNodeStore(self.root)
            return StagedNodeStore(main, stage)
        return FsNodeStore(self.root)

    @cached_property
    def threads(self):
        from .threads import FsThreadIndex

        return FsThreadIndex(self.root)

    @cached_property
    def registry(self):
        from .registry import FsRegistry

        return FsRegistry(self.root)

    @cached_property
    def runs(self):
        from .runs import FsRunLog

        return FsRunLog(self.root)

    @cached_property
    def locks(self):
        from .locks import FsStepLocks

        return FsStepLocks(self.root)

    @cached_property
    def queue(self):
        from .queue import FsWorkQueue

        return FsWorkQueue(self.root)

    def live_feed(self, thread: str):
        from .live import FsLiveFeed

        return FsLiveFeed(self.root.locks_dir, thread)

    # -- a sandboxed step agent's staging file (store/fs/staged.py) --------------------------

    def new_stage(self) -> str | None:
        """A directory of its own for one step agent's nodes (in this root's scratch space)."""
        import tempfile

        os.makedirs(self.scratch_dir, exist_ok=True)
        return os.path.realpath(tempfile.mkdtemp(prefix="stage-", dir=self.scratch_dir))  # as the sandbox mounts it

    def stage_env(self, stage: str) -> dict[str, str]:
        """What tells the agent's kit where it writes (the staging file) and reads (uwf's broker)."""
        from .node_broker import NODES_ENV, socket_path
        from .staged import STAGING_ENV

        return {STAGING_ENV: stage, NODES_ENV: socket_path(stage)}

    def serve_nodes(self, stage: str):
        """uwf's side of the agent's reads, until closed (store/fs/node_broker.py)."""
        from .node_broker import NodeBroker
        from .nodes import FsNodeStore

        return NodeBroker(FsNodeStore(self.root), stage)

    def staged(self, stage: str) -> dict[str, bytes]:
        """The nodes an agent wrote there, in the order it wrote them (refused when too many, or
        not the shape uwf makes: store/fs/staged.py)."""
        from .staged import staged_nodes

        return staged_nodes(stage)

    def staged_derived(self, stage: str) -> dict[str, bytes]:
        """The derived data an agent wrote there (uwf takes in only what it can check)."""
        from .staged import staged_derived

        return staged_derived(stage)

    def drop_stage(self, stage: str) -> None:
        """Whatever the agent made of its staging directory (a read-only tree too): gone, or left
        for gc (store/leftovers.py)."""
        from ..files import remove_tree

        try:
            remove_tree(stage)
        except OSError:
            pass

    # -- gc against writers (store/base.py: publishing, sweeping) ---------------------------

    def publishing(self):
        from ..files import SharedFileLock

        return SharedFileLock(os.path.join(self.root.locks_dir, PUBLISH_LOCK + ".lock"))

    def sweeping(self, timeout: float):
        from ..files import PatientLock

        lock = self.root.lock(PUBLISH_LOCK, wait=False)
        return PatientLock(lock, timeout, "gc waited for commands writing nodes (a start, a put, an import, a fork, a copy)")

    def repair_nodes(self):
        """`uwf cas fsck --repair`: rebuild a damaged cas/nodes.sqlite (store/fs/repair.py)."""
        from .nodes import FsNodeStore
        from .repair import repair_node_file

        if not isinstance(self.nodes, FsNodeStore):
            raise UwfError("a step agent cannot repair the node store: it only adds nodes")
        return repair_node_file(self.root, self.nodes.db)

    def config_lock(self):
        return self.root.lock("config")

    def idle_locks(self, active: set[str], cutoff: float) -> list[str]:
        from ...encoding.ids import is_ulid

        found = []
        try:
            names = sorted(os.listdir(self.root.locks_dir))
        except OSError:
            return []
        for name in names:
            thread = name.removesuffix(".lock").removesuffix(".log").partition("-")[2]
            lock = name.startswith(("thread-", "claim-")) and name.endswith(".lock")
            stream = name.startswith("live-") and name.endswith(".log")  # a step's live lines its holder left (it died)
            if (lock or stream) and is_ulid(thread) and thread not in active:
                path = os.path.join(self.root.locks_dir, name)
                try:
                    if os.lstat(path).st_mtime < cutoff:
                        found.append(path)
                except OSError:
                    continue
        return found

    def drop_idle_lock(self, path: str) -> bool:
        """Removed while held, so no one can hold the file being removed."""
        from ...errors import LockedError
        from ..files import FileLock

        lock = FileLock(path, wait=False)
        try:
            lock.acquire()
        except (LockedError, UwfError):
            return False
        try:
            os.unlink(path)
        except OSError:
            return False
        finally:
            lock.release()
        return True

    def set_aside(self) -> list[str]:
        """The files a repair or an append set aside in the root (`*.damaged-*`, `*.torn`)."""
        from .root import SET_ASIDE_SUFFIX

        try:
            return sorted(name for name in os.listdir(self.root.path) if SET_ASIDE_SUFFIX in name or name.endswith(".torn"))
        except OSError:
            return []

    def kept_aside(self) -> list[str]:
        """Nodes named in the lines a repair or an append set aside: gc keeps them, so a thread
        whose record was set aside can still be put back by hand. A hash cut short (a line torn
        by hand) keeps every node it is the start of."""
        import re

        found: set[str] = set()
        for name in self.set_aside():
            data = read_text_lossy(self.root.join(name))
            found.update(re.findall(r"(?<![0-9A-Z])[0-9A-HJKMNP-TV-Z]{8,13}(?![0-9A-Z])", data))
        if not found:
            return []
        whole = {token for token in found if len(token) == 13}
        cut = tuple(token for token in found if len(token) < 13)
        return sorted(hash_ for hash_ in self.nodes.hashes() if hash_ in whole or (cut and hash_.startswith(cut)))

    def repair_state(self) -> list[str]:
        """`uwf cas fsck --repair`: every state file's unreadable lines set aside (store/fs/root.py)."""
        import time

        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        return self.threads.mend(stamp) + self.runs.mend(stamp) + self.queue.mend(stamp)

    def wait_for_change(self, token, timeout: float):
        """Polled: a directory root has no one to notify it. Ten times a second (a stat of a dozen
        files each): an idle worker takes queued work within 0.1 s, a map's children included."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            current = self.change_token()
            if current != token or time.monotonic() >= deadline:
                return current
            time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))

    def temp_files(self) -> list[tuple[str, float]]:
        """`.<file>.<pid>.<random>.tmp` beside threads.yaml, registry.yaml, config.yaml (a SIGKILL mid-rewrite)."""
        found = []
        try:
            names = os.listdir(self.root.path)
        except OSError:
            return []
        for name in sorted(names):
            if name.startswith(".") and name.endswith(".tmp"):
                try:
                    found.append((name, os.stat(self.root.join(name)).st_mtime))
                except OSError:
                    continue
        return found

    def delete_temp_file(self, name: str) -> None:
        if not (name.startswith(".") and name.endswith(".tmp")) or os.sep in name:
            raise ValueError(f"{name!r} is not a temp file of this root")
        try:
            os.unlink(self.root.join(name))
        except FileNotFoundError:
            pass

    def change_token(self) -> tuple:
        """The state files' and step locks' (size, mtime): equal tokens mean nothing to reload."""
        paths = [self.root.threads_file, self.root.history_file, self.root.runs_file, self.root.registry_file, self.root.config_file,
                 self.root.join("queue.yaml"), self.root.join("paused.yaml")]
        try:
            paths += sorted(os.path.join(self.root.locks_dir, name) for name in os.listdir(self.root.locks_dir) if name.startswith(("thread-", "claim-")))
        except OSError:
            pass
        token = []
        for path in paths:
            try:
                stat = os.stat(path)
                token.append((path, stat.st_size, stat.st_mtime_ns))
            except OSError:
                token.append((path, None, None))
        return tuple(token)
