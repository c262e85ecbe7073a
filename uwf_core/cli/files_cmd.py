"""`uwf thread files | checkout | export-git`: a thread's files as its steps left them."""

from __future__ import annotations

from .common import command, repo_of
from .output import emit_json, emit_text


def register(sub, common) -> None:
    files = command(sub, common, "files", cmd_files, "the paths a step added, modified and deleted in the workspace")
    files.add_argument("step", help="a StepNode hash or prefix")
    files.add_argument("--diff", action="store_true", help="the changes as a unified diff (sizes for binary files)")
    files.add_argument("--json", action="store_true", help="JSON: each path with its status, kinds, hashes and sizes")
    checkout = command(sub, common, "checkout", cmd_checkout, "write a step's (or start's) files into a directory")
    checkout.add_argument("step", help="a StepNode or StartNode hash or prefix")
    checkout.add_argument("directory", metavar="DIR")
    checkout.add_argument(
        "--force", action="store_true", help="replace DIR's files with the snapshot's (its .git and ignored files are kept)"
    )
    export = command(sub, common, "export-git", cmd_export_git, "one git commit per step on branch uwf/<thread>")
    export.add_argument("thread")
    export.add_argument("--repo", required=True, metavar="DIR", help="a git repository (created if missing)")


def cmd_files(args) -> int:
    from ..thread.reports import files_report, step_file_changes
    from ..workspace.changes import unified

    repo = repo_of(args)
    if args.json:
        emit_json(files_report(repo, args.step))
        return 0
    _, hand, changes, written = step_file_changes(repo, args.step)
    lines = []
    groups = [("changed between steps, before it (by hand, or left by a failed attempt)", hand)] if hand else []
    if changes is not None and (changes or not hand):  # a resumed start has hand changes only
        groups.append(("changed by the step", changes))
    for title, group in groups:
        lines.append(f"{title}: {len(group)} path{'s' if len(group) != 1 else ''}")
        for change in group:
            if args.diff:
                lines.extend(unified(repo.nodes, change))
            else:
                lines.append(f"  {_status_mark(change.status)} {change.to_json()['path']}{_sizes(change)}")
    if written is not None:
        lines += ["written outside the workspace:", *(f"  {line}" for line in written.lines())]
    emit_text("\n".join(lines))
    return 0


def _status_mark(status: str) -> str:
    return {"added": "A", "modified": "M", "deleted": "D"}[status]


def _sizes(change) -> str:
    old, new = change.old, change.new
    if old is not None and new is not None and old.kind != new.kind:
        return f"  ({_kind(old)} -> {_kind(new)})"
    old_size = old.size if old is not None else None
    new_size = new.size if new is not None else None
    if old_size is None and new_size is None:
        return f"  ({_kind(old or new)})"
    return f"  ({old_size if old_size is not None else '-'} -> {new_size if new_size is not None else '-'} bytes)"


def _kind(entry) -> str:
    if entry.kind == "link":
        return f"link to {entry.target.decode('utf-8', 'backslashreplace')}"
    return {"exec": "executable", "dir": "empty directory"}.get(entry.kind, "file")


def cmd_checkout(args) -> int:
    import os

    from ..errors import UwfError
    from ..thread.files import node_files
    from ..thread.ops import resolve_node
    from ..workspace.materialize import checkout

    repo = repo_of(args)
    tree = node_files(repo, resolve_node(repo, args.step))
    if os.path.lexists(args.directory) and not os.path.isdir(args.directory):
        raise UwfError(f"{args.directory} is a file, not a directory")
    keep = tuple(os.path.realpath(path) for path in repo.backend.store_dirs)  # a root kept inside DIR stays
    written = checkout(repo.nodes, tree, args.directory, force=args.force, keep=keep)
    emit_json({"files": tree, "directory": os.path.abspath(args.directory), "written": written})
    return 0


def cmd_export_git(args) -> int:
    from ..thread.export_git import export_git

    result = export_git(repo_of(args), args.thread, args.repo)
    emit_json(result)
    return 0
