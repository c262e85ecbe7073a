"""`uwf thread rm` and `uwf workflow remove`: a thread or a workflow name out of the root's index
and history. Their nodes stay until `uwf cas gc` (a fork may share them, a bundle may name them);
each removal says how many nodes nothing else reaches any more, which gc will then free."""

from __future__ import annotations

import os

from ..encoding.records import record
from ..errors import UwfError

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

    from ..repo import Repo


@record(frozen=True)
class Removed:
    """What `remove_thread` or `remove_workflow` took out, and what gc will then free."""

    name: str  # the thread's id, or the workflow's name
    heads: list[str]  # the thread's heads (active, archived), or the workflow's versions
    workspace: str | None  # a thread's own directory uwf made and removed with it
    frees: int  # nodes nothing else reaches now: `uwf cas gc` frees them (after its grace period)

    def to_json(self) -> dict[str, Any]:
        data = {"removed": self.name, "heads": self.heads, "frees": self.frees}
        if self.workspace:
            data["workspace"] = self.workspace
        return data


def remove_thread(repo: Repo, thread: str) -> Removed:
    """Refused while a step of it runs (its step lock is held for the removal, so none starts)."""
    from .ops import resolve_thread_id

    thread_id = resolve_thread_id(repo, thread)
    with repo.locks.acquire(thread_id):
        own = repo.threads.workspaces().get(thread_id)
        heads = repo.threads.remove(thread_id)
    if not heads:
        raise UwfError(f"no thread '{thread_id}': it is neither active nor archived (removed already?)")
    removed_dir = None
    if own and _made_by_uwf(repo, own):
        from ..store.files import remove_tree

        try:
            remove_tree(own)
            removed_dir = own
        except OSError:
            pass  # its files stay; `uwf cas gc` lists what interrupted commands leave
    return Removed(thread_id, heads, removed_dir, _frees(repo, heads))


def remove_workflow(repo: Repo, name: str, force: bool = False) -> Removed:
    """Refused while an active thread runs one of its versions, unless `force` (those threads
    keep their workflow: it is in their nodes; only the name goes)."""
    from ..errors import NotFoundError

    entry = repo.registry.entries().get(name)
    if entry is None:
        raise NotFoundError(f"no workflow named '{name}'")
    versions = {version.hash for version in entry.versions()}
    using = [thread for thread, head in repo.threads.heads().items() if _workflow_of_head(repo, head) in versions]
    if using and not force:
        shown = ", ".join(using[:5]) + (f" and {len(using) - 5} more" if len(using) > 5 else "")
        raise UwfError(f"workflow '{name}' is run by {len(using)} active thread{'s' if len(using) != 1 else ''} ({shown}): "
                       f"end them first, or remove the name anyway with --force (they go on)")
    removed = repo.registry.remove(name)
    hashes = [hash_ for version in removed.versions() for hash_ in (version.hash, version.source) if hash_]
    return Removed(name, [version.hash for version in removed.versions()], None, _frees(repo, hashes))


def _workflow_of_head(repo: Repo, head: str) -> str | None:
    from .nodes import start_of

    try:
        return start_of(repo.nodes, head)[1].workflow
    except UwfError:
        return None


def _made_by_uwf(repo: Repo, path: str) -> bool:
    """A fork's directory in the root's workspaces directory: uwf's to remove; one the user named is not."""
    from .files import workspaces_dir

    try:
        forks = os.path.realpath(workspaces_dir(repo))
    except UwfError:
        return False
    return os.path.dirname(os.path.realpath(path)) == forks


def _frees(repo: Repo, roots: list[str]) -> int:
    """Nodes `roots` reach that no root left reaches."""
    from ..store.gc import gc_roots, mark

    store = repo.nodes
    theirs, _ = mark(store, list(roots))
    kept, _ = mark(store, gc_roots(repo.backend))
    return len(theirs - kept)
