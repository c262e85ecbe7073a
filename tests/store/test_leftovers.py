"""What interrupted commands leave behind is named by `cas fsck` and removed by `cas gc`: a fork's
workspace no thread has, a killed repair's or step's scratch directory, the lock files of threads
that are no longer active. Nothing a thread still has is touched."""

from __future__ import annotations

import os
import time

from conftest import EXAMPLES

from uwf_core.encoding.ids import new_ulid
from uwf_core.store.files import FileLock

AGENT = f"uwf-script --script {EXAMPLES / 'solve-issue.script.yaml'}"
HOUR_AGO = time.time() - 7200


def _aged(path) -> None:
    os.utime(path, (HOUR_AGO, HOUR_AGO))


def test_gc_removes_what_interrupted_commands_left_and_nothing_else(uwf, root_dir, tmp_path):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a\n")
    kept = uwf("thread", "start", "solve-issue", "-p", "kept", "-w", str(workspace)).json()["thread"]
    assert uwf("thread", "step", kept, "--agent", AGENT).code == 0
    ended = uwf("thread", "start", "solve-issue", "-p", "ended").json()["thread"]
    assert uwf("thread", "step", ended, "--agent", AGENT).code == 0
    assert uwf("thread", "kill", ended).code == 0
    fork = uwf("thread", "fork", uwf("thread", "show", kept).json()["head"]).json()["thread"]

    failed_fork = root_dir / "workspaces" / new_ulid()  # a fork killed while it laid its files out
    (failed_fork / "deep" / "er").mkdir(parents=True)
    (failed_fork / "deep" / "er" / "f.txt").write_text("x\n")
    repair = root_dir / "tmp" / "repair-abc123"
    repair.mkdir(parents=True)
    (repair / "nodes.sqlite").write_bytes(b"\0" * 1000)
    stage = root_dir / "tmp" / "stage-def456"
    stage.mkdir()
    for path in (failed_fork, repair, stage, root_dir / "locks" / f"thread-{ended}.lock", root_dir / "locks" / f"thread-{kept}.lock"):
        _aged(path)
    held = root_dir / "locks" / f"claim-{new_ulid()}.lock"
    held.write_text("")
    _aged(held)

    checked = uwf("cas", "fsck")
    assert checked.code == 0
    named = {problem["target"] for problem in checked.json()["problems"]}
    assert {str(failed_fork), str(repair), str(stage), str(root_dir / "locks" / f"thread-{ended}.lock")} <= named

    lock = FileLock(str(held), wait=False).acquire()  # a worker holds it: not removed
    try:
        dry = uwf("cas", "gc", "--grace", "0", "--dry-run").json()
        assert {item["path"] for item in dry["wouldRemove"]} >= {str(failed_fork), str(repair), str(stage)}
        assert failed_fork.exists()
        swept = uwf("cas", "gc", "--grace", "0")
        assert swept.code == 0, swept.err
        removed = {item["path"] for item in swept.json()["leftovers"]}
    finally:
        lock.release()
    assert removed == {str(failed_fork), str(repair), str(stage), str(root_dir / "locks" / f"thread-{ended}.lock")}
    assert not failed_fork.exists() and not repair.exists() and not stage.exists()
    assert (root_dir / "locks" / f"thread-{kept}.lock").exists() and held.exists()
    assert (root_dir / "workspaces" / fork).is_dir()  # a fork's own workspace stays
    assert uwf("thread", "step", fork, "--agent", AGENT).code == 0
    assert uwf("cas", "fsck").json()["ok"] is True
