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


def test_a_window_reads_only_the_newest_steps_and_forks_are_found_apart(uwf, root):
    """A view of a long thread costs what it shows: the window's steps (and their runs) are
    read, the older ones are not; its forks, which need the whole chain, come from find_branches
    and are those a whole read finds."""
    from uwf_core.thread.timeline import find_branches

    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "x").json()["thread"]
    agent = f"uwf-script --script {EXAMPLES / 'solve-issue.script.yaml'}"
    heads = [uwf("thread", "step", thread, "--agent", agent).json()["head"] for _ in range(4)]
    fork = uwf("thread", "fork", heads[0]).json()["thread"]

    whole = thread_timeline(root, thread)
    window = thread_timeline(root, thread, with_branches=False, window=2)
    assert window.first_shown == 2 and [step.hash for step in window.shown] == heads[2:]
    assert len(window.context.steps._tail) == 2  # the two older steps were never read
    assert set(heads[2:]) <= set(window.step_runs)  # the shown steps have their runs
    assert [number for number, _ in window.numbered()] == [3, 4]
    assert window.branches == {} and find_branches(root, window) == whole.branches
    assert [branch.thread for branch in whole.branches[heads[0]]] == [fork]
