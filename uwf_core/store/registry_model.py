"""The registry's records. Plain classes, no dataclasses: `uwf workflow list` reads only these."""

from __future__ import annotations


class Version:
    """One registered version of a workflow: its hash, when, and the YAML source's content node."""

    __slots__ = ("hash", "timestamp", "source")

    def __init__(self, hash: str, timestamp: int, source: str | None = None) -> None:
        self.hash = hash
        self.timestamp = timestamp
        self.source = source

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"hash": self.hash, "timestamp": self.timestamp}
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

    def versions(self) -> tuple[Version, ...]:
        return (self.current, *self.history)

    def to_dict(self) -> dict[str, object]:
        data = self.current.to_dict()
        data["history"] = [version.to_dict() for version in self.history]
        return data
