"""A step with trace export on against the same step with it off, measured in turn in one run, for
a collector that is up (a real OTLP/HTTP receiver on 127.0.0.1, tests/support), one that refuses
connections and one that takes them and never answers: in one process (the SDK imported once,
as in a worker or `thread run`) and as `uwf thread step` in a fresh process, which leaves its
spans in the spool of this host's one shipper (telemetry/spool.py). The shipper's own time is a
row of its own: it is off the step's path, so the CLI runs against a collector that is up are
spaced for it to end (on 2 cores it would otherwise take the next run's CPU). Then
`flush_traces()` against the collector that never answers."""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

SHIPPER_ROOM = 1.3  # seconds between CLI runs: the last one's shipper sends, lingers a second for more, and ends
SLOW_AGENT = "sleep 0.3; cat >/dev/null; case \"$UWF_ROLE\" in planner) echo '{\"plan\":\"p\"}';; developer) echo '{\"summary\":\"s\"}';; *) echo '{\"approved\":false}';; esac"
COLLECTORS = ("up", "refused", "hung")


def otel_rows(report, Row, uwf, runs: int) -> None:
    try:
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        print("otel: the otel extra is not installed (pip install -e '.[otel]'); skipped", flush=True)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
    from otlp_receiver import OtlpReceiver

    print("a step with trace export on vs off", flush=True)
    with OtlpReceiver() as receiver, _silent() as hung:
        endpoints = {"up": receiver.endpoint, "refused": f"http://127.0.0.1:{_closed_port()}", "hung": hung}
        for kind in COLLECTORS:
            _in_process(report, Row, uwf, endpoints[kind], kind, runs)
        for kind in COLLECTORS:
            # Against the collector that is up each run waits for its shipper to end: fewer runs.
            _cli(report, Row, uwf, endpoints[kind], kind, max(5, runs // 3) if kind == "up" else runs)
        shipped = statistics.median([_ship_once(receiver.endpoint) for _ in range(max(3, runs // 6))])
        report.add(Row("  the shipper sending one step's spans, off the step's path", shipped, None, note="the SDK's import, one request"))
        _flush_hung(report, Row, uwf, hung)
    print(f"  ({len(receiver.spans)} spans received)", flush=True)


def _in_process(report, Row, uwf, endpoint: str, kind: str, runs: int) -> None:
    from uwf_core.api import Repo, StepOptions, perform_step

    root, thread = uwf.root(f"otel-inproc-{kind}", 1)
    times: dict[bool, list[float]] = {False: [], True: []}
    for on in (False, True):  # warm: imports, and for "on" the SDK's
        _set(on, endpoint)
        perform_step(Repo.open(root), thread, StepOptions())
    for index in range(runs):
        for on in _pair(index):
            _set(on, endpoint)
            repo = Repo.open(root)  # a new Repo each time, as in a new process
            started = time.perf_counter()
            perform_step(repo, thread, StepOptions())
            times[on].append(time.perf_counter() - started)
    _set(False, endpoint)
    report.add(Row(f"in-process step, no-op text agent, collector {kind}", None, None, against="export off", goal="≤ +5 ms",
                   ours_runs=times[True], theirs_runs=times[False]))
    report.add(_difference(Row, times[True], times[False]))


def _cli(report, Row, uwf, endpoint: str, kind: str, runs: int) -> None:
    from uwf_core.api import Repo
    from uwf_core.config.model import AgentConfig

    roots = {"noop": uwf.root(f"otel-cli-noop-{kind}", 1)}
    if kind == "up":
        roots["slow"] = uwf.root("otel-cli-slow", 1)
        repo = Repo.open(roots["slow"][0])
        repo.save_config(type(repo.config)(agents={"slow": AgentConfig("slow", "sh", ("-c", SLOW_AGENT), "text")}, default_agent="slow"))
    env_off = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    env_on = {**env_off, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
    times: dict[tuple[str, bool], list[float]] = {}
    for index in range(runs):
        for agent, (root, thread) in roots.items():
            for on in _pair(index):
                env = env_on if on else env_off
                started = time.perf_counter()
                done = subprocess.run(uwf.cli("--root", root, "thread", "step", thread), capture_output=True, text=True, env=env)
                times.setdefault((agent, on), []).append(time.perf_counter() - started)
                if done.returncode != 0 or (kind == "up" and "warning" in done.stderr):
                    raise SystemExit(f"otel bench step failed: {done.stderr.strip()[-500:]}")
                if kind == "up":
                    time.sleep(SHIPPER_ROOM)
    for agent, label in (("noop", "no-op text agent"), ("slow", "text agent that takes 0.3 s")):
        if (agent, True) in times:
            report.add(Row(f"CLI step, {label}, collector {kind}", None, None, against="export off", goal="≤ +5 ms",
                           ours_runs=times[(agent, True)], theirs_runs=times[(agent, False)]))
            report.add(_difference(Row, times[(agent, True)], times[(agent, False)]))


def _pair(index: int) -> tuple[bool, bool]:
    """One run's pair, export off and on, the order turned every other run (neither side always
    the one that follows the other)."""
    return (False, True) if index % 2 == 0 else (True, False)


def _difference(Row, on: list[float], off: list[float]):
    """The median of each run's own difference: a pair's two steps ran back to back, under the
    same load, where the medians of two sides of a loaded machine move apart by ±10 ms."""
    pairs = [a - b for a, b in zip(on, off)]
    return Row("  difference (on - off), median of each run's pair", None, None, note="same run", goal="≤ 5.0 ms", ours_runs=pairs)


def _flush_hung(report, Row, uwf, endpoint: str) -> None:
    """A program's `flush_traces()` after a step, the collector taking connections and answering
    nothing: a fresh process each time, the call alone timed."""
    root, thread = uwf.root("otel-flush-hung", 1)
    code = ("import sys, time\nfrom uwf_core.api import Repo, StepOptions, flush_traces, perform_step\n"
            f"perform_step(Repo.open({root!r}), {thread!r}, StepOptions())\n"
            "started = time.perf_counter(); flush_traces(); print(time.perf_counter() - started)\n")
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
    took = []
    for _ in range(5):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        if done.returncode != 0:
            raise SystemExit(f"otel bench flush failed: {done.stderr.strip()[-500:]}")
        took.append(float(done.stdout.strip().splitlines()[-1]))
    report.add(Row("`flush_traces()`, a collector that never answers", None, None, note="its own process each run", goal="≤ 0.5 s",
                   ours_runs=took))


def _ship_once(endpoint: str) -> float:
    """The shipper started on one step's spans (a step, its agent) as a step starts it, until it has
    sent them (it lingers a moment for more after that)."""
    import json

    from uwf_core.telemetry.spool import claim, leave, spool_dir, waiting

    url = endpoint + "/v1/traces"
    span = {"id": 1, "name": "step developer", "kind": "CHAIN", "start": time.time_ns(), "end": time.time_ns(), "attributes": {"uwf.role": "developer"},
            "children": [{"id": 2, "name": "agent text", "kind": "AGENT", "start": time.time_ns(), "end": time.time_ns(), "attributes": {}}]}
    while (lock := claim(url)) is None:  # the last one's shipper still lingers
        time.sleep(0.05)
    leave(url, json.dumps({"spans": [{"trace": 7, "span": span}]}).encode(), 2)
    payload = json.dumps({"url": url, "source": "bench", "variables": [], "lock": lock})
    started = time.perf_counter()
    shipper = subprocess.Popen([sys.executable, "-P", "-m", "uwf_core.telemetry.ship"], stdin=subprocess.PIPE, cwd="/", pass_fds=(lock,))
    shipper.stdin.write(payload.encode())
    shipper.stdin.close()
    os.close(lock)
    while waiting(spool_dir(url)):
        time.sleep(0.005)
    took = time.perf_counter() - started
    shipper.wait(timeout=30)
    return took


def _set(on: bool, endpoint: str) -> None:
    if on:
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    else:
        os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def _silent():
    """A collector that takes connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(512)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
