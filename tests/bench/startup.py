"""Start-up benchmark: `uwf --version` and `uwf workflow list` against `python -c pass`.

Not part of the test run (targets live here, not in timed unit tests).
Runs the three commands interleaved, many times, in one process, and prints
each median wall time and its ratio to the interpreter's own start-up.

    .venv/bin/python tests/bench/startup.py [--runs N]

Aims (issue 2): --version <= 1.5x, workflow list <= 3x.
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


def uwf_script() -> str:
    script = shutil.which("uwf", path=os.path.dirname(sys.executable))
    if not script:
        sys.exit("uwf is not installed next to this interpreter; run `pip install -e .` first")
    return script


def measure(commands: dict[str, list[str]], runs: int, env: dict) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    compile_sources()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="uwf-bench-")
    env = dict(os.environ, UWF_STORAGE_ROOT=root)
    script = uwf_script()
    for example in ("solve-issue.yaml", "analyze-topic.yaml", "triage-bug.yaml"):
        subprocess.run([script, "workflow", "put", str(REPO / "examples" / example)], env=env, check=True, capture_output=True)
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "uwf --version": [script, "--version"],
        "uwf workflow list": [script, "workflow", "list"],
    }
    medians = measure(commands, args.runs, env)
    base = medians["python -c pass"]
    aims = {"uwf --version": 1.5, "uwf workflow list": 3.0}
    print(f"{'command':<20} {'median':>9} {'ratio':>7}  aim")
    for name, value in medians.items():
        aim = f"<= {aims[name]}x" if name in aims else ""
        print(f"{name:<20} {value * 1000:7.1f}ms {value / base:6.2f}x  {aim}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
