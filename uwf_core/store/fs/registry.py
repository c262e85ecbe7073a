"""registry.yaml: workflow name → current hash, with every earlier version.

Kept free of PyYAML and the CAS so `uwf workflow list` starts fast.
"""

from __future__ import annotations

import time

from ...encoding.ids import is_hash
from ...encoding.simple_yaml import dumps
from ...errors import NotFoundError, StateFileError
from ..files import atomic_write
from ..registry_model import RegistryEntry, Version
from .root import Root, load_yaml_state

HEADER = "uwf workflow registry: name -> current version and earlier ones (newest first)"


def load_registry(root: Root) -> dict[str, RegistryEntry]:
    raw = load_yaml_state(root.registry_file)
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


class FsRegistry:
    """registry.yaml, rewritten whole under its lock."""

    __slots__ = ("root", "location")

    def __init__(self, root: Root) -> None:
        self.root = root
        self.location = root.registry_file

    def entries(self) -> dict[str, RegistryEntry]:
        return load_registry(self.root)

    def register(self, name: str, hash_: str, source: str | None) -> bool:
        """Point `name` at `hash_`; the previous version goes to history. False if already current."""
        with self.root.lock("registry"):
            entries = load_registry(self.root)
            entry = entries.get(name)
            if entry is not None and entry.current.hash == hash_:
                return False
            version = Version(hash_, int(time.time() * 1000), source)
            if entry is None:
                entries[name] = RegistryEntry(name, version, [])
            else:
                entries[name] = RegistryEntry(name, version, [entry.current, *entry.history])
            save_registry(self.root, entries)
            return True

    def restore(self, entry: RegistryEntry) -> None:
        with self.root.lock("registry"):
            entries = load_registry(self.root)
            entries[entry.name] = entry
            save_registry(self.root, entries)

    def remove(self, name: str) -> RegistryEntry:
        with self.root.lock("registry"):
            entries = load_registry(self.root)
            entry = entries.pop(name, None)
            if entry is None:
                raise NotFoundError(f"no workflow named '{name}'")
            save_registry(self.root, entries)
            return entry

    def rollback(self, name: str, hash_prefix: str | None = None) -> RegistryEntry:
        """Make a history version current again (default: the newest); the current one goes to history."""
        with self.root.lock("registry"):
            entries = load_registry(self.root)
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
            save_registry(self.root, entries)
            return entries[name]
