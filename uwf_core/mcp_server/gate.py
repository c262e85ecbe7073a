"""What an MCP client may do: the write gate, the agents and workspaces it may name, and the
one-line errors it gets (never a traceback)."""

from __future__ import annotations

import os
from dataclasses import dataclass

TYPE_CHECKING = False

if TYPE_CHECKING:
    from ..repo import Repo


class Refused(Exception):
    """A call the server refuses: its message is the whole answer the client gets."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Gate:
    repo: Repo
    writes: bool  # started with --allow write
    workspaces: str  # the directory a thread's workspace must be in (the server's working directory)

    def write(self, tool: str) -> None:
        if not self.writes:
            raise Refused(f"uwf mcp is read-only: {tool} writes to the root (start the server with `uwf mcp --allow write`)")

    def agent(self, name: str | None) -> str | None:
        """An agent the root's config names (or a built-in), never a command line: a client
        chooses among the agents the user set up, it does not bring its own program."""
        if name is None:
            return None
        from ..config.agents import agent_entries

        known = [entry.name for entry in agent_entries(self.repo.config)]
        if name not in known:
            raise Refused(f"unknown agent {name!r}: an MCP client names one of the root's agents ({', '.join(known)})")
        return name

    def workspace(self, path: str | None) -> str | None:
        """A workspace inside the server's directory: a client cannot point an agent that writes
        at the user's home or another project."""
        if path is None:
            return None
        if "\0" in path:
            raise Refused("a workspace path cannot hold a NUL character")
        full = os.path.realpath(os.path.join(self.workspaces, path))
        base = os.path.realpath(self.workspaces)
        if os.path.commonpath([full, base]) != base:
            raise Refused(f"workspace {path} is outside {base}, the directory this server may give agents (uwf mcp --workspaces DIR)")
        return full


def one_line(exc: BaseException) -> str:
    """A uwf error's message, as the CLI says it after `uwf: error:`."""
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(message.split())
