"""The same `uwf` commands on a PostgreSQL root and on a directory root, measured in turn in one run
(A B A B ...): what a PostgreSQL root adds to a command's start, which scripts and step-protocol
agents pay on every call. Goal: each within 2x the directory root's time. The PostgreSQL root is
a private cluster on this host, reached over its Unix socket."""

from __future__ import annotations

import json
import os
import subprocess
import time

from common import private_cluster
from suite import TEXT_AGENT

COMMANDS = [
    ("`uwf cas schema list`", ("cas", "schema", "list")),
    ("`uwf workflow list`", ("workflow", "list")),
    ("`uwf thread show T`", ("thread", "show", "{thread}")),
    ("`uwf thread step T` (a no-op text agent)", ("thread", "step", "{thread}")),
]


def pg_rows(report, Row, uwf, runs: int) -> None:
    cluster = private_cluster()
    if cluster is None:
        print("pg: PostgreSQL or libpq is not on this host; skipped", flush=True)
        return
    print(f"commands on a PostgreSQL root vs a directory root, {runs} runs each in turn", flush=True)
    try:
        places = {"postgresql": _ready(uwf, cluster.create_database("pgstart")), "directory": _ready(uwf, str(uwf.work / "pgstart-dir"))}
        for what, args in COMMANDS:
            times: dict[str, list[float]] = {place: [] for place in places}
            for _ in range(runs):
                for place, (env, thread) in places.items():
                    argv = uwf.cli(*(arg.format(thread=thread) for arg in args))
                    started = time.perf_counter()
                    done = subprocess.run(argv, capture_output=True, text=True, env=env)
                    times[place].append(time.perf_counter() - started)
                    if done.returncode != 0:
                        raise SystemExit(f"{' '.join(args)} on the {place} root failed: {done.stderr.strip()[-300:]}")
            report.add(Row(f"PostgreSQL root: {what}", None, None, against="directory root", goal="≤ 2x",
                           ours_runs=times["postgresql"], theirs_runs=times["directory"]))
    finally:
        cluster.stop()


def _ready(uwf, location: str) -> tuple[dict, str]:
    """A root with the bench workflow, a no-op text agent and a thread that loops without end."""
    env = dict(os.environ, UWF_STORAGE_ROOT=location, UWF_ENV_FILE=str(uwf.work / "pgstart.env"))

    def run(*args: str) -> str:
        return subprocess.run(uwf.cli(*args), capture_output=True, text=True, env=env, check=True).stdout

    run("workflow", "put", str(uwf.workflow))
    run("agent", "add", "noop", "--protocol", "text", "--no-sandbox", "--", "sh", "-c", TEXT_AGENT)
    run("setup", "--default-agent", "noop")
    thread = json.loads(run("thread", "start", "bench-loop", "-p", "pg start"))["thread"]
    return env, thread
