"""Throughput of `uwf worker` lanes whose agent sleeps 1 s (issue 28): 16 and 64 lanes, on a
directory root and on a PostgreSQL root (a private cluster, when PostgreSQL and libpq are here).

Each row queues `lanes` threads of a workflow whose one role loops STEPS times (a text agent that
reads its prompt, sleeps 1 s and answers), one thread a lane, then starts the worker processes
with `--once` and waits for them to exit. Ideal throughput is `lanes` steps a second (every
step's agent sleeps 1 s); the row is the achieved fraction of it, goal ≥ 0.85.

Times come from the runs log, the workers' own clock (each attempt's start and end). The row is
the steady state: the window from the moment the last lane began its first attempt (after the
workers' imports, the root opened, the first claim and step lock) to the moment the first lane
finished its thread; the steps completed in that window / its length / lanes. The whole run
(first attempt's start → last attempt's end, which also counts the ramp-up and the lanes idle
at the end behind the slowest) is in the row's note, with the workers' start-up (spawn → first
attempt), which neither figure counts.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from common import private_cluster

SLEEP = 1.0
STEPS = 30  # steps a thread: ideal 30 s a row
LOOP = """
name: lanes-loop
description: one role that loops
maxSteps: 1000
roles:
  work: {description: d, goal: g, procedure: p, output: o, meta: {type: object, required: [text], properties: {text: {type: string}}}}
conditions:
  more: {description: more to do, expression: "$count(steps) < COUNT"}
graph:
  $START: [{role: work, condition: null}]
  work: [{role: work, condition: more}, {role: $END, condition: null}]
""".replace("COUNT", str(STEPS))
AGENT = "cat >/dev/null; sleep SLEEP; echo '{\"text\": \"t\"}'".replace("SLEEP", f"{SLEEP:g}")
# (lanes, worker processes). One `uwf worker --concurrency N` each: that is what the lanes promise.
# 64 lanes as 4 processes of 16 measured ~0.03-0.06 higher (one GIL and one set of forks per 16
# lanes; see lane_rows' doc) but hides the per-process costs this row is here to show.
SHAPES = ((16, 1), (64, 1))


def lane_rows(report, Row, uwf, shapes=SHAPES, steps: int = STEPS) -> None:
    """One row per (place, lanes), each lanes/processes as `shapes` says. Splitting 64 lanes into
    4 processes of 16 helps twice: each process's Python work (routing, nodes, the spawn, the runs
    log) has a GIL of its own, and a lane's step lock can only be kept alive by a fork of another
    lane of the same process (fewer 1 s "busy" retries). Run it as `lane_run(..., 64, 4)`."""
    print(f"lanes: threads of {steps} steps, agents sleeping {SLEEP:g}s; "
          + ", ".join(f"{lanes} lanes in {procs} process{'es' if procs > 1 else ''}" for lanes, procs in shapes), flush=True)
    places: dict[str, object] = {"directory root": None}
    cluster = private_cluster()
    if cluster is not None:
        places["PostgreSQL root"] = cluster
    try:
        for place, server in places.items():
            for lanes, procs in shapes:
                name = f"lanes-{place.split()[0].lower()}-{lanes}x{procs}"
                location = server.create_database(name.replace("-", "_")) if server else str(uwf.work / name)
                fraction, note = lane_run(uwf, location, lanes, procs, steps)
                shape = "1 worker process" if procs == 1 else f"{procs} worker processes of {lanes // procs} lanes"
                report.add(Row(f"{place}: {lanes} lanes ({shape}), 1 s agents: fraction of ideal ({lanes} steps/s)",
                               fraction, unit="x", goal="≥ 0.85", note=note))
    finally:
        if cluster is not None:
            cluster.stop()


def lane_run(uwf, location: str, lanes: int, procs: int, steps: int = STEPS, *, worker: list[str] | None = None) -> tuple[float, str]:
    """(fraction of the ideal, a note): `lanes` threads of `steps` steps stepped by `procs` worker
    processes of lanes/procs lanes each. `worker`: the command before `worker --once ...` (default
    the `uwf` script; a probe passes e.g. a profiler's, `{i}` replaced by the process's number)."""
    from uwf_core.api import Repo, queue_thread, start_thread

    work = uwf.work
    env = dict(os.environ, UWF_STORAGE_ROOT=location, UWF_ENV_FILE=str(work / "lanes.env"))
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    (work / "lanes.env").touch()
    (work / "lanes-loop.yaml").write_text(LOOP.replace(f"< {STEPS}", f"< {steps}"))

    def run(*args: str) -> None:
        subprocess.run(uwf.cli(*args), capture_output=True, text=True, env=env, check=True)

    run("workflow", "put", str(work / "lanes-loop.yaml"))
    run("agent", "add", "sleepy", "--protocol", "text", "--", "sh", "-c", AGENT)
    run("setup", "--default-agent", "sleepy")
    repo = Repo.open(location)
    threads = []
    for i in range(lanes):  # one thread a lane: each lane steps one thread all the way
        thread = start_thread(repo, "lanes-loop", f"lane {i}").thread
        queue_thread(repo, thread)
        threads.append(thread)
    per = lanes // procs
    spawned = time.time()
    prefix = worker or uwf.cli()
    logs = [work / f"lanes-w{i}.log" for i in range(procs)]  # files, not pipes: nobody reads them while it runs
    processes = []
    for i, log in enumerate(logs):
        with open(log, "w") as stderr:
            argv = [a.replace("{i}", str(i)) for a in prefix] + ["worker", "--once", "--concurrency", str(per), "--name", f"w{i}"]
            processes.append(subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=stderr))
    for process in processes:
        process.wait(timeout=600)
    exited = time.time()
    errors = [log.read_text() for log in logs]
    records = [r for r in repo.runs.read() if r.thread in set(threads)]
    ok = [r for r in records if r.ok]
    if len(ok) != lanes * steps:
        tail = "".join(errors)[-800:]
        raise SystemExit(f"lanes: {len(ok)} of {lanes * steps} steps ok ({len(records)} attempts): {tail}")
    first = min(r.startedAt for r in ok) / 1000
    last = max(r.completedAt for r in ok) / 1000
    whole = len(ok) / (last - first) / lanes
    # Steady state: the window in which every lane had started and none had finished its thread
    # (no ramp-up, no lanes idle at the end waiting for the slowest); steps completed in it.
    by_thread: dict[str, list] = {}
    for r in ok:
        by_thread.setdefault(r.thread, []).append(r)
    begin = max(min(r.startedAt for r in rs) for rs in by_thread.values()) / 1000
    end = min(max(r.completedAt for r in rs) for rs in by_thread.values()) / 1000
    inside = sum(1 for r in ok if begin < r.completedAt / 1000 <= end)
    if end - begin < 2 * SLEEP:  # no such window (lanes that never ran together): the whole run
        begin, end, inside = first, last, len(ok)
    fraction = inside / (end - begin) / lanes
    step_ms = sorted(r.durationMs for r in ok)
    busy = [line for text in errors for line in text.splitlines() if " busy " in line]
    for line in busy[:2]:
        print(f"    worker: {line}", flush=True)
    note = (f"steady {inside} steps in {end - begin:.1f} s; whole run {whole:.2f}x ({len(ok)} steps in {last - first:.1f} s); "
            f"start-up {first - spawned:.2f} s")
    print(f"    {note}; spawn → exit {exited - spawned:.1f} s; attempts' median {step_ms[len(step_ms) // 2]} ms, "
          f"p99 {step_ms[len(step_ms) * 99 // 100]} ms; {len(busy)} busy retries (1 s each)", flush=True)
    return fraction, note


if __name__ == "__main__":  # a probe: python tests/bench/lane_rows.py LANES PROCS [STEPS] [dir|pg] (LANES_WORKER: a wrapper)
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from suite import Uwf

    lanes, procs = int(sys.argv[1]), int(sys.argv[2])
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else STEPS
    prefix = os.environ.get("LANES_WORKER", "").split() or None  # e.g. "python -m cProfile -o /tmp/w{i}.prof -m uwf_core.cli.main"
    uwf = Uwf(Path(tempfile.mkdtemp(prefix="uwf-lanes-")))
    if len(sys.argv) > 4 and sys.argv[4] == "pg":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
        from pg_cluster import Cluster

        cluster = Cluster().start()
        try:
            print(lane_run(uwf, cluster.create_database("probe"), lanes, procs, steps, worker=prefix))
        finally:
            cluster.stop()
    else:
        print(lane_run(uwf, str(uwf.work / "root"), lanes, procs, steps, worker=prefix))
