"""uwf as a Python library (issue 45): functions registered as a type checker would have them,
errors that speak the API and keep their cause, workflows in any form, and the calls whose
behaviour a program could guess wrong doing what their docstrings say."""

from __future__ import annotations

import pytest

from conftest import EXAMPLES
from uwf_core.api import (
    PythonContext,
    Repo,
    RoleSpec,
    Route,
    StepError,
    StepOptions,
    UwfError,
    WorkflowSpec,
    fork_thread,
    list_threads,
    perform_step,
    put_workflow,
    run_thread,
    start_thread,
    thread_info,
    thread_steps,
)

DRAFT_REVIEW = EXAMPLES / "python" / "draft-review.yaml"


def write(ctx: PythonContext) -> dict[str, object]:
    return {"draft": "d"}


def critique(ctx: PythonContext) -> dict[str, object]:
    return {"approved": True, "notes": "ok"}


@pytest.fixture
def repo(root_dir):
    repo = Repo.open(str(root_dir))
    put_workflow(repo, str(DRAFT_REVIEW))
    return repo


def _started(repo: Repo, **agents: str) -> str:
    return start_thread(repo, "draft-review", "a note", agents=agents or {"writer": "writer", "critic": "critic"}).thread


# -- register ---------------------------------------------------------------------------------


def test_register_refuses_what_cannot_be_an_agent_at_once(repo):
    def takes_nothing() -> dict:
        return {}

    def gives_a_list(ctx) -> list[int]:
        return [1]

    with pytest.raises(UwfError, match="must take one argument, the PythonContext"):
        repo.agents.register("a", takes_nothing)
    with pytest.raises(UwfError, match=r"returns list\[int\]; an agent function returns the role's output"):
        repo.agents.register("b", gives_a_list)
    assert "a" not in repo.agents and "b" not in repo.agents
    with pytest.raises(UwfError, match="must take one argument"):
        perform_step(repo, _started(repo, writer="x", critic="x"), StepOptions(agent=takes_nothing))


def test_a_name_registered_twice_is_refused_unless_replaced(repo):
    repo.agents.register("writer", write)
    repo.agents.register("writer", write)  # the same function again: nothing changes
    with pytest.raises(UwfError, match="'writer' is already registered, to .*:write: register it with replace=True"):
        repo.agents.register("writer", critique)
    repo.agents.register("writer", critique, replace=True)
    assert repo.agents.functions["writer"] is critique


def test_a_misspelt_name_lists_the_registered_functions(repo):
    repo.agents.register("writer", write)
    repo.agents.register("critic", critique)
    thread = _started(repo, writer="writr", critic="critic")
    with pytest.raises(UwfError) as caught:
        perform_step(repo, thread)
    assert "agent 'writr'" in caught.value.message and "neither a registered function (critic, writer)" in caught.value.message
    assert "did you mean 'writer'?" in caught.value.message


def test_isolate_refuses_a_script_whose_own_work_would_run_again(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text(
        "import tempfile\nfrom uwf_core.api import Repo\n"
        "def f(ctx):\n    return {}\n"
        "repo = Repo.open(tempfile.mkdtemp())\n"
        "repo.agents.register('f', f, isolate=True)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "its line 5 would run there" in done.stderr and 'if __name__ == "__main__":' in done.stderr


# -- errors -----------------------------------------------------------------------------------


def test_errors_from_the_api_name_the_api(repo, root_dir, api_words):
    with pytest.raises(UwfError) as caught:
        start_thread(repo, "draft-review", "x", agents={"writr": "writer"})
    assert caught.value.message.startswith('agents={"writr": ...}: ') and "--agent" not in caught.value.message
    repo.agents.register("writer", write)
    repo.agents.register("critic", critique)
    thread = _started(repo)
    run_thread(repo, thread)
    with pytest.raises(UwfError) as caught:
        perform_step(repo, thread)
    assert "`fork_thread()`" in caught.value.message and "`resume_thread()`" in caught.value.message
    assert "uwf thread" not in caught.value.message
    afile = root_dir / "a-file"
    afile.write_text("x")
    with pytest.raises(UwfError) as caught:
        Repo.open(str(afile)).threads.heads()
    assert "--root" not in caught.value.message


def test_the_command_line_keeps_its_own_words(uwf):
    started = uwf("workflow", "put", str(DRAFT_REVIEW))
    assert started.code == 0
    refused = uwf("thread", "start", "draft-review", "-p", "x", "--agent", "writr=w")
    assert refused.code == 1 and "--agent writr=...:" in refused.err


# -- workflows in any form ----------------------------------------------------------------------


def _spec(writer_role: str = "writer") -> WorkflowSpec:
    draft = {"type": "object", "properties": {"draft": {"type": "string"}}, "required": ["draft"]}
    review = {"type": "object", "properties": {"approved": {"type": "boolean"}, "notes": {"type": "string"}},
              "required": ["approved", "notes"]}
    return WorkflowSpec(
        name="built", description="built in code",
        roles={"writer": RoleSpec("writes", goal="g", procedure="p", output="o", schema=draft),
               "critic": RoleSpec("reviews", goal="g", procedure="p", output="o", schema=review)},
        conditions={"rejected": "steps[-1].output.approved = false"},
        graph={"$START": [Route(writer_role)], "writer": [Route("critic")],
               "critic": [Route("writer", when="rejected"), Route("$END")]},
    )


def test_put_workflow_takes_a_path_text_a_mapping_or_a_spec_alike(repo):
    from pathlib import Path

    by_path = put_workflow(repo, Path(DRAFT_REVIEW))
    by_text = put_workflow(repo, DRAFT_REVIEW.read_text())
    assert by_path.hash == by_text.hash and by_text.changed is False
    by_spec = put_workflow(repo, _spec())
    by_mapping = put_workflow(repo, _spec().to_dict())
    assert by_spec.name == "built" and by_mapping.hash == by_spec.hash
    repo.agents.register("writer", write)
    repo.agents.register("critic", critique)
    thread = start_thread(repo, "built", "x", agents={"writer": "writer", "critic": "critic"}).thread
    assert run_thread(repo, thread).reason == "done"


def test_a_spec_is_linted_as_a_file_is(repo):
    with pytest.raises(UwfError) as caught:
        put_workflow(repo, _spec(writer_role="writr"))
    assert "graph.$START[0].role: unknown role 'writr'" in caught.value.message and "did you mean 'writer'?" in caught.value.message
    with pytest.raises(UwfError, match="not a int"):
        put_workflow(repo, 42)  # type: ignore[arg-type]


# -- what a program could guess wrong ------------------------------------------------------------


def test_a_finished_thread_is_listed_with_the_archived_ones(repo):
    repo.agents.register("writer", write)
    repo.agents.register("critic", critique)
    thread = _started(repo)
    run_thread(repo, thread)
    assert thread not in [info.thread for info in list_threads(repo)]
    assert thread in [info.thread for info in list_threads(repo, include_archived=True)]


def test_a_fork_of_a_finished_threads_last_step_is_active_and_ends_at_its_next_step(repo):
    repo.agents.register("writer", write)
    repo.agents.register("critic", critique)
    thread = _started(repo)
    run_thread(repo, thread)
    last = thread_steps(repo, thread)[-1]
    fork = fork_thread(repo, last.hash)
    assert thread_info(repo, fork.thread).active
    ended = perform_step(repo, fork.thread)
    assert ended.done and ended.reason == "done" and ended.head == last.hash


def test_reuse_replays_a_function_when_the_original_ran_with_it(repo):
    calls: list[str] = []

    def counted_write(ctx: PythonContext) -> dict[str, object]:
        calls.append("writer")
        return {"draft": "d"}

    def counted_critique(ctx: PythonContext) -> dict[str, object]:
        calls.append("critic")
        return {"approved": True, "notes": "ok"}

    repo.agents.register("writer", counted_write)
    repo.agents.register("critic", counted_critique)
    thread = _started(repo)
    run_thread(repo, thread, StepOptions(reuse=True))
    fork = fork_thread(repo, thread_steps(repo, thread)[0].hash)
    calls.clear()
    result = run_thread(repo, fork.thread, StepOptions(reuse=True))
    assert calls == [] and result.reused_from is not None
