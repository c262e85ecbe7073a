"""Where each thread came from (engine/fanout/lineage.py): forks by the ledger's rule, candidates
of agents side by side by their agent, a map's children by item; read once and kept."""

from __future__ import annotations

from conftest import EXAMPLES

from uwf_core.api import (
    LineageReader,
    StepOptions,
    fork_thread,
    list_threads,
    perform_step,
    put_workflow,
    run_thread,
    start_thread,
    step_side_by_side,
    thread_steps,
)

PLAN = {"plan": "p", "steps": ["a"]}


def _solve(root):
    put_workflow(root, str(EXAMPLES / "solve-issue.yaml"))
    root.agents.register("planner", lambda ctx: PLAN)
    return start_thread(root, "solve-issue", "fix it").thread


def _lineages(root, reader=None):
    return (reader or LineageReader(root)).read(list_threads(root, include_archived=True))


def test_a_fork_s_parent_is_the_oldest_thread_with_the_newest_step_it_shares(root):
    thread = _solve(root)
    first = perform_step(root, thread, StepOptions(agent="planner")).step
    fork = fork_thread(root, first).thread
    fork_of_fork = fork_thread(root, first).thread  # the same step: its parent is the oldest that has it
    perform_step(root, fork, StepOptions(agent=f"uwf-script --script-dir {EXAMPLES}"))
    grandchild = fork_thread(root, root.threads.heads()[fork]).thread  # a step only the fork has
    found = _lineages(root)
    assert found[fork].parent == thread and found[fork].kind == "fork"
    assert found[fork_of_fork].parent == thread
    assert found[grandchild].parent == fork
    assert thread not in found


def test_a_thread_started_with_the_same_workflow_and_prompt_is_no_fork(root):
    thread = _solve(root)
    perform_step(root, thread, StepOptions(agent="planner"))
    again = start_thread(root, "solve-issue", "fix it").thread  # the same StartNode, content-addressed
    assert again != thread and again not in _lineages(root)


def test_candidates_are_named_by_their_agent(root):
    thread = _solve(root)
    root.agents.register("alpha", lambda ctx: {"plan": "alpha", "steps": ["a"]})
    root.agents.register("beta", lambda ctx: {"plan": "beta", "steps": ["b"]})
    result = step_side_by_side(root, thread, ["alpha", "beta"])
    found = _lineages(root)
    for candidate in result.candidates:
        assert (found[candidate.thread].parent, found[candidate.thread].kind, found[candidate.thread].label) == (thread, "candidate", candidate.agent)


def test_a_map_s_children_by_item_and_a_second_read_walks_only_what_is_new(root):
    put_workflow(root, str(EXAMPLES / "develop.yaml"))
    put_workflow(root, str(EXAMPLES / "fan-out.yaml"))
    parent = start_thread(root, "fan-out", "Fix the login bug").thread
    assert run_thread(root, parent, StepOptions(agent=f"uwf-script --script-dir {EXAMPLES}")).done
    implement = next(step for step in thread_steps(root, parent) if step.role == "implement")
    children = [result["thread"] for result in implement.output["results"]]
    reader = LineageReader(root)
    found = _lineages(root, reader)
    assert [(found[child].parent, found[child].kind, found[child].label) for child in children] == [(parent, "child", str(n)) for n in range(1, len(children) + 1)]

    reads = []
    original = root.nodes.get
    root.nodes.get = lambda hash_: reads.append(hash_) or original(hash_)
    try:
        assert _lineages(root, reader) == found
    finally:
        root.nodes.get = original
    assert len(reads) <= 2 * len(list_threads(root, include_archived=True))  # each thread's StartNode, no chain walked again
