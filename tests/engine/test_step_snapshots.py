"""A step's two snapshots (before its agent, after it) share one stat index: read once and written
once per step however many directories the workspace has, with hand edits between steps still
found and recorded, and ignore rules kept as a snapshot without the index keeps them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from loop_workflow import loop_workflow

from uwf_core.api import Repo, StepOptions, perform_step, put_workflow, start_thread
from uwf_core.thread.files import snapshot, step_changes
from uwf_core.workspace import walker as walker_module
from uwf_core.workspace import stat_cache
from uwf_core.workspace.tree import flatten

OLD = 1_600_000_000


def _write(path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _agent(ctx):
    """Each step writes out/step<n>.txt and leaves everything else as it is."""
    number = len(ctx.steps) + 1
    _write(Path(ctx.workspace, "out", f"step{number}.txt"), f"step {number}\n".encode())
    return {"$status": "again", "n": number}


@pytest.fixture
def stepping(root_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(walker_module, "RACY_NS", 0)
    workspace = tmp_path / "ws"
    for number in range(60):
        path = workspace / f"pkg{number % 6}" / "sub" / f"mod{number}.py"
        _write(path, f"value = {number}\n".encode())
        os.utime(path, (OLD, OLD))
    (tmp_path / "loop.yaml").write_text(loop_workflow(100))
    repo = Repo.open(str(root_dir))
    put_workflow(repo, str(tmp_path / "loop.yaml"))
    repo.agents.register("writer", _agent)
    thread = start_thread(repo, "loop", "write files", str(workspace)).thread
    writes: list[str] = []
    real = stat_cache.atomic_write
    monkeypatch.setattr(stat_cache, "atomic_write", lambda path, data, **kw: writes.append(path) or real(path, data, **kw))
    return repo, thread, workspace, writes


def test_a_step_reads_its_workspaces_index_once_and_writes_it_once(stepping):
    repo, thread, workspace, writes = stepping
    for number in range(3):
        reads, writes[:] = stat_cache.StatCache.reads, []
        result = perform_step(repo, thread, StepOptions(agent="writer"))
        assert (stat_cache.StatCache.reads - reads, len(writes)) == (1, 1), number
        hand, changes = step_changes(repo, result.head)
        assert (hand, [change.path for change in changes]) == ([], [f"out/step{number + 1}.txt".encode()])


def test_hand_edits_between_steps_are_found_with_one_index_read(stepping):
    repo, thread, workspace, writes = stepping
    perform_step(repo, thread, StepOptions(agent="writer"))
    (workspace / "pkg3" / "sub" / "mod3.py").write_bytes(b"value = 'by hand'\n")
    (workspace / "pkg4" / "sub" / "mod4.py").unlink()
    reads = stat_cache.StatCache.reads
    said: list[str] = []
    result = perform_step(repo, thread, StepOptions(agent="writer", on_output=said.append))
    assert stat_cache.StatCache.reads - reads == 1
    hand, changes = step_changes(repo, result.head)
    assert {(change.path, change.status) for change in hand} == {(b"pkg3/sub/mod3.py", "modified"), (b"pkg4/sub/mod4.py", "deleted")}
    assert [change.path for change in changes] == [b"out/step2.txt"]
    assert any("changed since the last snapshot (2 paths" in line for line in said)
    fresh = snapshot(repo, str(workspace), index=stat_cache.StatCache())  # no index: every file read
    assert fresh.tree == _files(repo, result.head)


def test_ignore_rules_and_a_new_ignored_file_are_kept_as_without_the_index(stepping):
    repo, thread, workspace, writes = stepping
    perform_step(repo, thread, StepOptions(agent="writer"))
    _write(workspace / ".gitignore", b"*.log\nout/step3.txt\n")
    _write(workspace / "pkg1" / "run.log", b"ignored\n")
    result = perform_step(repo, thread, StepOptions(agent="writer"))
    paths = set(flatten(repo.nodes, _files(repo, result.head)))
    assert b".gitignore" in paths and b"pkg1/run.log" not in paths and b"out/step2.txt" in paths
    third = perform_step(repo, thread, StepOptions(agent="writer"))  # writes out/step3.txt, which is ignored
    assert b"out/step3.txt" not in set(flatten(repo.nodes, _files(repo, third.head)))
    assert _files(repo, third.head) == snapshot(repo, str(workspace), index=stat_cache.StatCache()).tree


def _files(repo: Repo, head: str) -> str:
    from uwf_core.thread.files import files_of

    return files_of(repo.nodes, head)
