"""A thread's files: where its workspace is, the snapshot each step names, forks' own directories,
and what a step changed (workspace/ does the trees; this knows threads).

A thread's workspace is its StartNode's, unless it was given one of its own (a fork's, kept in
the backend's thread → directory mapping). A fork of a step with a snapshot gets a new directory
holding that step's files, so two threads never write one directory unless a user says so.
"""

from __future__ import annotations

import os

from ..errors import UwfError
from ..store.cas import CasStore
from .model import StartNode
from .nodes import START_TYPES, STEP_TYPES, read_step, start_of, thread_node

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Callable

    from ..repo import Repo
    from ..store.records import OutsideWrites
    from ..workspace.changes import Change
    from ..workspace.snapshot import Limits, Snapshot
    from ..workspace.stat_cache import StatCache


def files_of(store: CasStore, hash_: str) -> str | None:
    """The tree a head names: a StepNode's files after it, a StartNode's at the start."""
    node = thread_node(store, hash_)
    files = node.payload.get("files")
    return files if isinstance(files, str) else None


def thread_workspace(repo: Repo, thread: str, start: StartNode) -> str | None:
    return repo.threads.workspaces().get(thread) or start.workspace


def snapshots_on(repo: Repo, start: StartNode) -> bool:
    """Unless config.yaml, the thread (`--no-snapshot`) or its workflow turns them off."""
    from ..workflow.ops import workflow_of

    return repo.config.workspace.snapshot and start.snapshot and workflow_of(repo, start.workflow).snapshot


def limits(repo: Repo) -> Limits:
    from ..workspace.snapshot import Limits

    config = repo.config.workspace
    return Limits(config.max_file_bytes, config.max_snapshot_bytes)


def stat_index(repo: Repo, workspace: str) -> StatCache:
    """This host's stat index of `workspace`, read once: a step's two snapshots share it."""
    from ..workspace.stat_cache import StatCache, cache_path

    return StatCache.load(cache_path(repo.backend.cache_dir, workspace))


def snapshot(repo: Repo, workspace: str, trusted: str | None = None, since_ns: int = 0, *,
             index: StatCache | None = None, save: bool = True) -> Snapshot:
    """A snapshot of `workspace`, with this host's stat index for it (`index`: one already read;
    `save`: write it if it changed); `since_ns`: list the new paths ignore rules leave out that
    were made since then."""
    from ..workspace.snapshot import take_snapshot

    return take_snapshot(
        repo.nodes,
        workspace,
        limits=limits(repo),
        index=index if index is not None else stat_index(repo, workspace),
        save=save,
        trusted=trusted,
        redactions=repo.secrets.byte_replacements(),
        exclude=tuple(os.path.realpath(path) for path in repo.backend.store_dirs),  # a root kept in its project
        since_ns=since_ns,
    )


def workspaces_dir(repo: Repo) -> str:
    """Where forks' workspaces go: config's workspace.dir, else <root>/workspaces (a directory root)."""
    configured = repo.config.workspace.dir
    if configured:
        return os.path.abspath(os.path.expanduser(configured))
    if repo.backend.store_dirs:  # a directory root
        return os.path.join(os.path.realpath(repo.backend.store_dirs[0]), "workspaces")
    raise UwfError(
        "this root keeps no directories of its own for threads' workspaces: set workspace.dir in config.yaml "
        "(or give a fork its directory with -w DIR)"
    )


def check_thread_workspace(repo: Repo, workspace: str, forks_dir: str | None = None) -> None:
    """Refused now, not at the first step: agents may write all of it and uwf snapshots all of it
    (the system, a home, the store but for `forks_dir`, forks' directories: workspace/places.py)."""
    from ..workspace.places import check_workspace, real_home

    store_dirs = tuple(map(os.path.realpath, repo.backend.store_dirs))
    for home in dict.fromkeys(map(os.path.realpath, (os.path.expanduser("~"), real_home()))):
        check_workspace(workspace, home, store_dirs, forks_dir)


def give_workspace(repo: Repo, thread: str, node_hash: str, directory: str | None, say: Callable[[str], object] | None = None) -> str | None:
    """Before a new thread (a fork at `node_hash`) is listed: its own directory with that node's
    files. Returns the directory, or None when the thread has no workspace to give."""
    from ..workspace.materialize import checkout

    store = repo.nodes
    _, start = start_of(store, node_hash)
    tree = files_of(store, node_hash)
    if directory is None and (start.workspace is None or tree is None):
        if start.workspace is not None and say is not None:
            say(f"uwf: {node_hash} has no snapshot of its files: the fork shares the directory {start.workspace}")
        return None  # no workspace, or snapshots off: the fork shares its StartNode's, as the user chose
    target = os.path.realpath(directory or os.path.join(workspaces_dir(repo), thread))
    if directory is not None:  # a fork's named directory as a started thread's: never inside the store
        try:
            forks = workspaces_dir(repo)
        except UwfError:
            forks = None  # a PostgreSQL root with no workspace.dir keeps none
        check_thread_workspace(repo, target, forks)
    if tree is None:
        os.makedirs(target, exist_ok=True)  # a directory the user named, used as it is
        if say is not None:
            say(f"uwf: {node_hash} has no snapshot of its files: the fork works in {target} as it is")
    else:
        if os.path.isdir(target) and os.listdir(target):
            raise UwfError(f"{target} is not empty: give the fork a new or empty directory (it gets the files of {node_hash})")
        try:
            checkout(store, tree, target)
        except OSError as exc:
            raise UwfError(f"cannot restore the files of {node_hash} into {target}: {exc.strerror or exc}") from None
    repo.threads.set_workspace(thread, target)
    return target


def step_changes(repo: Repo, step_hash: str) -> tuple[list[Change], list[Change]]:
    """(changes made by hand before the step, changes the step made) to the thread's files; for
    a StartNode that resumes a thread, the changes made by hand before the resume."""
    from ..workspace.changes import tree_changes

    store = repo.nodes
    if thread_node(store, step_hash).type in START_TYPES:
        _, start = start_of(store, step_hash)
        if start.files is None:
            raise UwfError(f"start {step_hash} has no snapshot of its files (its thread has no workspace, or snapshots were off)")
        before = files_of(store, start.resumes) if start.resumes else None
        return (tree_changes(store, before, start.files) if before else []), []
    step = read_step(store, step_hash)
    if step.files is None:
        raise UwfError(f"step {step_hash} has no snapshot of its files (its thread has no workspace, or snapshots were off)")
    previous = files_of(store, step.prev or step.start)
    began = step.files_before or previous
    hand = tree_changes(store, previous, step.files_before) if step.files_before and previous else []
    return hand, tree_changes(store, began, step.files)


def node_files(repo: Repo, hash_: str) -> str:
    """The tree of a step or start (a full hash), or a one-line error saying why there is none."""
    store = repo.nodes
    node = thread_node(store, hash_)
    tree = node.payload.get("files")
    if not isinstance(tree, str):
        kind = "step" if node.type in STEP_TYPES else "start" if node.type in START_TYPES else "node"
        raise UwfError(f"{kind} {node.hash} has no snapshot of its files (its thread has no workspace, or snapshots were off)")
    return tree


def file_at(repo: Repo, step_hash: str, path: str) -> tuple[str, bytes]:
    """(kind, content) of a workspace path as a step (or start, a full hash) left it: a file's
    bytes, a link's target; a one-line error for a path that is no file there."""
    from ..workspace.tree import read_blob, read_tree

    ref = node_files(repo, step_hash)
    parts = [part for part in path.strip("/").split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise UwfError(f"{path!r} is not a path inside the workspace")
    for depth, part in enumerate(parts):
        entry = next((item for item in read_tree(repo.nodes, ref) if item.name == part.encode("utf-8", "surrogateescape")), None)
        last = depth == len(parts) - 1
        if entry is None or (not last and entry.kind != "dir"):
            raise UwfError(f"{path}: no such file in the snapshot of {step_hash}")
        if last:
            if entry.kind == "dir":
                raise UwfError(f"{path} is a directory in the snapshot of {step_hash}, not a file")
            if entry.kind == "link":
                assert entry.target is not None  # Entry.from_payload refuses a link without one
                return entry.kind, entry.target
            assert entry.ref is not None  # ... and a file without its content's ref
            return entry.kind, read_blob(repo.nodes, entry.ref)
        assert entry.ref is not None  # a directory names its tree
        ref = entry.ref
    raise AssertionError("unreachable")


def step_files_text(repo: Repo, step_hash: str, limit: int = 4000, outside: OutsideWrites | None = None) -> str | None:
    """What a step did to the files as a person reads it: the paths, what its agent wrote outside
    the workspace (`outside`, from its attempt's record), then a unified diff of each (sizes for
    binary files); at most `limit` lines. None when the step has no snapshot and wrote nothing
    outside."""
    from ..workspace.changes import unified

    node = thread_node(repo.nodes, step_hash)
    tree = node.payload.get("files")
    written = [f"# {line}" for line in ["written outside the workspace:", *outside.lines()]] if outside is not None and not outside.empty else []
    if tree is None:
        return "\n".join(written) if written else None
    changes: list[Change] | None
    hand, changes = step_changes(repo, step_hash)
    lines = []
    if node.type in START_TYPES:  # the files the thread began with (and, on a resume, what changed by hand)
        from ..workspace.tree import flatten, show_path

        files = flatten(repo.nodes, tree)
        lines.append(f"# the workspace at the start: {len(files)} path{'s' if len(files) != 1 else ''}")
        lines.extend(f"#   {show_path(path)}" for path in list(files)[:200])
        changes = None
    for title, group in (("changed between steps, before it (by hand, or left by a failed attempt)", hand), ("changed by the step", changes)):
        if group or (group is not None and title.endswith("by the step")):
            lines.append(f"# {title}: {len(group)} path{'s' if len(group) != 1 else ''}")
            lines.extend(f"#   {change.status:<8} {change.to_json()['path']}" for change in group)
    lines += written
    for change in hand + (changes or []):
        lines.extend(unified(repo.nodes, change))
        if len(lines) > limit:
            lines = lines[:limit] + [f"# ... (more than {limit} lines; `uwf thread files {step_hash} --diff` shows all)"]
            break
    return "\n".join(lines)
