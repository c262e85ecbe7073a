"""`uwf thread live`: follow a thread from any terminal or host (the seeds' `live`)."""

from __future__ import annotations

import sys

from .common import command, repo_of
from .output import note, shown


def register(sub, common) -> None:
    live = command(sub, common, "live", cmd_live,
                   "follow a thread as it runs, from any terminal or host: its agent's lines and each step, until it ends")
    live.add_argument("thread", nargs="?", help="a thread id or prefix (or --latest)")
    live.add_argument("--latest", action="store_true", help="the thread whose step started last, else the newest active thread")
    live.add_argument("--role", metavar="ROLE", help="only this role's steps and lines")
    live.add_argument("--json", action="store_true", help="one JSON object per event: started, line, step, failed, paused, unpaused, ended")


def cmd_live(args) -> int:
    import json

    from ..errors import UsageError
    from ..thread.live import follow_thread, latest_thread

    if bool(args.thread) == bool(args.latest):
        raise UsageError("name a thread, or give --latest (not both)")
    repo = repo_of(args)
    thread = latest_thread(repo, args.role) if args.latest else args.thread

    def tell(event) -> None:
        if args.json:
            sys.stdout.write(json.dumps(event.to_json(), ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(shown(event.line()) + "\n")
        sys.stdout.flush()

    running = repo.locks.running(thread) if args.latest else None
    if args.latest:
        note(f"following thread {thread}" + ("" if running else " (no step is running: waiting for the next)"))
    follow_thread(repo, thread, tell, role=args.role)
    return 0
