"""`uwf worker`: step the queued threads of a root until stopped (SIGTERM, Ctrl-C), or with
--once until the queue is empty."""

from __future__ import annotations

import sys

from .common import positive_int, repo_of


def register(groups, common) -> None:
    parser = groups.add_parser(
        "worker",
        help="step queued threads (`uwf thread run --detach`) to their end, on this host",
        description="Claim queued threads one at a time per lane and step each to its end (done, failed, "
        "waiting for a person, max-steps). Any number of workers on any hosts may share a root.",
        parents=[common],
    )
    parser.add_argument("--concurrency", type=positive_int, default=1, metavar="N", help="threads stepped at once by this worker (default 1)")
    parser.add_argument("--once", action="store_true", help="stop when nothing is left to claim")
    parser.add_argument("--name", metavar="NAME", help="how `uwf thread list` names this worker (default host:pid)")
    parser.set_defaults(handler=cmd_worker)


def cmd_worker(args) -> int:
    import os
    import signal
    import socket
    import time

    from ..engine.queue.worker import Worker

    repo = repo_of(args)
    name = args.name or f"{socket.gethostname()}:{os.getpid()}"

    def log(event) -> None:
        sys.stderr.write(f"{time.strftime('%H:%M:%S')} {event.line()}\n")
        sys.stderr.flush()

    worker = Worker(repo, name, lanes=args.concurrency, once=args.once, on_event=log)

    def stop(signum, frame) -> None:
        sys.stderr.write(f"uwf worker {name}: stopping (signal {signum}); running steps are cancelled, their threads stay queued\n")
        worker.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sys.stderr.write(f"uwf worker {name}: {args.concurrency} lane{'s' if args.concurrency > 1 else ''} on {repo.location}\n")
    from ..engine.contain.sandbox import BUBBLEWRAP, containment

    box = containment()
    if box.kind != BUBBLEWRAP and not box.nested:  # said once here: a worker streams no agent's stderr
        sys.stderr.write(f"uwf: warning: agents run without a sandbox: {box.reason} (see docs/explanation/containment.md)\n")
    worker.run()
    return 0
