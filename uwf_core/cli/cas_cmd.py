"""`uwf cas ...`: read and write nodes, so agents in any language can use the store."""

from __future__ import annotations

import sys

from .common import command, group, repo_of
from .output import emit_json, emit_text, error, note, warn


def register(groups, common) -> None:
    sub = group(groups, common, "cas", "the content-addressed store")
    get = command(sub, common, "get", cmd_get, "a node's envelope {type, payload, timestamp}")
    get.add_argument("hash")
    get.add_argument("--payload", action="store_true", help="print the payload only")
    put = command(sub, common, "put", cmd_put, "validate and store a node; prints its hash")
    put.add_argument("type", help="schema hash, or a built-in title: meta, workflow, start-node, step-node, content, detail")
    put.add_argument("json", help="the payload as JSON, or - to read it from stdin")
    has = command(sub, common, "has", cmd_has, "exit 0 if the node is present, 1 if not")
    has.add_argument("hash")
    refs = command(sub, common, "refs", cmd_refs, "a node's direct references (JSON array)")
    refs.add_argument("hash")
    walk = command(sub, common, "walk", cmd_walk, "every node reachable from a node, breadth-first")
    walk.add_argument("hash")
    command(sub, common, "reindex", cmd_reindex, "rebuild the type index from the nodes")
    fsck = command(sub, common, "fsck", cmd_fsck, "verify every node, reference and index entry")
    fsck.add_argument("--repair", action="store_true", help="set aside unreadable lines of the state files and rebuild a damaged node file from what can still be read (a directory root)")
    gc = command(sub, common, "gc", cmd_gc, "delete nodes unreachable from threads, history and the registry")
    gc.add_argument("--dry-run", action="store_true", help="report what would be deleted")
    gc.add_argument("--grace", type=float, default=3600, metavar="SECONDS", help="keep nodes younger than this (default 3600)")
    schema = sub.add_parser("schema", help="list and show schemas", description="list and show schemas", parents=[common])
    schema_sub = schema.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    schema.set_defaults(handler=lambda args: (schema.print_help(sys.stderr), 2)[1])
    command(schema_sub, common, "list", cmd_schema_list, "[{hash, title}] of every schema node")
    schema_get = command(schema_sub, common, "get", cmd_schema_get, "a schema node's JSON Schema")
    schema_get.add_argument("hash")


def _store(args):
    return repo_of(args).nodes


def cmd_get(args) -> int:
    node = _store(args).get(args.hash)
    emit_json(node.payload if args.payload else node.envelope())
    return 0


def cmd_put(args) -> int:
    import json

    from ..encoding.limits import check_json_text
    from ..errors import UwfError
    from ..store.builtin_schemas import BUILTIN_HASHES, META_HASH

    text = sys.stdin.read() if args.json == "-" else args.json
    check_json_text(text, "the payload")

    def refuse_constant(name: str):
        raise ValueError(f"{name} is not a JSON number (uwf refuses NaN and ±Infinity)")

    try:
        payload = json.loads(text, parse_constant=refuse_constant)
    except ValueError as exc:
        raise UwfError(f"the payload is not valid JSON: {exc}") from None
    repo = repo_of(args)
    store = repo.nodes
    store.ensure_builtins()
    # Agents in any language write their nodes here: a key they echo is redacted like the text
    # protocol's, so no secret becomes an immutable node, whoever wrote it.
    redacted = repo.secrets.redact(payload)
    if redacted != payload:
        warn("a secret from .env in the payload was replaced by [redacted:NAME] before storing it")
        payload = redacted
    aliases = {"meta": META_HASH, **BUILTIN_HASHES}
    try:
        type_hash = aliases.get(args.type) or store.resolve(args.type)
    except UwfError as exc:
        raise UwfError(
            f"unknown type {args.type!r} ({exc.message}): give a schema's hash (or prefix) or a built-in name ({', '.join(aliases)})"
        ) from None
    emit_text(store.put(type_hash, payload))
    return 0


def cmd_has(args) -> int:
    """Takes what `cas get` takes (a hash or an unambiguous prefix); an ambiguous prefix is an error."""
    from ..errors import NotFoundError

    try:
        _store(args).resolve(args.hash)
    except NotFoundError:
        return 1
    return 0


def cmd_refs(args) -> int:
    emit_json(_store(args).refs(args.hash))
    return 0


def cmd_walk(args) -> int:
    emit_json(_store(args).walk(args.hash))
    return 0


def cmd_reindex(args) -> int:
    emit_json({"indexed": _store(args).reindex()})
    return 0


def cmd_fsck(args) -> int:
    from ..store.fsck import FsckProblem, fsck
    from ..workspace.check import tree_problems

    repo = repo_of(args)
    if args.repair:
        return _repair(repo)
    report = fsck(repo.nodes, repo.backend, workspaces=_workspaces(repo))
    if report.readable:
        report.problems.extend(FsckProblem(target, message) for target, message in tree_problems(repo.nodes))
    emit_json(report.to_dict())
    errors = report.errors
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return error(f"fsck found {len(errors)} problem(s): {errors[0].target}: {errors[0].message}{more}")
    return 0


def _repair(repo) -> int:
    """JSON as `cas fsck` writes it; a line saying what was done; exit 1 when something needed is lost."""
    from ..store.fsck import repair_root

    report = repair_root(repo)
    emit_json(report.to_dict())
    if report.state_set_aside:
        first, more = report.state_set_aside[0], len(report.state_set_aside) - 1
        note(f"set aside {len(report.state_set_aside)} unreadable line(s) of the state files: {first}" + (f" (and {more} more)" if more else ""))
    if not report.damaged:
        note("the node file is not damaged" + ("" if report.state_set_aside else ": nothing was changed"))
        return 0
    kept = f"cas/{report.set_aside[0]}" + (" (with its -wal and -shm)" if len(report.set_aside) > 1 else "") if report.set_aside else "nowhere"
    note(f"recovered {report.recovered} node(s); the damaged file is kept as {kept}")
    if report.lost:
        first, needed = next(iter(report.lost.items()))
        more = f" (and {len(report.lost) - 1} more)" if len(report.lost) > 1 else ""
        return error(f"{len(report.lost)} node(s) that are needed could not be recovered: {first}, needed by {', '.join(needed[:3])}{more}")
    return 0


def cmd_gc(args) -> int:
    from ..store.gc import gc

    if args.grace < 0:
        return error("--grace must not be negative")
    repo = repo_of(args)
    report = gc(repo.nodes, repo.backend, grace_seconds=args.grace, dry_run=args.dry_run, workspaces=_workspaces(repo))
    emit_json(report.to_dict())
    return 0


def _workspaces(repo) -> str | None:
    """Where forks' workspaces go, or None where this root keeps none (no workspace.dir on PostgreSQL)."""
    from ..errors import UwfError
    from ..thread.files import workspaces_dir

    try:
        return workspaces_dir(repo)
    except UwfError:
        return None


def cmd_schema_list(args) -> int:
    store = _store(args)
    store.ensure_builtins()
    emit_json([{"hash": hash_, "title": title} for hash_, title in store.schemas()])
    return 0


def cmd_schema_get(args) -> int:
    store = _store(args)
    hash_ = store.resolve(args.hash)
    emit_json(store.schema(hash_))
    return 0
