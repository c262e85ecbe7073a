"""The snapshots around one step: the workspace as the step found it, and as the step left it.

Before the agent runs, the workspace is snapshot and held against the tree the head names: a
difference was made by hand between steps, and the step records it (`filesBefore`) and says so.
After the agent (whose processes have all ended: engine/contain/sandbox.py), the workspace is snapshot
again and the new StepNode names that tree (`files`). A step-protocol agent's StepNode is
rewritten with it; the agent's own copy is left for gc. A failed snapshot fails the step: the
head stays. The two snapshots share one stat index, read before and written after (one walk's
worth of index per step, however many directories).
"""

from __future__ import annotations

import os

from ..encoding.records import record, replace
from ..errors import UwfError
from ..thread.files import files_of, snapshot, snapshots_on, stat_index, thread_workspace
from ..thread.nodes import read_step
from ..thread.write import store_step
from ..workspace.snapshot import SnapshotError
from ..workspace.tree import show_path
from .attempt import StepError

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from ..repo import Repo
    from ..thread.model import ThreadContext
    from ..workspace.stat_cache import StatCache
    from .call import AgentCall


@record(frozen=True)
class Before:
    workspace: str
    tree: str  # the workspace as the step found it
    by_hand: bool  # not the tree the head names: changed between steps
    notes: tuple[str, ...] = ()  # what the snapshot said (said once, not again after the step)
    index: StatCache | None = None  # the stat index, read once: the snapshot after the step goes on from it


def before_step(repo: Repo, thread: str, context: ThreadContext, say) -> Before | None:
    """None when the thread keeps no snapshots (no workspace, or turned off). A workspace that is
    gone is restored from the files the head names (a fork's directory deleted, a thread imported
    from a bundle)."""
    start = context.start
    workspace = thread_workspace(repo, thread, start)
    if workspace is None or not snapshots_on(repo, start):
        return None
    head_tree = files_of(repo.nodes, context.head)
    if not os.path.isdir(workspace):
        _restore_missing(repo, workspace, head_tree, context.head, say)
    index = stat_index(repo, workspace)
    taken = _snapshot(repo, workspace, head_tree, say, index=index, save=False)  # written once, after the step
    by_hand = head_tree is not None and taken.tree != head_tree
    if by_hand and say is not None:
        from ..workspace.changes import tree_changes

        changes = tree_changes(repo.nodes, head_tree, taken.tree)
        paths = ", ".join(show_path(change.path) for change in changes[:5]) + (", ..." if len(changes) > 5 else "")
        count = f"{len(changes)} path{'s' if len(changes) != 1 else ''}"
        say(f"uwf: the workspace changed since the last snapshot ({count}: {paths}); recorded with this step")
    return Before(workspace, taken.tree, by_hand, tuple(taken.notes), index)


def _restore_missing(repo: Repo, workspace: str, tree: str | None, head: str, say) -> None:
    if tree is None:
        raise StepError(f"the thread's workspace {workspace} does not exist")
    from ..workspace.materialize import checkout

    try:
        checkout(repo.nodes, tree, workspace)
    except (OSError, UwfError) as exc:
        raise StepError(f"the thread's workspace {workspace} is gone and cannot be restored: {getattr(exc, 'message', None) or exc}") from None
    if say is not None:
        say(f"uwf: the thread's workspace {workspace} was gone: restored the files of {head}")


def after_step(call: AgentCall, before: Before, new_head: str) -> str:
    """The step `new_head` with the files it left; its hash (a new StepNode when rewritten). What
    the snapshot cannot show is said and put on the attempt's record: new paths the workspace's
    ignore files leave out (an agent's own `.gitignore` of `*` hides its script), and a changed
    file, at any depth, that agent CLIs load as instructions."""
    store = call.repo.nodes
    since = call.started_ms * 1_000_000 - 50_000_000  # the kernel's coarse clock, a tick behind
    taken = _snapshot(call.repo, before.workspace, before.tree, call.options.on_output, said=before.notes, since_ns=since, index=before.index)
    _say_unseen(call, before, taken)
    step = read_step(store, new_head)
    files_before = before.tree if before.by_hand else None
    if step.files == taken.tree and step.files_before == files_before:
        return new_head
    with store.nodes.batch():
        return store_step(store, replace(step, files=taken.tree, files_before=files_before))


def files_key(call: AgentCall, before: Before, step_hash: str) -> str | None:
    """The reuse key of a step just taken with the files it found; None when its detail names no
    prompt (an agent that records none is not indexed)."""
    from .reuse.replay import taken_key
    from .reuse.index import with_files

    key = taken_key(call, step_hash)
    return with_files(key, before.tree) if key is not None else None


def restore(call: AgentCall, before: Before, found: str) -> None:
    """A replayed step's files: the workspace brought to the tree the step it replays left."""
    from ..workspace.materialize import bring

    tree = read_step(call.repo.nodes, found).files
    if tree is not None and tree != before.tree:
        try:
            bring(call.repo.nodes, before.workspace, before.tree, tree)
        except OSError as exc:
            raise StepError(f"the files of the replayed step {found} could not be restored: {exc.strerror or exc}") from None


INSTRUCTIONS = frozenset({"CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", "GEMINI.md", ".cursorrules", ".windsurfrules", ".clinerules"})


def _say_unseen(call: AgentCall, before: Before, taken) -> None:
    from ..store.records import OutsideWrites
    from ..workspace.changes import tree_changes
    from ..workspace.tree import show_text

    warnings = []
    if taken.hidden_new:
        shown = ", ".join(show_text(path) for path in taken.hidden_new[:5]) + (", ..." if len(taken.hidden_new) > 5 else "")
        warnings.append(f"new paths the workspace's ignore files leave out of the step's record (look at them yourself): {shown}")
    if taken.tree != before.tree:
        for change in tree_changes(call.repo.nodes, before.tree, taken.tree):
            path = change.to_json()["path"]
            if "/" in path and path.rsplit("/", 1)[1] in INSTRUCTIONS:  # those at the top are run_guard's
                warnings.append(f"{path}: changed by the step, and agent CLIs load it as instructions: review it before you use it")
    if not warnings:
        return
    say = call.options.on_warning or call.options.on_output
    for line in warnings:
        if say is not None:
            say(f"uwf: warning: {line}")
    written = OutsideWrites(warnings=tuple(warnings)).mapped(call.secrets.text)
    call.outside = written if call.outside is None else call.outside.merged(written)


def _snapshot(repo: Repo, workspace: str, trusted: str | None, say, said: tuple[str, ...] = (), since_ns: int = 0, *,
              index: StatCache | None = None, save: bool = True):
    try:
        taken = snapshot(repo, workspace, trusted, since_ns, index=index, save=save)
    except SnapshotError as exc:
        raise StepError(f"{exc.message} (add them to .uwfignore, or raise workspace.maxSnapshotBytes in config.yaml)") from None
    for note in taken.notes:
        if say is not None and note not in said:
            say(f"uwf: snapshot: {note}")
    return taken
