"""`uwf ps`: every step in flight on the root, from any host (the seeds' `ps`)."""

from __future__ import annotations

from .common import repo_of
from .output import age_text, emit_json, emit_text


def register(groups, common) -> None:
    parser = groups.add_parser(
        "ps",
        help="every step in flight on the root, on every host: thread, role, agent, worker or host, since",
        description="The steps running now, on this host and any other sharing the root (a PostgreSQL root's workers).",
        parents=[common],
    )
    parser.add_argument("--json", action="store_true", help="JSON instead of a table")
    parser.set_defaults(handler=cmd_ps)


def cmd_ps(args) -> int:
    import time

    from ..thread.reports import running_report

    running = running_report(repo_of(args))
    if args.json:
        emit_json(running)
        return 0
    if not running:
        emit_text("no step is running")
        return 0
    now = int(time.time() * 1000)
    for item in running:
        where = f"worker {item['worker']}" if item.get("worker") else f"{item['host']} pid {item['pid']}"
        waiting = f"  ({item['waiting']})" if item.get("waiting") else ""
        since = f"for {age_text(now - item['startedAt'])}" if item.get("startedAt") else "starting"
        emit_text(f"{item['thread']}  {item['role'] or '-'}  {item['agent'] or '-'}  {where}  {since}{waiting}")
    return 0
