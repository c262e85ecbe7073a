"""A step with trace export on against the same step with it off, measured in turn in one run:
in one process (the SDK imported once, as in a worker or `thread run`), and as `uwf thread step`
in a fresh process, which hands its spans to a shipper process at exit. The shipper's own time
is a row of its own: it is off the step's path, so the CLI runs are spaced for it to end (on 2
cores it would otherwise take the next run's CPU). Spans go to a real OTLP/HTTP receiver on
127.0.0.1 (tests/support)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SHIPPER_ROOM = 0.5  # seconds between CLI runs, for the last one's shipper to end
SLOW_AGENT = "sleep 0.3; cat >/dev/null; case \"$UWF_ROLE\" in planner) echo '{\"plan\":\"p\"}';; developer) echo '{\"summary\":\"s\"}';; *) echo '{\"approved\":false}';; esac"


def otel_rows(report, Row, uwf, runs: int) -> None:
    try:
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        print("otel: the otel extra is not installed (pip install -e '.[otel]'); skipped", flush=True)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
    from otlp_receiver import OtlpReceiver

    print("a step with trace export on vs off", flush=True)
    with OtlpReceiver() as receiver:
        _in_process(report, Row, uwf, receiver, runs)
        _cli(report, Row, uwf, receiver, max(5, runs // 3))
    print(f"  ({len(receiver.spans)} spans received)", flush=True)


def _in_process(report, Row, uwf, receiver, runs: int) -> None:
    from uwf_core.api import Repo, StepOptions, flush_traces, perform_step

    root, thread = uwf.root("otel-inproc", 1)
    times: dict[bool, list[float]] = {False: [], True: []}
    for on in (False, True):  # warm: imports, and for "on" the SDK's
        _set(on, receiver)
        perform_step(Repo.open(root), thread, StepOptions())
    flush_traces()
    for _ in range(runs):
        for on in (False, True):
            _set(on, receiver)
            repo = Repo.open(root)  # a new Repo each time, as in a new process
            started = time.perf_counter()
            perform_step(repo, thread, StepOptions())
            times[on].append(time.perf_counter() - started)
    _set(False, receiver)
    flush_traces()
    off, on = statistics.median(times[False]), statistics.median(times[True])
    report.add(Row("in-process step, no-op text agent, trace export on", on, off, against="export off", goal="≤ +5 ms",
                   note=f"{(on - off) * 1000:+.1f} ms"))
    report.add(Row("  difference (on - off)", on - off, None, note="same run", goal="≤ 5.0 ms"))


def _cli(report, Row, uwf, receiver, runs: int) -> None:
    from uwf_core.api import Repo
    from uwf_core.config.model import AgentConfig

    roots = {"noop": uwf.root("otel-cli-noop", 1), "slow": uwf.root("otel-cli-slow", 1)}
    repo = Repo.open(roots["slow"][0])
    repo.save_config(type(repo.config)(agents={"slow": AgentConfig("slow", "sh", ("-c", SLOW_AGENT), "text")}, default_agent="slow"))
    env_off = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    env_on = {**env_off, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
    times: dict[tuple[str, bool], list[float]] = {}
    for _ in range(runs):
        for agent, (root, thread) in roots.items():
            for on, env in ((False, env_off), (True, env_on)):
                started = time.perf_counter()
                done = subprocess.run(uwf.cli("--root", root, "thread", "step", thread), capture_output=True, text=True, env=env)
                times.setdefault((agent, on), []).append(time.perf_counter() - started)
                if done.returncode != 0 or "warning" in done.stderr:
                    raise SystemExit(f"otel bench step failed: {done.stderr.strip()[-500:]}")
                time.sleep(SHIPPER_ROOM)
    for agent, label in (("noop", "no-op text agent"), ("slow", "text agent that takes 0.3 s")):
        off, on = statistics.median(times[(agent, False)]), statistics.median(times[(agent, True)])
        report.add(Row(f"CLI step, {label}, trace export on", on, off, against="export off", goal="≤ +5 ms"))
        report.add(Row("  difference (on - off)", on - off, None, note="same run", goal="≤ 5.0 ms"))
    shipped = statistics.median([_ship_once(receiver) for _ in range(max(3, runs // 2))])
    report.add(Row("  its shipper, a process per step, off the step's path", shipped, None, note="the SDK's import, one request"))


def _ship_once(receiver) -> float:
    """`python -m uwf_core.telemetry.ship` with one step's spans (a step, its agent), to its end."""
    import json

    span = {"id": 1, "name": "step developer", "kind": "CHAIN", "start": time.time_ns(), "end": time.time_ns(), "attributes": {"uwf.role": "developer"},
            "children": [{"id": 2, "name": "agent text", "kind": "AGENT", "start": time.time_ns(), "end": time.time_ns(), "attributes": {}}]}
    payload = json.dumps({"url": receiver.endpoint + "/v1/traces", "source": "bench", "variables": [], "spans": [{"trace": 7, "span": span}]})
    started = time.perf_counter()
    subprocess.run([sys.executable, "-P", "-m", "uwf_core.telemetry.ship"], input=payload.encode(), check=True, cwd="/")
    return time.perf_counter() - started


def _set(on: bool, receiver) -> None:
    if on:
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
    else:
        os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
