"""Step benchmark: one `uwf thread step` with a Python agent that does nothing
but write its step (routing by $status, so no JSONata is evaluated), as a ratio to `python -c pass`, at chain lengths 1, 100
and 1000. Not part of the test run.

    .venv/bin/python tests/bench/step.py [--runs N]

Aim (issue 3): <= 20x at length 1, growing no more than 20% by length 1000.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "bench"))

from common import compile_sources  # noqa: E402

sys.path.insert(0, str(REPO))

# The agent: write output, detail and StepNode with uwf_core, print the hash.
AGENT = """
import os, sys
from uwf_core.store.cas import CasStore
from uwf_core.store.builtin_schemas import BUILTIN_HASHES
from uwf_core.thread.context import start_of, STEP_TYPE
from uwf_core.workflow.ops import workflow_from_node
store = CasStore(os.environ["UWF_STORAGE_ROOT"])
head = os.environ["UWF_HEAD"]
start_hash, start = start_of(store, head)
role = workflow_from_node(store, start.workflow).roles[sys.argv[2]]
output = store.put(role.meta, {"$status": "again", "n": 1})
detail = store.put(BUILTIN_HASHES["detail"], {"agent": "bench"})
prev = None if head == start_hash else head
print(store.put(STEP_TYPE, {"start": start_hash, "prev": prev, "role": role.name, "output": output, "detail": detail, "agent": "bench"}))
"""

WORKFLOW = """
name: loop
maxSteps: 100000
roles:
  worker:
    description: does nothing
    goal: nothing
    procedure: nothing
    output: nothing
    meta:
      type: object
      properties: {$status: {enum: [again, done]}, n: {type: integer}}
      required: [$status, n]
graph:
  $START: [{role: worker, condition: null}]
  worker: {again: worker, done: $END}
"""


def build_chain(root: str, length: int) -> str:
    """A thread whose head is `length` steps deep, written directly through the core."""
    from uwf_core.store.builtin_schemas import BUILTIN_HASHES
    from uwf_core.store.cas import CasStore
    from uwf_core.store.fs.files import Root
    from uwf_core.store.fs.threads import add_thread
    from uwf_core.thread.ops import start_thread
    from uwf_core.workflow.ops import load_workflow

    store = CasStore(root)
    info = start_thread(Root(root), "loop", "benchmark")
    role = load_workflow(Root(root), "loop").roles["worker"]
    head, prev = info.head, None
    for index in range(length - 1):
        output = store.put(role.meta, {"$status": "again", "n": index})
        detail = store.put(BUILTIN_HASHES["detail"], {"agent": "bench", "i": index})
        head = store.put(
            BUILTIN_HASHES["step-node"],
            {"start": info.head, "prev": prev, "role": "worker", "output": output, "detail": detail, "agent": "bench"},
        )
        prev = head
    add_thread(Root(root), info.thread, head)
    return info.thread


def main() -> None:
    compile_sources()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    uwf = shutil.which("uwf", path=os.path.dirname(sys.executable))
    if not uwf:
        sys.exit("uwf is not installed next to this interpreter; run `pip install -e .` first")
    work = tempfile.mkdtemp(prefix="uwf-step-bench-")
    agent = os.path.join(work, "agent.py")
    Path(agent).write_text(AGENT)
    Path(work, "loop.yaml").write_text(WORKFLOW)
    lengths = (1, 100, 1000)
    roots = {}
    for length in lengths:
        root = os.path.join(work, f"root{length}")
        subprocess.run([uwf, "--root", root, "workflow", "put", os.path.join(work, "loop.yaml")], check=True, capture_output=True)
        roots[length] = (root, build_chain(root, length))
    agent_cmd = f"{sys.executable} {agent}"
    times: dict[str, list[float]] = {"python -c pass": [], **{f"step at length {n}": [] for n in lengths}}
    for _ in range(args.runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times["python -c pass"].append(time.perf_counter() - start)
        for length in lengths:
            root, thread = roots[length]
            start = time.perf_counter()
            subprocess.run([uwf, "--root", root, "thread", "step", thread, "--agent", agent_cmd], check=True, capture_output=True)
            times[f"step at length {length}"].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians["python -c pass"]
    print(f"{'command':<22} {'median':>9} {'ratio':>7}")
    for name, value in medians.items():
        print(f"{name:<22} {value * 1000:7.1f}ms {value / base:6.2f}x")
    growth = medians["step at length 1000"] / medians["step at length 1"] - 1
    print(f"growth from length 1 to 1000: {growth * 100:+.0f}%  (aims: <= 20x at length 1, <= +20% by 1000)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
