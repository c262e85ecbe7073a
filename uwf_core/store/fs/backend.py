"""A root that is a directory: the file backend's parts bundled behind store.base.Backend."""

from __future__ import annotations

import os
from functools import cached_property

from ..files import atomic_write, read_text
from .root import Root


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
        self.config = FsConfigFile(self.root.config_file)
        self.env_path = self.root.env_file
        self.scratch_dir = self.root.join("tmp")

    @cached_property
    def nodes(self):
        from .nodes import FsNodeStore

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

    def change_token(self) -> tuple:
        """The state files' and step locks' (size, mtime): equal tokens mean nothing to reload."""
        paths = [self.root.threads_file, self.root.history_file, self.root.runs_file, self.root.registry_file, self.root.config_file]
        try:
            paths += sorted(os.path.join(self.root.locks_dir, name) for name in os.listdir(self.root.locks_dir) if name.startswith("thread-"))
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
