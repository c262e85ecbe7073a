"""Errors a user can cause.

Each carries one clear line; the CLI prints it as `uwf: error: ...` and exits
1. Anything else that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations


class UwfError(Exception):
    """Base class: a user-facing failure with a one-line message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class NotFoundError(UwfError):
    """A hash, prefix, workflow name, thread or file that does not exist."""


class AmbiguousError(UwfError):
    """A hash prefix that matches more than one node."""


class CorruptError(UwfError):
    """Stored bytes that no longer match their name or their format."""


class ValidationError(UwfError):
    """A payload that does not match its schema, or a schema that is not allowed."""


class WorkflowError(UwfError):
    """A workflow definition refused at put time (YAML, structure or lint)."""


class StateFileError(UwfError):
    """A mutable state file (registry.yaml, threads.yaml, ...) that cannot be read."""


class LockedError(UwfError):
    """A lock held by another process (e.g. a second step of the same thread)."""


class ConflictError(StateFileError):
    """The head moved (or the thread was archived) while a step was running."""


class UsageError(UwfError):
    """A value a command line cannot take (the CLI exits 2, as for argparse's own refusals)."""


class StoreUnavailableError(UwfError):
    """The root cannot be reached right now (a database restarting, a network gone): trying again
    later may work, so a worker waits instead of giving the thread up."""


class PausedError(UwfError):
    """A step asked of a paused thread: none starts until `uwf thread unpause`."""
