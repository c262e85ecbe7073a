"""`uwf cas gc --grace 0` in a loop against every command that writes nodes and then publishes
them — `thread start`, `workflow put`, `bundle import`, `thread fork` — some of them SIGKILLed
midway, on both backends: nothing any of them reported is lost, and fsck stays clean.

Without the sweep's lock (store/base.py: publishing, sweeping) a start's head lost its node
within ~140 starts and a put's version within ~180: gc swept what was written and not yet
named. The race runs `UWF_RACE_SECONDS` (20 by default) per backend."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time

import pytest
from conftest import REPO, _uwf_command

pytestmark = pytest.mark.slow

RACE_SECONDS = float(os.environ.get("UWF_RACE_SECONDS", "20"))
WORKFLOW = """name: race
roles:
  writer:
    description: "Writes. {stamp}"
    goal: You write.
    procedure: Write.
    output: An answer.
    meta:
      type: object
      properties: {{answer: {{type: string}}}}
      required: [answer]
graph:
  $START:
    - role: writer
  writer:
    - role: $END
"""

class Race:
    """Writers in loops, one of them killed now and then, while gc sweeps with no grace."""

    def __init__(self, root: str, scratch) -> None:
        self.env = dict(os.environ, UWF_STORAGE_ROOT=root)
        self.scratch = scratch
        self.deadline = time.monotonic() + RACE_SECONDS
        self.started: list[str] = []  # threads a start reported
        self.forked: list[str] = []
        self.versions: list[str] = []  # workflow hashes a put reported
        self.imported: list[str] = []  # threads an import reported added
        self.killed = 0
        self.sweeps = 0
        self.failures: list[str] = []
        self.lock = threading.Lock()

    def uwf(self, *args: str, kill_after: float | None = None) -> tuple[int, str, str]:
        process = subprocess.Popen([*_uwf_command(), *args], cwd=str(REPO), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if kill_after is not None:
            try:
                out, err = process.communicate(timeout=kill_after)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGKILL)
                process.communicate()
                with self.lock:
                    self.killed += 1
                return -9, "", ""
        else:
            out, err = process.communicate(timeout=120)
        if "Traceback" in err:
            self.failures.append(f"uwf {' '.join(args)}: {err}")
        return process.returncode, out, err

    def loop(self, action) -> None:
        rng = random.Random(hash(action.__name__))
        i = 0
        while time.monotonic() < self.deadline:
            kill_after = rng.uniform(0.05, 0.4) if rng.random() < 0.25 else None
            try:
                action(i, kill_after)
            except Exception as exc:  # noqa: BLE001 - a failure of the test's own, said at the end
                self.failures.append(f"{action.__name__}: {exc!r}")
                return
            i += 1

    def start(self, i: int, kill_after: float | None) -> None:
        code, out, err = self.uwf("thread", "start", "race", "-p", f"start {i} {os.urandom(8).hex()}", kill_after=kill_after)
        if code == 0:
            self.started.append(json.loads(out)["thread"])
        elif code != -9:
            self.failures.append(f"thread start: {err.strip()}")

    def put(self, i: int, kill_after: float | None) -> None:
        path = self.scratch / f"race-{threading.get_ident()}.yaml"
        path.write_text(WORKFLOW.format(stamp=os.urandom(8).hex()))
        code, out, err = self.uwf("workflow", "put", str(path), kill_after=kill_after)
        if code == 0:
            self.versions.append(json.loads(out)["hash"])
        elif code != -9:
            self.failures.append(f"workflow put: {err.strip()}")

    def bundle(self, i: int, kill_after: float | None) -> None:
        path = self.bundles[i % len(self.bundles)]
        code, out, err = self.uwf("bundle", "import", str(path), kill_after=kill_after)
        if code == 0:
            self.imported.extend(item["thread"] for item in json.loads(out)["threads"] if item["status"] == "added")
        elif code != -9:
            self.failures.append(f"bundle import: {err.strip()}")

    def fork(self, i: int, kill_after: float | None) -> None:
        if not self.started:
            time.sleep(0.05)
            return
        code, out, err = self.uwf("thread", "show", self.started[-1])
        if code != 0:
            self.failures.append(f"thread show: {err.strip()}")
            return
        code, out, err = self.uwf("thread", "fork", json.loads(out)["head"], kill_after=kill_after)
        if code == 0:
            self.forked.append(json.loads(out)["thread"])
        elif code != -9:
            self.failures.append(f"thread fork: {err.strip()}")

    def sweep(self) -> None:
        while time.monotonic() < self.deadline:
            code, _, err = self.uwf("cas", "gc", "--grace", "0")
            if code != 0:
                self.failures.append(f"gc: {err.strip()}")
                return
            self.sweeps += 1

    def run(self) -> None:
        runners = [threading.Thread(target=self.loop, args=(action,)) for action in (self.start, self.put, self.bundle, self.fork)]
        runners.append(threading.Thread(target=self.sweep))
        for runner in runners:
            runner.start()
        for runner in runners:
            runner.join()


def _bundles(tmp_path, count: int) -> list:
    """Bundles of one thread each, every one with nodes the race's root does not have."""
    from uwf_core.api import Repo, export_bundle, put_workflow, start_thread

    source = Repo.open(str(tmp_path / "source"))
    definition = tmp_path / "source.yaml"
    definition.write_text(WORKFLOW.format(stamp="source"))
    put_workflow(source, str(definition))
    paths = []
    for i in range(count):
        thread = start_thread(source, "race", f"bundled {i}").thread
        path = tmp_path / f"b{i}.uwfb"
        export_bundle(source, [thread], str(path))
        paths.append(path)
    return paths


def _race(root: str, tmp_path) -> Race:
    race = Race(root, tmp_path)
    definition = tmp_path / "race.yaml"
    definition.write_text(WORKFLOW.format(stamp="first"))
    assert race.uwf("workflow", "put", str(definition))[0] == 0
    race.bundles = _bundles(tmp_path, 200)
    race.deadline = time.monotonic() + RACE_SECONDS
    race.run()
    assert not race.failures, race.failures[:5]
    return race


def _check(race: Race) -> None:
    assert race.sweeps >= 5 and race.killed >= 3, (race.sweeps, race.killed)
    assert len(race.started) >= 10 and len(race.versions) >= 10 and len(race.imported) >= 5 and len(race.forked) >= 3
    code, out, err = race.uwf("cas", "fsck")
    assert code == 0, out + err
    report = json.loads(out)  # warnings may name a killed writer's temp file, which gc removes
    assert report["ok"] is True and [p for p in report["problems"] if p["severity"] == "error"] == []
    for thread in race.started + race.forked + race.imported:
        code, out, err = race.uwf("thread", "read", thread)
        assert code == 0, (thread, err)
    code, out, _ = race.uwf("workflow", "history", "race")
    entry = json.loads(out)
    listed = {entry["current"]["hash"], *(version["hash"] for version in entry["history"])}
    assert set(race.versions) <= listed
    for hash_ in race.versions:
        assert race.uwf("cas", "get", hash_)[0] == 0, hash_
    assert race.uwf("cas", "gc", "--grace", "0")[0] == 0  # and gc still works afterwards


def test_no_writer_loses_a_node_to_gc_on_a_directory_root(tmp_path):
    _check(_race(str(tmp_path / "root"), tmp_path))


def test_no_writer_loses_a_node_to_gc_on_a_postgresql_root(tmp_path, pg_url):
    _check(_race(pg_url, tmp_path))
