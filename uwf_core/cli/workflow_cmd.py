"""`uwf workflow put | lint | show | list | history | rollback | graph`."""

from __future__ import annotations

from .common import command, group, repo_of
from .output import EXIT_ERROR, emit_json, emit_text, note, warn


def register(groups, common) -> None:
    sub = group(groups, common, "workflow", "register and inspect workflow definitions")
    put = command(sub, common, "put", cmd_put, "register a workflow YAML file; prints {name, hash}")
    put.add_argument("file")
    lint = command(sub, common, "lint", cmd_lint, "check a workflow YAML file without storing it")
    lint.add_argument("file")
    show = command(sub, common, "show", cmd_show, "the workflow payload as JSON (role meta as schema hashes)")
    show.add_argument("workflow", help="registry name or hash")
    show.add_argument("--source", action="store_true", help="print the YAML it was registered from")
    command(sub, common, "list", cmd_list, "registered workflows: [{name, hash}]")
    history = command(sub, common, "history", cmd_history, "a workflow name's versions, newest first")
    history.add_argument("name")
    rollback = command(sub, common, "rollback", cmd_rollback, "make an earlier version current again")
    rollback.add_argument("name")
    rollback.add_argument("hash", nargs="?", help="the version to restore (default: the previous one)")
    remove = command(sub, common, "remove", cmd_remove, "remove a workflow name and its versions from the registry (nodes are gc's)")
    remove.add_argument("name")
    remove.add_argument("--force", action="store_true", help="even while active threads run it (they go on)")
    graph = command(sub, common, "graph", cmd_graph, "the roles and labelled transitions, as text or Mermaid")
    graph.add_argument("workflow", help="registry name or hash")
    graph.add_argument("--mermaid", action="store_true", help="print a Mermaid flowchart")


def cmd_put(args) -> int:
    from ..workflow.ops import put_workflow

    result = put_workflow(repo_of(args), args.file)
    for message in result.warnings:
        warn(message)
    if not result.changed:
        note(f"workflow '{result.name}' is already at {result.hash}; nothing changed")
    emit_json({"name": result.name, "hash": result.hash})
    return 0


def cmd_lint(args) -> int:
    from ..workflow.ops import lint_file

    draft = lint_file(args.file)
    for problem in draft.problems:
        emit_text(f"{problem.severity}: {problem.format(draft.document)}")
    if draft.errors:
        return EXIT_ERROR
    if not draft.problems:
        emit_text(f"{args.file}: ok")
    return 0


def cmd_show(args) -> int:
    from ..workflow.ops import load_workflow, workflow_source

    repo = repo_of(args)
    if args.source:
        emit_text(workflow_source(repo, args.workflow))
        return 0
    workflow = load_workflow(repo, args.workflow)
    emit_json(workflow.to_payload())
    return 0


def cmd_list(args) -> int:
    entries = repo_of(args).registry.entries()
    emit_json([{"name": name, "hash": entries[name].hash} for name in sorted(entries)])
    return 0


def cmd_history(args) -> int:
    from ..workflow.ops import workflow_history

    entry = workflow_history(repo_of(args), args.name)
    emit_json(
        {
            "name": entry.name,
            "current": entry.current.to_dict(),
            "history": [version.to_dict() for version in entry.history],
        }
    )
    return 0


def cmd_rollback(args) -> int:
    from ..workflow.ops import rollback_workflow

    entry = rollback_workflow(repo_of(args), args.name, args.hash)
    emit_json({"name": entry.name, "hash": entry.hash})
    return 0


def cmd_remove(args) -> int:
    from ..thread.remove import remove_workflow

    removed = remove_workflow(repo_of(args), args.name, force=args.force)
    note(f"workflow '{removed.name}' removed ({len(removed.heads)} version{'s' if len(removed.heads) != 1 else ''}); "
         f"`uwf cas gc` will free {removed.frees} node{'s' if removed.frees != 1 else ''} nothing else reaches")
    emit_json(removed.to_json())
    return 0


def cmd_graph(args) -> int:
    from ..workflow.graph_text import render_mermaid, render_text
    from ..workflow.ops import load_workflow

    workflow = load_workflow(repo_of(args), args.workflow)
    emit_text(render_mermaid(workflow) if args.mermaid else render_text(workflow))
    return 0
