"""A map of 16 children whose agent sleeps 1 s, stepped by 4 `uwf worker` processes, against the
same 16 steps one after another (`uwf thread run` of a thread that takes them in turn), measured
side by side in one run on a directory root."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

CHILDREN = 16
SLEEP = 1.0
CHILD = """
name: one
description: one item
roles:
  worker: {description: d, goal: g, procedure: p, output: o, meta: {type: object, required: [text], properties: {text: {type: string}}}}
graph:
  $START: [{role: worker, condition: null}]
  worker: [{role: $END, condition: null}]
"""
PARENT = """
name: fan
description: sixteen children at once
maxSteps: 40
roles:
  planner: {description: d, goal: g, procedure: p, output: o, meta: {type: object, required: [items], properties: {items: {type: array}}}}
  each:
    description: one child per item
    map: {over: items, workflow: one}
graph:
  $START: [{role: planner, condition: null}]
  planner: [{role: each, condition: null}]
  each: [{role: $END, condition: null}]
"""
# The same sixteen 1 s steps in one thread, one after another.
SERIAL = """
name: serial
description: sixteen steps in turn
maxSteps: 40
roles:
  worker: {description: d, goal: g, procedure: p, output: o, meta: {type: object, required: [text], properties: {text: {type: string}}}}
conditions:
  more: {description: more to do, expression: "$count(steps) < COUNT"}
graph:
  $START: [{role: worker, condition: null}]
  worker: [{role: worker, condition: more}, {role: $END, condition: null}]
""".replace("COUNT", str(CHILDREN))
AGENT = (
    'case "$UWF_ROLE" in planner) echo \'{"items": [ITEMS]}\';; *) sleep SLEEP; echo \'{"text": "t"}\';; esac'
).replace("ITEMS", ", ".join(str(i) for i in range(CHILDREN))).replace("SLEEP", str(SLEEP))


def map_rows(report, Row, uwf, workers: int = 4) -> None:
    print(f"map: {CHILDREN} children sleeping {SLEEP:g}s, {workers} workers", flush=True)
    root = uwf.work / "map"
    root.mkdir()
    env = dict(os.environ, UWF_STORAGE_ROOT=str(root))

    def run(*args: str) -> dict:
        done = subprocess.run(uwf.cli(*args), capture_output=True, text=True, env=env, check=True)
        return json.loads(done.stdout) if done.stdout.strip() else {}

    for name, text in (("one", CHILD), ("fan", PARENT), ("serial", SERIAL)):
        (root / f"{name}.yaml").write_text(text)
        run("workflow", "put", str(root / f"{name}.yaml"))
    run("agent", "add", "sleepy", "--protocol", "text", "--", "sh", "-c", AGENT)
    run("setup", "--default-agent", "sleepy")

    serial = run("thread", "start", "serial", "-p", "x")["thread"]
    started = time.perf_counter()
    run("thread", "run", serial)
    theirs = time.perf_counter() - started

    from uwf_core.api import Repo

    repo = Repo.open(str(root))
    parent = run("thread", "start", "fan", "-p", "x")["thread"]
    processes = [subprocess.Popen(uwf.cli("worker", "--name", f"w{i}"), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for i in range(workers)]
    try:
        time.sleep(1.0)  # the workers started (their imports are not the map's time)
        started = time.perf_counter()
        run("thread", "run", parent, "--detach")
        while parent in repo.threads.heads():  # read in this process: a `uwf` every few ms would load the 2 cores
            time.sleep(0.05)
        ours = time.perf_counter() - started
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=60)
    report.add(Row(f"map of {CHILDREN} children ({SLEEP:g} s agents), {workers} workers", ours, theirs,
                   against=f"the {CHILDREN} steps in turn", goal="≤ 0.3x"))
