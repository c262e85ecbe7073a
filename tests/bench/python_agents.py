"""Python agents against LangGraph, both in one process: a step with a no-op Python function as
the agent vs LangGraph's `invoke` of a no-op node (the same three-role loop, checkpointed in
SQLite), and a loop of 1,000 steps on each side.

Each side keeps what a program keeps between steps: uwf one opened Repo (its caches of immutable
nodes: the workflow, the chain behind a head), LangGraph its compiled graph and connection.
Neither keeps the thread's state: uwf reads the head from threads.yaml and compare-and-sets it,
LangGraph reads its checkpoint and writes the next. Each side's first step (imports) is not timed.
The sides take turns, `rounds` times (at least 5): each round's figure is one run, wall and CPU.
"""

from __future__ import annotations

import time

OUTPUTS = {"planner": {"plan": "p"}, "developer": {"summary": "s"}, "reviewer": {"approved": False}}


def noop(ctx) -> dict:
    """The no-op agent: the role's fixed answer, as LangGraph's no-op node returns."""
    return OUTPUTS[ctx.role]


def _langgraph(lang, db: str, steps: int) -> tuple[float, float]:
    """(wall, CPU) seconds per step of `steps` invokes in LangGraph's own process."""
    wall, cpu = (float(value) for value in lang.run("grow", db, "t", str(steps)).split()[:2])
    return wall / steps, cpu / steps


def python_rows(report, Row, uwf, lang, lengths: list[int], runs: int, loop: int, rounds: int = 5) -> None:
    from uwf_core.api import Repo, StepOptions, perform_step, run_thread, start_thread

    print(f"python agents in one process ({rounds} rounds, the sides in turn)", flush=True)
    options = StepOptions(agent="noop")
    for n in lengths:
        root, thread = uwf.root(f"python-{n}", n)
        repo = Repo.open(root)
        repo.agents.register("noop", noop)
        perform_step(repo, thread, options)  # imports, the schema's compiled check
        db = lang.db(f"python-{n}", n) if not lang.missing else None
        ours, ours_cpu, theirs, theirs_cpu = [], [], [], []
        for _ in range(rounds):
            started, cpu = time.perf_counter(), time.process_time()
            for _ in range(runs):
                perform_step(repo, thread, options)
            ours.append((time.perf_counter() - started) / runs)
            ours_cpu.append((time.process_time() - cpu) / runs)
            if db is not None:
                wall, used = _langgraph(lang, db, runs)
                theirs.append(wall)
                theirs_cpu.append(used)
        report.add(Row(f"in-process step, no-op python agent, chain length {n:,}", None, None, note=lang.missing or "", goal="≤ 1.0x",
                       ours_runs=ours, theirs_runs=theirs or None))
        report.add(Row(f"  its CPU per step, chain length {n:,}", None, None, note=lang.missing or "", goal="≤ 1.0x",
                       ours_runs=ours_cpu, theirs_runs=theirs_cpu or None))

    root, _ = uwf.root("python-loop", 0)
    repo = Repo.open(root)
    repo.agents.register("noop", noop)
    warm = start_thread(repo, "bench-loop", "warm").thread
    perform_step(repo, warm, options)
    ours, ours_cpu, theirs, theirs_cpu = [], [], [], []
    for number in range(rounds):
        thread = start_thread(repo, "bench-loop", f"benchmark {number}").thread
        started, cpu = time.perf_counter(), time.process_time()
        run_thread(repo, thread, options, max_steps=loop)
        ours.append(time.perf_counter() - started)
        ours_cpu.append(time.process_time() - cpu)
        if not lang.missing:
            wall, used = _langgraph(lang, lang.db(f"python-loop-{number}", 0), loop)
            theirs.append(wall * loop)
            theirs_cpu.append(used * loop)
    report.add(Row(f"`run_thread` of {loop:,} steps, no-op python agent", None, None, note=lang.missing or "", goal="≤ 1.0x",
                   ours_runs=ours, theirs_runs=theirs or None))
    report.add(Row(f"  its CPU, {loop:,} steps", None, None, note=lang.missing or "", goal="≤ 1.0x",
                   ours_runs=ours_cpu, theirs_runs=theirs_cpu or None))
