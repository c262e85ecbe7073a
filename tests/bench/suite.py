"""uwf's benchmark suite: every figure of docs/explanation/benchmarks.md in one run, side by side with
LangGraph where LangGraph does the same thing, as medians and ratios measured in this run
(the machine is shared and noisy: ratios measured together are what can be compared).

    .venv/bin/python scripts/bench.py            # everything (~10 minutes on 2 cores)
    .venv/bin/python scripts/bench.py --quick    # smaller sizes and fewer runs (~2 minutes)

The LangGraph rows need `pip install -e '.[bench]'`; without it they say so and the uwf rows
still run. Both sides run the same three-role loop (planner -> developer -> reviewer, back to
developer while the reviewer does not approve) with no-op work: uwf's agent is a shell line
that prints the role's answer (text protocol) or a kit agent that writes its own nodes (step
protocol); LangGraph's nodes are Python functions, checkpointed in SQLite.
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
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "tests" / "bench"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

from common import compile_sources, private_cluster  # noqa: E402

WORKFLOW = """
name: bench-loop
description: planner, then developer and reviewer until approved (never, here)
maxSteps: 1000000
roles:
  planner: {description: plans, goal: Plan., procedure: Plan., output: A plan.,
            meta: {type: object, properties: {plan: {type: string}}, required: [plan]}}
  developer: {description: builds, goal: Build., procedure: Build., output: A summary.,
              meta: {type: object, properties: {summary: {type: string}}, required: [summary]}}
  reviewer: {description: reviews, goal: Review., procedure: Review., output: A verdict.,
             meta: {type: object, properties: {approved: {type: boolean}}, required: [approved]}}
conditions:
  notApproved: {description: the reviewer said no, expression: "steps[-1].output.approved = false"}
graph:
  $START: [{role: planner, condition: null}]
  planner: [{role: developer, condition: null}]
  developer: [{role: reviewer, condition: null}]
  reviewer: [{role: developer, condition: notApproved}, {role: $END, condition: null}]
"""
OUTPUTS = {"planner": {"plan": "p"}, "developer": {"summary": "s"}, "reviewer": {"approved": False}}
TEXT_AGENT = (
    "cat >/dev/null; case \"$UWF_ROLE\" in planner) echo '{\"plan\":\"p\"}';; "
    "developer) echo '{\"summary\":\"s\"}';; *) echo '{\"approved\":false}';; esac"
)
STEP_AGENT = """
import sys
from uwf_core.agent_kit import AgentAnswer, run_agent
ANSWERS = {"planner": '{"plan": "p"}', "developer": '{"summary": "s"}', "reviewer": '{"approved": false}'}
sys.exit(run_agent("noop-step", lambda ctx: AgentAnswer(ANSWERS[ctx.role.name]), llm_fallback=False))
"""


PYTHON_AGENT = """
ANSWERS = {"planner": {"plan": "p"}, "developer": {"summary": "s"}, "reviewer": {"approved": False}}


def answer(ctx):
    return ANSWERS[ctx.role]
"""


def role_at(index: int) -> str:
    return "planner" if index == 0 else ("developer" if index % 2 == 1 else "reviewer")


# -- measuring ---------------------------------------------------------------------------------


def run_timed(argv: list[str], env: dict | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])}... failed: {done.stderr.strip()[-500:]}")
    return elapsed


@dataclass
class Row:
    """One figure. Measured in runs (`ours_runs`, `theirs_runs`: each side's, interleaved), the
    figure is their median and the table gives min and max too; without, it is one measurement
    (a size, a count, a run that takes minutes) and the table says so."""

    what: str
    ours: float | None  # seconds (or bytes, for sizes)
    theirs: float | None = None
    against: str = "LangGraph"
    goal: str = ""
    unit: str = "s"
    note: str = ""
    ours_runs: list[float] | None = None
    theirs_runs: list[float] | None = None

    def __post_init__(self) -> None:
        if self.ours is None and self.ours_runs:
            self.ours = statistics.median(self.ours_runs)
        if self.theirs is None and self.theirs_runs:
            self.theirs = statistics.median(self.theirs_runs)

    @property
    def ratio(self) -> float | None:
        return self.ours / self.theirs if self.ours is not None and self.theirs else None


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        print(f"  {row.what}: {_fmt(row.ours, row.unit)}" + (f" vs {_fmt(row.theirs, row.unit)} ({row.ratio:.2f}x)" if row.ratio else ""), flush=True)

    def table(self) -> str:
        lines = ["| what | uwf: median (min–max, runs) | other | ratio | goal |", "|---|---|---|---|---|"]
        for row in self.rows:
            other = f"{_spread(row.theirs, row.theirs_runs, row.unit)} ({row.against})" if row.theirs is not None else (row.note or "—")
            ratio = f"**{row.ratio:.3f}x**" if row.ratio is not None else "—"
            lines.append(f"| {row.what} | {_spread(row.ours, row.ours_runs, row.unit)} | {other} | {ratio} | {row.goal} |")
        return "\n".join(lines)


def _spread(value: float | None, runs: list[float] | None, unit: str) -> str:
    if not runs or len(runs) < 2:
        return _fmt(value, unit) + (" (one run)" if value is not None and unit not in ("B", "MB") else "")
    return f"{_fmt(value, unit)} ({_fmt(min(runs), unit)}–{_fmt(max(runs), unit)}, {len(runs)})"


def machine_line(under_load: bool) -> str:
    """The machine a run was on: cores, load average (1 minute), whether a busy process ran beside."""
    load = os.getloadavg()[0]
    return f"{os.cpu_count()} cores, load average {load:.2f}" + (", one core kept busy beside (--under-load)" if under_load else "")


class Busy:
    """A process that keeps one core busy for the whole run (`--under-load`): what a shared
    machine does to a step, measured rather than hoped away."""

    def __enter__(self) -> Busy:
        self.proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        return self

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait()


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "B":
        return f"{value / 1e6:,.2f} MB"
    if unit == "MB":
        return f"{value:,.0f} MB"
    if unit == "/s":
        return f"{value:,.0f}/s"
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value * 1000:,.1f} ms" if value < 10 else f"{value:,.1f} s"


def median(values: list[float]) -> float:
    return statistics.median(values)


# -- the two sides -----------------------------------------------------------------------------


class Uwf:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.bin = Path(sys.executable).parent
        self.workflow = work / "bench-loop.yaml"
        self.workflow.write_text(WORKFLOW)
        self.step_agent = work / "noop_step_agent.py"
        self.step_agent.write_text(STEP_AGENT)
        self.python_agent = work / "noop_function_agent.py"
        self.python_agent.write_text(PYTHON_AGENT)

    def cli(self, *args: str) -> list[str]:
        return [str(self.bin / "uwf"), *args]

    def root(self, name: str, length: int, *, agent: str = "text", runs: bool = False) -> tuple[str, str]:
        """A root with the bench workflow and a thread `length` steps deep; (root, thread).
        `runs`: each step's attempt in runs.jsonl too, as a thread that really ran has."""
        from uwf_core.api import Config, Repo, load_workflow, put_workflow, start_thread
        from uwf_core.config.model import AgentConfig
        from uwf_core.store.records import RunRecord
        from uwf_core.thread.write import write_step

        root = str(self.work / name)
        repo = Repo.open(root)
        put_workflow(repo, str(self.workflow))
        agents = {
            "text": AgentConfig("text", "sh", ("-c", TEXT_AGENT), "text"),
            "step": AgentConfig("step", sys.executable, (str(self.step_agent),), "step"),
            "function": AgentConfig("function", "", (), "python", python=f"{self.python_agent}:answer"),
        }
        repo.save_config(Config(agents=agents, default_agent=agent))
        info = start_thread(repo, "bench-loop", "benchmark")
        roles = load_workflow(repo, "bench-loop").roles
        head, prev, lines = info.head, None, []
        now = int(time.time() * 1000) - length
        with repo.nodes.nodes.batch():
            for index in range(length):
                role = role_at(index)
                head = write_step(repo.nodes, start=info.head, prev=prev, role=role, meta=roles[role].meta,
                                  output=OUTPUTS[role], agent="bench", detail={"bench": index})
                if runs:
                    record = RunRecord(info.thread, None, role, "bench", "ok", prev or info.head, head, now + index, now + index + 1, 1)
                    lines.append(record.to_json() + "\n")
                prev = head
        if lines:
            with open(os.path.join(root, "runs.jsonl"), "a") as handle:
                handle.writelines(lines)
        if head != info.head:
            repo.threads.compare_and_set(info.thread, info.head, head)
        return root, info.thread

    def disk_bytes(self, root: str) -> int:
        return sum(path.stat().st_size for path in Path(root).rglob("*") if path.is_file())


class LangGraph:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.script = str(BENCH / "langgraph_side.py")
        try:
            import langgraph  # noqa: F401
            from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: F401

            self.missing = None
        except ImportError:
            self.missing = "not installed: pip install -e '.[bench]'"

    def run(self, *args: str) -> str:
        done = subprocess.run([sys.executable, self.script, *args], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"langgraph {args[0]} failed: {done.stderr.strip()[-800:]}")
        return done.stdout

    def db(self, name: str, length: int) -> str:
        path = str(self.work / f"{name}.sqlite")
        if length:
            self.run("build", path, "t", str(length))
        return path

    def step_argv(self, db: str) -> list[str]:
        return [sys.executable, self.script, "step", db, "t"]


# -- the sections ------------------------------------------------------------------------------


def startup(report: Report, uwf: Uwf, runs: int) -> None:
    print("start-up", flush=True)
    root, thread = uwf.root("startup", 3)
    env = dict(os.environ, UWF_STORAGE_ROOT=root)
    commands = {"python": [sys.executable, "-c", "pass"], "textual": [sys.executable, "-c", "import textual.app"],
                "version": uwf.cli("--version"), "show": uwf.cli("thread", "show", thread)}
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(run_timed(argv, env))
    base = times["python"]
    report.add(Row("`uwf --version`", None, None, "`python -c pass`", "≤ 1.3x", ours_runs=times["version"], theirs_runs=base))
    report.add(Row("`uwf thread show`", None, None, "`python -c pass`", "≤ 2x", ours_runs=times["show"], theirs_runs=base))
    paint = [_first_paint(root) for _ in range(max(5, runs // 8))]
    report.add(Row("`uwf-tui` first paint", None, None, "`python -c \"import textual.app\"`", ours_runs=paint, theirs_runs=times["textual"]))


def _first_paint(root: str) -> float:
    from tui import FIRST_PAINT

    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", FIRST_PAINT, root], check=True, capture_output=True, text=True)
    return time.perf_counter() - started


# What any Python program that does a sandboxed step's work pays before its first line of it:
# the interpreter, the standard modules a step imports, and one `sh` in bubblewrap.
_BOX = (f"['{shutil.which('bwrap')}', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-pid', "
        f"'--die-with-parent'] + " if shutil.which("bwrap") else "")
FLOOR = [sys.executable, "-c", (
    "import argparse, ctypes, json, re, sqlite3, subprocess, xxhash\n"
    f"subprocess.run({_BOX}['sh', '-c', 'true'], check=True)"
)]


def cli_steps(report: Report, uwf: Uwf, lang: LangGraph, lengths: list[int], runs: int) -> dict[tuple[str, int], float]:
    """One step in a fresh process, at each chain length, both sides interleaved."""
    print("a step in a fresh process", flush=True)
    roots = {(agent, n): uwf.root(f"cli-{agent}-{n}", n, agent=agent) for agent in ("text", "step") for n in lengths}
    dbs = {n: lang.db(f"lg-{n}", n) for n in lengths} if not lang.missing else {}
    times: dict[tuple[str, int], list[float]] = {}
    for _ in range(runs):
        times.setdefault(("floor", 0), []).append(run_timed(FLOOR))
        for n in lengths:
            for agent in ("text", "step"):
                root, thread = roots[(agent, n)]
                times.setdefault((agent, n), []).append(run_timed(uwf.cli("--root", root, "thread", "step", thread)))
            if dbs:
                times.setdefault(("langgraph", n), []).append(run_timed(lang.step_argv(dbs[n])))
    medians = {key: median(values) for key, values in times.items()}
    for n in lengths:
        theirs = times.get(("langgraph", n))
        for agent, label in (("text", "no-op text agent"), ("step", "no-op step agent")):
            report.add(Row(f"CLI step, {label}, chain length {n:,}", None, None, note=lang.missing or "",
                           goal="≤ 0.05x" if agent == "text" else "", ours_runs=times[(agent, n)], theirs_runs=theirs))
    if dbs:
        report.add(Row("the floor: Python, the standard modules a step imports, `sh` in bubblewrap", None, None,
                       note="no uwf code", ours_runs=times[("floor", 0)], theirs_runs=times[("langgraph", lengths[0])]))
    for agent in ("text", "step"):
        flat = medians[(agent, lengths[-1])] / medians[(agent, lengths[0])]
        report.add(Row(f"CLI step ({agent}) at {lengths[-1]:,} / at {lengths[0]}", flat, None, goal="≤ 1.1", unit="x", note="same run"))
    return medians


def in_process(report: Report, uwf: Uwf, lang: LangGraph, lengths: list[int], runs: int) -> None:
    """A step through the core API (no interpreter start, no imports) with a text agent, a process,
    vs LangGraph's `invoke` (the python agents' rows, tests/bench/python_agents.py, hold the goal)."""
    print("a step in one process", flush=True)
    from uwf_core.api import Repo, StepOptions, perform_step

    for n in lengths:
        root, thread = uwf.root(f"inproc-{n}", n)
        perform_step(Repo.open(root), thread, StepOptions())  # warm: imports, JSONata compile
        ours = []
        for _ in range(runs):
            repo = Repo.open(root)  # a new Repo each time: nothing cached, as in a new process
            started = time.perf_counter()
            perform_step(repo, thread, StepOptions())
            ours.append(time.perf_counter() - started)
        theirs = None
        if not lang.missing:
            db = lang.db(f"inproc-{n}", n)
            theirs = float(lang.run("grow", db, "t", str(runs)).split()[0]) / runs
        report.add(Row(f"in-process step, no-op text agent (a process), chain length {n:,}", None, theirs, note=lang.missing or "", ours_runs=ours))
        # uwf's agent is a process (a command, by design); LangGraph's no-op node is a function call.
        agent = median([_agent_alone() for _ in range(runs)])
        report.add(Row(f"  the same, without the no-op agent's own process ({agent * 1000:.1f} ms alone)", median(ours) - agent, theirs, note=lang.missing or ""))


def _agent_alone() -> float:
    """The no-op text agent's process on its own: spawned, fed a prompt, waited for."""
    started = time.perf_counter()
    subprocess.run(["sh", "-c", TEXT_AGENT], input=b"x" * 4000, capture_output=True, env=dict(os.environ, UWF_ROLE="developer"))
    return time.perf_counter() - started


def disk(report: Report, uwf: Uwf, lang: LangGraph, steps: int) -> None:
    print(f"bytes on disk after {steps:,} steps", flush=True)
    # Built and stepped in a process of its own, so the root is measured at rest (its connections
    # closed, the WAL folded in), as LangGraph's file is after its process.
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; from suite import Uwf; "
        "from uwf_core.api import Repo, StepOptions, run_thread; "
        "root, thread = Uwf(Path(sys.argv[2])).root('disk', 0); run_thread(Repo.open(root), thread, StepOptions(), max_steps=int(sys.argv[3]))"
    )
    subprocess.run([sys.executable, "-c", code, str(BENCH), str(uwf.work), str(steps)], check=True, capture_output=True)
    root = str(uwf.work / "disk")
    theirs = None
    if not lang.missing:
        db = str(uwf.work / "disk-langgraph.sqlite")
        lang.run("grow", db, "t", str(steps))
        theirs = Path(db).stat().st_size
    report.add(Row(f"bytes on disk after {steps:,} steps (text protocol, prompts kept)", uwf.disk_bytes(root), theirs,
                   note=lang.missing or "", goal="≤ 0.05x", unit="B"))


def fork(report: Report, uwf: Uwf, lang: LangGraph, at: int, more: int) -> None:
    print(f"fork at step {at:,} and {more} more steps", flush=True)
    from uwf_core.api import Repo, context_of

    root, thread = uwf.root("fork", at + 5)
    repo = Repo.open(root)
    step_hash = context_of(repo, repo.threads.heads()[thread]).steps[at - 1].hash
    started = time.perf_counter()
    forked = json.loads(subprocess.run(uwf.cli("--root", root, "thread", "fork", step_hash), capture_output=True, text=True, check=True).stdout)["thread"]
    for _ in range(more):
        run_timed(uwf.cli("--root", root, "thread", "step", forked))
    ours = time.perf_counter() - started
    theirs = None
    if not lang.missing:
        db = str(uwf.work / "fork-langgraph.sqlite")
        lang.run("grow", db, "t", str(at + 5))  # the history a fork searches is real checkpoints
        started = time.perf_counter()
        lang.run("fork", db, "t", str(at), "f")
        for _ in range(more):
            run_timed([sys.executable, lang.script, "step", db, "f"])
        theirs = time.perf_counter() - started
    report.add(Row(f"fork at step {at:,} + {more} steps (fresh processes)", ours, theirs, note=lang.missing or "", goal="≤ 0.2x"))


def cas(report: Report, uwf: Uwf, nodes: int, walk_length: int) -> None:
    print(f"the CAS: puts, gets, walk of {walk_length:,}, fsck and gc of {nodes:,} nodes", flush=True)
    from uwf_core.api import Repo
    from uwf_core.store.builtin_schemas import BUILTIN_HASHES

    root = str(uwf.work / "cas")
    repo = Repo.open(root)
    repo.nodes.ensure_builtins()
    content = BUILTIN_HASHES["content"]
    count = 2000
    started = time.perf_counter()
    hashes = [repo.nodes.put(content, f"node number {i} " + "x" * 100) for i in range(count)]
    report.add(Row("CAS put (one durable write each)", count / (time.perf_counter() - started), unit="/s", note="uwf only"))
    fresh = Repo.open(root)
    started = time.perf_counter()
    for hash_ in hashes:
        fresh.nodes.get(hash_)
    report.add(Row("CAS get (read and verified, not cached)", count / (time.perf_counter() - started), unit="/s", note="uwf only"))
    with repo.nodes.nodes.batch():
        for i in range(nodes - count):
            repo.nodes.put(content, f"bulk {i}")
    walk_root, walk_thread = uwf.root("walk", walk_length // 3)
    head = Repo.open(walk_root).threads.heads()[walk_thread]
    report.add(Row(f"`uwf cas walk` of a {walk_length // 3:,}-step thread (~{walk_length:,} nodes)", run_timed(uwf.cli("--root", walk_root, "cas", "walk", head)), note="uwf only"))
    report.add(Row(f"`uwf cas fsck` of {nodes:,} nodes", run_timed(uwf.cli("--root", root, "cas", "fsck")), note="uwf only"))
    report.add(Row(f"`uwf cas gc --grace 0` of {nodes:,} nodes (all garbage)", run_timed(uwf.cli("--root", root, "cas", "gc", "--grace", "0")), note="uwf only"))


def workers(report: Report, uwf: Uwf, counts: list[int], threads: int) -> None:
    """Steps per second through `uwf worker` processes on this host: a directory root, and a
    PostgreSQL root (a private cluster, when PostgreSQL and libpq are here)."""
    print(f"workers: {threads} threads of 3 steps, {', '.join(map(str, counts))} worker processes", flush=True)
    places = {"directory root": None}
    cluster = private_cluster()
    if cluster is not None:
        places["PostgreSQL root"] = cluster
    try:
        for place, server in places.items():
            for count in counts:
                name = f"workers-{place.split()[0]}-{count}"
                location = server.create_database(name.replace("-", "_")) if server else str(uwf.work / name)
                rate = _worker_rate(uwf, location, count, threads)
                report.add(Row(f"{place}: steps per second, {count} worker{'s' if count > 1 else ''}", rate, unit="/s", note="uwf only"))
    finally:
        if cluster is not None:
            cluster.stop()


def _worker_rate(uwf: Uwf, location: str, count: int, threads: int) -> float:
    env = dict(os.environ, UWF_STORAGE_ROOT=location, UWF_ENV_FILE=str(uwf.work / "bench.env"))

    def run(*args: str) -> str:
        return subprocess.run(uwf.cli(*args), capture_output=True, text=True, env=env, check=True).stdout

    run("workflow", "put", str(uwf.workflow))
    run("agent", "add", "text", "--protocol", "text", "--", "sh", "-c", TEXT_AGENT.replace("\"approved\":false", "\"approved\":true"))
    run("setup", "--default-agent", "text")
    for i in range(threads):
        thread = json.loads(run("thread", "start", "bench-loop", "-p", f"t{i}"))["thread"]
        run("thread", "run", thread, "--detach")
    started = time.perf_counter()
    procs = [subprocess.Popen(uwf.cli("worker", "--once"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env) for _ in range(count)]
    for proc in procs:
        proc.wait()
    elapsed = time.perf_counter() - started
    return threads * 3 / elapsed  # planner, developer, reviewer (approved): three steps a thread


def tui(report: Report, uwf: Uwf, length: int) -> None:
    print(f"the TUI opens a {length:,}-step thread", flush=True)
    root, thread = uwf.root("tui", length)
    from uwf_core.api import Repo, start_thread

    start_thread(Repo.open(root), "bench-loop", "a newer, short thread: the one selected when the TUI opens")
    probe = (
        "import asyncio, sys; sys.path.insert(0, sys.argv[3]); from tui import open_thread; "
        "print(*asyncio.run(open_thread(sys.argv[1], sys.argv[2])))"
    )
    out = subprocess.run([sys.executable, "-c", probe, root, thread, str(BENCH)], capture_output=True, text=True, check=True).stdout
    elapsed, blocked, rss = (float(x) for x in out.split()[-3:])
    report.add(Row(f"TUI opens a {length:,}-step thread (newest step on screen)", elapsed, goal="< 1 s", note=f"UI blocked ≤ {blocked * 1000:.0f} ms at a time"))
    report.add(Row("TUI peak memory with that thread open", rss, unit="MB", note="uwf only"))
    probe = (
        "import asyncio, json, sys; sys.path.insert(0, sys.argv[3]); from tui import live; "
        "print(json.dumps(asyncio.run(live(sys.argv[1], sys.argv[2]))))"
    )
    out = subprocess.run([sys.executable, "-c", probe, root, thread, str(BENCH)], capture_output=True, text=True, check=True).stdout
    waits = json.loads(out.splitlines()[-1])
    report.add(Row(f"TUI: switch to the {length:,}-step thread in the list (its newest row on screen)", waits["switch"], goal="≤ 300 ms"))
    report.add(Row("TUI: a step committed by `uwf thread step` → its row on screen", waits["cli"], goal="≤ 300 ms", note="polled (0.2 s)"))
    report.add(Row("TUI: its own step (`s`) committed → its row on screen", waits["own"], goal="≤ 300 ms"))
    report.add(Row("TUI: resize across the layout's width (100x30 ↔ 160x48) → drawn again", waits["resize"], waits["resize within"],
                   "a resize within one layout (120x40 ↔ 160x48)", goal="≤ 300 ms"))


def tui_run(report: Report, uwf: Uwf, lengths: tuple[int, ...], runs: int) -> None:
    """The workbench while `r` steps a long thread with an in-process python agent, against
    `uwf thread run` stepping the same thread (issue 40): `runs` of each in turn, each on a fresh
    copy of the root (a run makes the thread longer); medians."""
    probe = (
        "import asyncio, json, sys; sys.path.insert(0, sys.argv[3]); from tui import run_keys; "
        "print(json.dumps(asyncio.run(run_keys(sys.argv[1], sys.argv[2]))))"
    )
    count = 500
    for length in lengths:
        print(f"the TUI's r on a {length:,}-step thread ({runs} runs of each in turn)", flush=True)
        base, thread = uwf.root(f"tui-run-{length}", length, agent="function", runs=True)
        cli_rates: list[float] = []
        got: list[dict] = []
        for _ in range(runs):
            root = base + "-run"
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(base, root)
            started = time.perf_counter()
            subprocess.run(uwf.cli("thread", "run", thread, "--max", str(count)), env=dict(os.environ, UWF_STORAGE_ROOT=root), check=True, capture_output=True)
            cli_rates.append(count / (time.perf_counter() - started))
            shutil.rmtree(root)
            shutil.copytree(base, root)
            out = subprocess.run([sys.executable, "-c", probe, root, thread, str(BENCH)], capture_output=True, text=True, check=True).stdout
            got.append(json.loads(out.splitlines()[-1]))
        shutil.rmtree(base + "-run", ignore_errors=True)

        def median(key: str) -> float:
            return statistics.median(run[key] for run in got)

        size = f"{length:,}-step thread"
        report.add(Row(f"TUI during r on a {size}: a 10 ms timer's lateness, p50 / p95 (what a key waits)", median("late p50"), median("late p95"),
                       "p95", goal="p95 ≤ 100 ms"))
        report.add(Row(f"TUI during r on a {size}: `?` then Escape, each on screen, p50 / p95", median("key p50"), median("key p95"), "p95"))
        ratios = ", ".join(f"{run['steps/s'] / cli:.2f}" for run, cli in zip(got, cli_rates))
        print(f"  each run's steps a second, the workbench's / the CLI's: {ratios}", flush=True)
        report.add(Row(f"TUI r on a {size}: steps a second", median("steps/s"), statistics.median(cli_rates), "`uwf thread run` on the same thread",
                       goal="≥ 0.5x", unit="/s"))
        report.add(Row(f"TUI during r on a {size}: a resize across the layout's width → the panes laid out, p50 / max", median("resize p50"),
                       median("resize max"), "max", goal="≤ 500 ms"))
        after = [run["after x"] for run in got]
        report.add(Row(f"TUI x during r on a {size}: steps begun after it was handled", None,
                       note=f"at most {max(after):.0f} (the step in flight ends); the header " + ("cleared" if all(run["cleared"] for run in got) else "NOT cleared"),
                       goal="≤ 1"))


def sandbox(report: Report, uwf: Uwf, runs: int) -> None:
    """A step's cost in bubblewrap's sandbox against the same step in a process group only (the
    fallback, UWF_BWRAP set empty), interleaved in one run."""
    from uwf_core.engine.contain.sandbox import BUBBLEWRAP, containment

    print("the agents' sandbox", flush=True)
    box = containment()
    if box.kind != BUBBLEWRAP:
        report.add(Row("CLI step in the sandbox", None, note=f"no sandbox here: {box.reason}"))
        return
    roots = {agent: uwf.root(f"sandbox-{agent}", 1, agent=agent) for agent in ("text", "step")}
    without = dict(os.environ, UWF_BWRAP="")
    times: dict[tuple[str, bool], list[float]] = {}
    for _ in range(runs):
        for agent, (root, thread) in roots.items():
            for boxed in (True, False):
                argv = uwf.cli("--root", root, "thread", "step", thread)
                times.setdefault((agent, boxed), []).append(run_timed(argv, None if boxed else without))
    for agent, label in (("text", "no-op text agent"), ("step", "no-op step agent")):
        boxed, bare = median(times[(agent, True)]), median(times[(agent, False)])
        report.add(Row(f"CLI step, {label}, in bubblewrap's sandbox", None, None, "process group only", goal="≤ +15 ms",
                       ours_runs=times[(agent, True)], theirs_runs=times[(agent, False)]))
        report.add(Row(f"  the sandbox's own cost ({label})", boxed - bare, note="same run", goal="≤ 15 ms"))
    if shutil.which("git") is not None:
        from guard_rows import guard_rows

        guard_rows(report, Row, uwf, run_timed, median, runs, files=2_000 if runs < 10 else 10_000)


def workspace_files(report: Report, uwf: Uwf, quick: bool) -> None:
    """Snapshots of a thread's files against git (tests/bench/files.py)."""
    import files

    if shutil.which("git") is None:
        report.add(Row("workspace snapshots against git", None, note="git is not installed"))
        return
    files.snapshot_rows(report, Row, uwf.work, 2_000 if quick else 10_000, 10_000, 5 if quick else 11)
    files.stdlib_rows(report, Row, uwf.work, 5 if quick else 11)
    files.storage_rows(report, Row, uwf.work, 100)
    files.step_rows(report, Row, uwf, run_timed, median, 5 if quick else 21)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="uwf's benchmark suite (docs/explanation/benchmarks.md)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer runs, for a first look")
    sections = ["startup", "cli", "sandbox", "files", "inproc", "python", "disk", "fork", "cas", "tui", "tui-run", "workers", "map", "otel", "mcp", "lanes", "pg"]
    parser.add_argument("--only", choices=sections, action="append")
    parser.add_argument("--under-load", action="store_true", help="keep one core busy beside the whole run (a shared machine)")
    args = parser.parse_args(argv)
    if args.under_load:
        with Busy():
            _run(args, sections)
    else:
        _run(args, sections)


def _run(args, sections: list[str]) -> None:
    compile_sources()
    quick = args.quick
    only = set(args.only or sections)
    work = Path(tempfile.mkdtemp(prefix="uwf-bench-"))
    # Every command runs in the bench's own directory: a thread without a workspace works in
    # the caller's, which the sandbox checks for git repositories (a checkout with its .venv
    # would add its own walk to every CLI step).
    caller = os.getcwd()
    os.chdir(work)
    report = Report()
    uwf, lang = Uwf(work), LangGraph(work)
    print(f"LangGraph: {lang.missing or 'installed'}; python -c pass, uwf and LangGraph measured in turn", flush=True)
    before = machine_line(args.under_load)
    print(f"at the start: {before}", flush=True)
    try:
        if "startup" in only:
            startup(report, uwf, 10 if quick else 40)
        if "cli" in only:
            cli_steps(report, uwf, lang, [1, 100, 1000] if quick else [1, 100, 1000, 10000], 5 if quick else 7)
        if "sandbox" in only:
            sandbox(report, uwf, 5 if quick else 21)
        if "files" in only:
            workspace_files(report, uwf, quick)
        if "inproc" in only:
            in_process(report, uwf, lang, [1, 1000], 10 if quick else 30)
        if "python" in only:
            from python_agents import python_rows

            python_rows(report, Row, uwf, lang, [1, 1000], 30 if quick else 100, 300 if quick else 1000)
        if "disk" in only:
            disk(report, uwf, lang, 300 if quick else 2000)
        if "fork" in only:
            fork(report, uwf, lang, 100 if quick else 1000, 10)
        if "cas" in only:
            cas(report, uwf, 10_000 if quick else 100_000, 3000 if quick else 10_000)
        if "tui" in only:
            tui(report, uwf, 1000 if quick else 10_000)
        if "tui-run" in only:
            tui_run(report, uwf, (1000,) if quick else (1000, 10_000, 100_000), 1 if quick else 5)
        if "workers" in only:
            workers(report, uwf, [1, 4] if quick else [1, 4, 16], 16 if quick else 48)
        if "map" in only:
            from map_rows import map_rows

            map_rows(report, Row, uwf)
        if "otel" in only:
            from otel_rows import otel_rows

            otel_rows(report, Row, uwf, 15 if quick else 45)
        if "mcp" in only:
            from mcp_rows import mcp_rows

            mcp_rows(report, Row, uwf, run_timed, 10 if quick else 30)
        if "lanes" in only:
            from lane_rows import lane_rows

            lane_rows(report, Row, uwf, steps=10 if quick else 30)
        if "pg" in only:
            from pg_rows import pg_rows

            pg_rows(report, Row, uwf, 5 if quick else 15)
    finally:
        os.chdir(caller)
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"{time.strftime('%Y-%m-%d')}, Python {sys.version.split()[0]}; at the start: {before}; at the end: {machine_line(args.under_load)}")
    print("medians of the runs, min–max and the number of runs beside; ratio = uwf's median / the other's")
    print(report.table())


if __name__ == "__main__":
    main()
