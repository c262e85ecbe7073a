"""Python agents against LangGraph, both in one process: a step with a no-op Python function as
the agent vs LangGraph's `invoke` of a no-op node (the same three-role loop, checkpointed in
SQLite), and a loop of 1,000 steps on each side.

Each side keeps what a program keeps between steps: uwf one opened Repo (its caches of immutable
nodes: the workflow, the chain behind a head), LangGraph its compiled graph and connection.
Neither keeps the thread's state: uwf reads the head from threads.yaml and compare-and-sets it,
LangGraph reads its checkpoint and writes the next. Each side's first step (imports) is not timed.
"""

from __future__ import annotations

import time

OUTPUTS = {"planner": {"plan": "p"}, "developer": {"summary": "s"}, "reviewer": {"approved": False}}


def noop(ctx) -> dict:
    """The no-op agent: the role's fixed answer, as LangGraph's no-op node returns."""
    return OUTPUTS[ctx.role]


def python_rows(report, Row, uwf, lang, lengths: list[int], runs: int, loop: int) -> None:
    from uwf_core.api import Repo, StepOptions, perform_step, run_thread, start_thread

    print("python agents in one process", flush=True)
    options = StepOptions(agent="noop")
    for n in lengths:
        root, thread = uwf.root(f"python-{n}", n)
        repo = Repo.open(root)
        repo.agents.register("noop", noop)
        perform_step(repo, thread, options)  # imports, the schema's compiled check
        started = time.perf_counter()
        for _ in range(runs):
            perform_step(repo, thread, options)
        ours = (time.perf_counter() - started) / runs
        theirs = None
        if not lang.missing:
            db = lang.db(f"python-{n}", n)
            theirs = float(lang.run("grow", db, "t", str(runs)).strip()) / runs
        report.add(Row(f"in-process step, no-op python agent, chain length {n:,}", ours, theirs, note=lang.missing or "", goal="≤ 1.0x"))

    root, _ = uwf.root("python-loop", 0)
    repo = Repo.open(root)
    repo.agents.register("noop", noop)
    warm = start_thread(repo, "bench-loop", "warm").thread
    perform_step(repo, warm, options)
    thread = start_thread(repo, "bench-loop", "benchmark").thread
    started = time.perf_counter()
    run_thread(repo, thread, options, max_steps=loop)
    ours = time.perf_counter() - started
    theirs = None
    if not lang.missing:
        db = lang.db("python-loop", 0)
        theirs = float(lang.run("grow", db, "t", str(loop)).strip())
    report.add(Row(f"`run_thread` of {loop:,} steps, no-op python agent", ours, theirs, note=lang.missing or "", goal="≤ 1.0x"))
