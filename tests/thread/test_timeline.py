"""thread_timeline: steps with the attempts that wrote them, failed attempts, forks."""

from __future__ import annotations

from conftest import EXAMPLES

from uwf_core.thread.timeline import thread_timeline


def test_each_step_has_the_attempt_that_wrote_it_in_a_fork_too(uwf, root):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "x").json()["thread"]
    agent = f"uwf-script --script {EXAMPLES / 'solve-issue.script.yaml'}"
    first = uwf("thread", "step", thread, "--agent", agent).json()["head"]
    fork = uwf("thread", "fork", first).json()["thread"]
    second = uwf("thread", "step", fork, "--agent", agent).json()["head"]

    runs = thread_timeline(root, fork).step_runs
    assert runs[first].thread == thread and runs[second].thread == fork  # the inherited step keeps its own run
    assert all(record.ok and record.durationMs >= 0 for record in runs.values())
    assert not thread_timeline(root, thread).attempts
