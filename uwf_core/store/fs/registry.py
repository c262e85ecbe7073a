"""registry.yaml: workflow name → current hash, with every earlier version.

Kept free of dataclasses, PyYAML and the CAS so `uwf workflow list` starts fast.
"""

from __future__ import annotations

import time

from ...encoding.ids import is_hash
from ...encoding.simple_yaml import YamlSyntaxError, dumps, loads
from ...errors import NotFoundError, StateFileError
from .files import Root, atomic_write, read_text

HEADER = "uwf workflow registry: name -> current version and earlier ones (newest first)"


class Version:
    """One registered version of a workflow: its hash, when, and the YAML source's content node."""

    __slots__ = ("hash", "timestamp", "source")

    def __init__(self, hash: str, timestamp: int, source: str | None = None) -> None:
        self.hash = hash
        self.timestamp = timestamp
        self.source = source

    def to_dict(self) -> dict:
        data = {"hash": self.hash, "timestamp": self.timestamp}
        if self.source:
            data["source"] = self.source
        return data

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"Version({self.hash!r}, {self.timestamp!r}, {self.source!r})"


class RegistryEntry:
    """A workflow name's current version and its history, newest first."""

    __slots__ = ("name", "current", "history")

    def __init__(self, name: str, current: Version, history: list[Version]) -> None:
        self.name = name
        self.current = current
        self.history = history

    @property
    def hash(self) -> str:
        return self.current.hash

    def to_dict(self) -> dict:
        data = self.current.to_dict()
        data["history"] = [version.to_dict() for version in self.history]
        return data


def load_registry(root: Root) -> dict[str, RegistryEntry]:
    text = read_text(root.registry_file)
    if text is None:
        return {}
    try:
        raw = loads(text)
    except YamlSyntaxError as exc:
        raise _corrupt(root, str(exc)) from None
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not isinstance(raw.get("workflows", {}), dict):
        raise _corrupt(root, "expected a 'workflows:' mapping")
    entries = {}
    for name, data in (raw.get("workflows") or {}).items():
        if not isinstance(data, dict):
            raise _corrupt(root, f"workflow '{name}' is not a mapping")
        history = data.get("history") or []
        if not isinstance(history, list):
            raise _corrupt(root, f"workflow '{name}': history is not a list")
        current = _version(root, name, data)
        entries[name] = RegistryEntry(name, current, [_version(root, name, item) for item in history])
    return entries


def _version(root: Root, name: str, data: object) -> Version:
    if not isinstance(data, dict):
        raise _corrupt(root, f"workflow '{name}': a version is not a mapping")
    hash_, stamp, source = data.get("hash"), data.get("timestamp"), data.get("source")
    if not is_hash(hash_):
        raise _corrupt(root, f"workflow '{name}': {hash_!r} is not a hash")
    if not isinstance(stamp, str) or not stamp.isdigit():
        raise _corrupt(root, f"workflow '{name}': timestamp {stamp!r} is not a number")
    if source is not None and not is_hash(source):
        raise _corrupt(root, f"workflow '{name}': source {source!r} is not a hash")
    return Version(hash_, int(stamp), source)


def _corrupt(root: Root, problem: str) -> StateFileError:
    return StateFileError(f"{root.registry_file} cannot be read: {problem} (fix or restore it; nothing was changed)")


def save_registry(root: Root, entries: dict[str, RegistryEntry]) -> None:
    data = {"workflows": {name: entry.to_dict() for name, entry in sorted(entries.items())}}
    atomic_write(root.registry_file, dumps(data, HEADER).encode("utf-8"))


def lookup(root: Root, name: str) -> RegistryEntry | None:
    return load_registry(root).get(name)


def register(root: Root, name: str, hash_: str, source: str | None) -> bool:
    """Point `name` at `hash_`; the previous version goes to history. False if already current."""
    with root.lock("registry"):
        entries = load_registry(root)
        entry = entries.get(name)
        if entry is not None and entry.current.hash == hash_:
            return False
        version = Version(hash_, int(time.time() * 1000), source)
        if entry is None:
            entries[name] = RegistryEntry(name, version, [])
        else:
            entries[name] = RegistryEntry(name, version, [entry.current, *entry.history])
        save_registry(root, entries)
        return True


def rollback(root: Root, name: str, hash_prefix: str | None = None) -> RegistryEntry:
    """Make a history version current again (default: the newest); the current one goes to history."""
    with root.lock("registry"):
        entries = load_registry(root)
        entry = entries.get(name)
        if entry is None:
            raise NotFoundError(f"no workflow named '{name}'")
        if not entry.history:
            raise NotFoundError(f"workflow '{name}' has no earlier version to roll back to")
        index = 0
        if hash_prefix:
            wanted = hash_prefix.upper()
            matches = [i for i, version in enumerate(entry.history) if version.hash.startswith(wanted)]
            if not matches:
                raise NotFoundError(f"workflow '{name}' has no earlier version {hash_prefix}")
            index = matches[0]
        chosen = entry.history[index]
        rest = entry.history[:index] + entry.history[index + 1 :]
        entries[name] = RegistryEntry(name, chosen, [entry.current, *rest])
        save_registry(root, entries)
        return entries[name]
