"""Paths inside a root that is a directory, and the reader of its YAML state files."""

from __future__ import annotations

import os

from ...errors import StateFileError
from ..files import FileLock, read_text


class Root:
    """Paths inside one storage root. Creating it touches nothing on disk."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(os.path.expanduser(path))

    def join(self, *parts: str) -> str:
        return os.path.join(self.path, *parts)

    @property
    def cas_dir(self) -> str:
        return self.join("cas")

    @property
    def index_dir(self) -> str:
        return self.join("cas", "_index")

    @property
    def locks_dir(self) -> str:
        return self.join("locks")

    @property
    def registry_file(self) -> str:
        return self.join("registry.yaml")

    @property
    def threads_file(self) -> str:
        return self.join("threads.yaml")

    @property
    def history_file(self) -> str:
        return self.join("history.jsonl")

    @property
    def runs_file(self) -> str:
        return self.join("runs.jsonl")

    @property
    def config_file(self) -> str:
        return self.join("config.yaml")

    @property
    def env_file(self) -> str:
        return self.join(".env")

    def lock(self, name: str, *, wait: bool = True, purpose: str = "") -> FileLock:
        return FileLock(os.path.join(self.locks_dir, name + ".lock"), wait=wait, purpose=purpose)


def load_yaml_state(path: str) -> object:
    """A state file's YAML (threads.yaml, registry.yaml), None when it does not exist.

    A file that is not YAML is refused with one line naming it; nothing is changed.
    """
    from ...encoding.simple_yaml import YamlSyntaxError, loads

    text = read_text(path)
    if text is None:
        return None
    try:
        return loads(text)
    except YamlSyntaxError as exc:
        raise StateFileError(f"{path} cannot be read: {exc} (fix or restore it; nothing was changed)") from None
