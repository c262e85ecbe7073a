"""Which directories can be a thread's workspace: an agent may write all of it, and uwf snapshots
all of it, so never the whole system or a system tree, the whole home, or the store itself.
Checked when a thread starts and again when an agent is about to run (engine/contain/policy.py)."""

from __future__ import annotations

import os

from ..errors import UwfError

SYSTEM_PLACES = ("/", "/tmp", "/dev", "/proc", "/sys", "/run", "/etc", "/usr", "/var", "/home")
SYSTEM_TREES = ("/usr", "/etc", "/boot", "/proc", "/sys", "/dev", "/run", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                "/libx32", "/var/lib", "/var/run")  # no workspace in there: the system's own programs and state


class WorkspaceError(UwfError):
    """A directory that cannot be a workspace."""


def under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def inside_any(path: str, parents: list[str]) -> bool:
    return any(under(path, parent) for parent in parents)


def check_workspace(workspace: str, home: str, store_dirs: tuple[str, ...] = (), forks_dir: str | None = None) -> None:
    """Refuse a workspace (a real path) that is the system, a system tree, the home or holds it,
    or inside the store (a fork's own directory in the root's workspaces directory is not the
    store). One that holds the store (a project-local root) at its top is fine: the sandbox keeps
    the store read-only or hidden, and snapshots leave it out; deeper, its directory could be
    moved away and another root put in its place."""
    forks_dir = os.path.realpath(forks_dir) if forks_dir else None
    if forks_dir and workspace != forks_dir and under(workspace, forks_dir):
        store_dirs = ()
    if (
        workspace in SYSTEM_PLACES
        or inside_any(workspace, list(SYSTEM_TREES))
        or workspace == home
        or under(home, workspace)
        or inside_any(workspace, list(store_dirs))
    ):
        raise WorkspaceError(
            f"{workspace} cannot be an agent's workspace: the agent may write all of it, and it is "
            f"{_what(workspace, home, store_dirs)} (give the thread a directory of its own with `uwf thread start -w DIR`, "
            f"or step it from one)"
        )
    for store in store_dirs:
        if under(store, workspace) and store != workspace and os.path.dirname(store) != workspace:
            raise WorkspaceError(
                f"the storage root {store} is inside the workspace {workspace} below its top: an agent may rename the "
                f"directory that holds it and put a root of its own in its place, which your next `uwf` would read; keep "
                f"the root at the workspace's top ({os.path.join(workspace, '.uwf')}) or outside it"
            )


def _what(workspace: str, home: str, store_dirs: tuple[str, ...]) -> str:
    if inside_any(workspace, list(store_dirs)):
        return "inside the storage root"
    if workspace == home or under(home, workspace):
        return "your home directory or holds it"
    return "the system's"


def real_home() -> str:
    """The home directory of the user uwf runs as, whatever $HOME says."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return os.path.expanduser("~")
