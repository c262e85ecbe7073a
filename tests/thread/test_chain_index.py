"""The chain index and the lazy context: a step reads a bounded number of nodes however long the
chain, and what it computes is what walking the whole chain would give."""

from __future__ import annotations

import pytest
from conftest import EXAMPLES
from node_file import _query

from uwf_core.repo import Repo
from uwf_core.store.cas import CasStore
from uwf_core.thread.chain_index import KEY, chain_record
from uwf_core.thread.context import build_context
from uwf_core.thread.moderator import evaluate
from uwf_core.thread.ops import fork_thread, resume_thread, start_thread
from uwf_core.thread.write import write_step
from uwf_core.workflow.ops import load_workflow, put_workflow

OUTPUTS = {
    "planner": {"plan": "p", "steps": ["s"]},
    "developer": {"filesChanged": ["a.py"], "summary": "done"},
    "reviewer": {"approved": False, "comments": "again"},
}


def _grow(repo: Repo, thread: str, steps: int) -> list[str]:
    """Append `steps` steps of solve-issue's loop (planner, then developer/reviewer, never approved)."""
    workflow = load_workflow(repo, "solve-issue")
    head = repo.threads.heads()[thread]
    start = build_context(repo.nodes, head).start_hash
    written = []
    for _ in range(steps):
        context = build_context(repo.nodes, head)
        role = evaluate(workflow, context).role
        prev = None if context.head_is_start else head
        new = write_step(repo.nodes, start=start, prev=prev, role=role, meta=workflow.roles[role].meta, output=OUTPUTS[role], agent="t", detail={})
        repo.threads.compare_and_set(thread, head, new)
        written.append(new)
        head = new
    return written


@pytest.fixture
def endless(tmp_path) -> str:
    """solve-issue with room for long chains."""
    path = tmp_path / "solve-issue.yaml"
    path.write_text((EXAMPLES / "solve-issue.yaml").read_text().replace("maxSteps: 30", "maxSteps: 100000"))
    return str(path)


@pytest.fixture
def long_thread(root, endless):
    put_workflow(root, endless)
    info = start_thread(root, "solve-issue", "loop")
    steps = _grow(root, info.thread, 301)
    return root, info, steps


class CountingStore(CasStore):
    def __init__(self, nodes) -> None:
        super().__init__(nodes)
        self.reads: list[str] = []

    def get(self, text):
        self.reads.append(text)
        return super().get(text)


def test_routing_a_long_chain_reads_a_few_nodes(long_thread):
    repo, info, steps = long_thread
    workflow = load_workflow(repo, "solve-issue")
    store = CountingStore(Repo.open(repo.location).backend.nodes)  # nothing cached
    context = build_context(store, steps[-1])
    assert len(context.steps) == 301 and context.since_start == 301
    decision = evaluate(workflow, context)  # reviewer -> developer through `steps[-1].output.approved = false`
    assert decision.role == "developer"
    assert len(set(store.reads)) < 10, store.reads  # the head, its start, its output: not 301 steps


def test_the_lazy_context_matches_a_full_walk(long_thread):
    repo, info, steps = long_thread
    context = build_context(Repo.open(repo.location).nodes, steps[-1])
    assert [step.hash for step in context.steps] == steps  # a full iteration walks everything, oldest first
    fresh = build_context(Repo.open(repo.location).nodes, steps[-1])
    assert [s.hash for s in fresh.steps[-3:]] == steps[-3:]
    assert fresh.steps[0].hash == steps[0] and fresh.steps[150].hash == steps[150]
    assert [s.hash for s in reversed(fresh.steps)][:2] == [steps[-1], steps[-2]]
    assert fresh.role_count("planner") == 1 and fresh.role_count("reviewer") == 150
    assert fresh.first_step("reviewer").hash == steps[2] and fresh.last_step_of("developer").hash == steps[-2]


def test_a_missing_or_garbled_record_is_rebuilt_the_same(long_thread, root_dir):
    repo, info, steps = long_thread
    expected = chain_record(repo.nodes, steps[-1])
    _query(root_dir, "update derived set value = 'garbage' where key = ?", (KEY + steps[100],))
    _query(root_dir, "delete from derived where key != ?", (KEY + steps[100],))
    rebuilt = chain_record(Repo.open(repo.location).nodes, steps[-1])
    assert rebuilt == expected
    assert len(_query(root_dir, "select key from derived")) >= 301  # kept for next time


def test_forks_and_resumes_count_their_history(long_thread):
    repo, info, steps = long_thread
    fork = fork_thread(repo, steps[9])
    assert chain_record(repo.nodes, repo.threads.heads()[fork.thread]).count == 10
    _grow(repo, fork.thread, 2)
    assert len(build_context(repo.nodes, repo.threads.heads()[fork.thread]).steps) == 12
    repo.threads.archive(info.thread, None, "killed")
    resumed = resume_thread(repo, info.thread, "more")
    context = build_context(Repo.open(repo.location).nodes, resumed.head)
    assert context.since_start == 0 and len(context.steps) == 301
    assert context.steps[-1].hash == steps[-1]  # read through the resumed head
    _grow(repo, info.thread, 1)
    after = build_context(Repo.open(repo.location).nodes, repo.threads.heads()[info.thread])
    assert after.since_start == 1 and len(after.steps) == 302 and after.role_count("planner") == 2


def test_a_condition_over_all_steps_still_sees_them_all(root, endless):
    from uwf_core.workflow.jsonata_expr import steps_window

    assert steps_window("steps[-1].output.approved = false") == 1
    assert steps_window("$count(steps[role='reviewer']) > 2") is None
    assert steps_window("$last('reviewer').output.approved") == 0
    put_workflow(root, endless)
    info = start_thread(root, "solve-issue", "count")
    steps = _grow(root, info.thread, 7)
    context = build_context(Repo.open(root.location).nodes, steps[-1])
    assert context.to_json()["steps"][0]["role"] == "planner" and len(context.to_json()["steps"]) == 7
    assert [s["role"] for s in context.to_json(2)["steps"]] == ["developer", "reviewer"]
