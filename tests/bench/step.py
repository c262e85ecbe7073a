"""Step benchmark: one `uwf thread step` with a no-op text agent (a shell line that prints a
JSON answer), as a ratio to `python -c pass`, at chain lengths 1, 100 and 1000. With
`--vs OTHER_UWF` the same steps run with another uwf executable (another checkout's
.venv/bin/uwf) on copies of the same roots, interleaved in one run, and the ratios
between the two are printed. Not part of the test run.

    .venv/bin/python tests/bench/step.py [--runs N] [--vs /path/to/other/.venv/bin/uwf]

The agent costs a few milliseconds of `sh`, so what is measured is uwf's own cost:
start-up, imports, moderator, prompt, extract, the writes and the compare-and-set.
"""

from __future__ import annotations

import argparse
import json
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
sys.path.insert(0, str(REPO))

from common import compile_sources  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "support"))
from loop_workflow import loop_workflow  # noqa: E402
from node_file import unpack  # noqa: E402

LENGTHS = (1, 100, 1000)
NOOP = "cat >/dev/null; echo '" + json.dumps({"$status": "again", "n": 1}) + "'"

WORKFLOW = loop_workflow(100_000)


def build_root(root: str, workflow_file: str, length: int) -> str:
    """A root with the loop workflow, the no-op agent as default, and a thread `length` steps deep."""
    from uwf_core.api import Config, Repo, put_workflow
    from uwf_core.config.model import AgentConfig

    repo = Repo.open(root)
    put_workflow(repo, workflow_file)
    repo.save_config(Config(agents={"noop": AgentConfig("noop", "sh", ("-c", NOOP), "text")}, default_agent="noop"))
    return build_chain(root, length)


def build_chain(root: str, length: int) -> str:
    """A thread of the registered loop workflow whose head is `length` steps deep, written through the core."""
    from uwf_core.api import Repo, load_workflow, start_thread
    from uwf_core.store.builtin_schemas import BUILTIN_HASHES

    repo = Repo.open(root)
    info = start_thread(repo, "loop", "benchmark")
    role = load_workflow(repo, "loop").roles["worker"]
    store = repo.nodes
    head, prev = info.head, None
    for index in range(length - 1):
        output = store.put(role.meta, {"$status": "again", "n": index})
        detail = store.put(BUILTIN_HASHES["detail"], {"agent": "bench", "i": index})
        head = store.put(
            BUILTIN_HASHES["step-node"],
            {"start": info.head, "prev": prev, "role": "worker", "output": output, "detail": detail, "agent": "bench"},
        )
        prev = head
    if head != info.head:
        repo.threads.compare_and_set(info.thread, info.head, head)
    return info.thread


def _time(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    compile_sources()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--vs", metavar="UWF", help="another uwf executable to measure side by side")
    args = parser.parse_args()
    uwf = shutil.which("uwf", path=os.path.dirname(sys.executable))
    if not uwf:
        sys.exit("uwf is not installed next to this interpreter; run `pip install -e .` first")
    commands = {"this uwf": uwf}
    if args.vs:
        if not os.access(args.vs, os.X_OK):
            sys.exit(f"--vs {args.vs}: not an executable")
        commands["--vs uwf"] = args.vs
    work = tempfile.mkdtemp(prefix="uwf-step-bench-")
    try:
        workflow_file = os.path.join(work, "loop.yaml")
        Path(workflow_file).write_text(WORKFLOW)
        roots: dict[tuple[str, int], tuple[str, str]] = {}
        for length in LENGTHS:
            base = os.path.join(work, f"root{length}")
            thread = build_root(base, workflow_file, length)
            for name in commands:  # each uwf steps its own copy of the same chain
                copy = os.path.join(work, f"{name.replace(' ', '_')}-{length}")
                shutil.copytree(base, copy)
                if name == "--vs uwf":
                    unpack(copy)  # loose node files: what a uwf from before cas/nodes.sqlite reads
                roots[(name, length)] = (copy, thread)
        times: dict[str, list[float]] = {"python -c pass": []}
        for _ in range(args.runs):
            times["python -c pass"].append(_time([sys.executable, "-c", "pass"]))
            for length in LENGTHS:
                for name, executable in commands.items():
                    root, thread = roots[(name, length)]
                    times.setdefault(f"{name}, length {length}", []).append(_time([executable, "--root", root, "thread", "step", thread]))
        report(times, list(commands))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(times: dict[str, list[float]], names: list[str]) -> None:
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians["python -c pass"]
    print(f"{'command':<28} {'median':>9} {'vs python':>10}")
    for name, value in medians.items():
        print(f"{name:<28} {value * 1000:7.1f}ms {value / base:9.2f}x")
    first = names[0]
    growth = medians[f"{first}, length 1000"] / medians[f"{first}, length 1"] - 1
    print(f"growth of a step from length 1 to 1000 ({first}): {growth * 100:+.0f}%")
    if len(names) == 2:
        for length in LENGTHS:
            ratio = medians[f"{names[0]}, length {length}"] / medians[f"{names[1]}, length {length}"]
            print(f"length {length:>5}: this uwf / --vs uwf = {ratio:.2f}")


if __name__ == "__main__":
    main()
