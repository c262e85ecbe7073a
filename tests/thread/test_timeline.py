"""thread_timeline: steps with the attempts that wrote them, failed attempts, forks."""

from __future__ import annotations

from conftest import EXAMPLES

from uwf_core.thread.timeline import thread_timeline

LOOP = """name: loop
roles:
  worker:
    description: Loops.
    goal: Loop.
    procedure: Loop.
    output: A number.
    meta:
      type: object
      properties: {n: {type: integer}}
      required: [n]
conditions:
  enough:
    description: A hundred steps
    expression: "$count(steps) > 100"
graph:
  $START:
    - role: worker
  worker:
    - role: $END
      condition: enough
    - role: worker
"""


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
    # the fork's row in its parent's timeline gives the step the time its own timeline does (one clock: uwf's)
    (branch,) = thread_timeline(root, thread).branches[first]
    assert branch.first == second and branch.took_ms == runs[second].durationMs


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


def test_a_window_looks_at_the_runs_since_its_oldest_step_and_finds_what_a_whole_read_does(root):
    """A 100,000-step thread's view went through all its runs at every reload: a window now looks
    at the records since the attempt that wrote its oldest step, and finds the same runs and
    failed attempts for the steps it shows as a whole read does."""
    from uwf_core.api import StepOptions, perform_step, put_workflow, start_thread
    from uwf_core.errors import UwfError

    path = root.location + "/loop.yaml"
    with open(path, "w") as handle:
        handle.write(LOOP)
    put_workflow(root, path)
    answers = iter(["bad", "good", "bad", "good", "good", "bad", "good", "bad"])  # failed attempts in the window and before it

    def worker(ctx):
        if next(answers) == "bad":
            raise RuntimeError("no")
        return {"n": 1}

    root.agents.register("worker", worker)
    thread = start_thread(root, "loop", "x").thread
    for _ in range(8):
        try:
            perform_step(root, thread, StepOptions(agent="worker"))
        except UwfError:
            pass
    whole = thread_timeline(root, thread, with_branches=False)
    window = thread_timeline(root, thread, with_branches=False, window=2)
    shown = {step.hash for step in window.shown}
    assert len(whole.steps) >= 3 and sum(len(found) for found in whole.attempts.values()) >= 2
    assert {step: run for step, run in window.step_runs.items()} == {step: run for step, run in whole.step_runs.items() if step in shown}
    assert {head: found for head, found in window.attempts.items() if head in shown} == {head: found for head, found in whole.attempts.items() if head in shown}
    assert any(head in shown for head in whole.attempts)  # a failed attempt inside the window, found
