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
    thread = _started(repo)
    with pytest.raises(UwfError) as caught:
        perform_step(repo, thread, StepOptions(agent="writr"))
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
    assert done.returncode != 0 and "its line 6 would run there" in done.stderr  # line 5, an assignment, may run again and 'if __name__ == "__main__":' in done.stderr


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


def test_a_spec_is_linted_as_a_file_is_in_its_own_words(repo):
    import dataclasses

    from uwf_core.api import lint_workflow

    with pytest.raises(UwfError) as caught:
        put_workflow(repo, _spec(writer_role="writr"))
    message = caught.value.message
    assert message.startswith("WorkflowSpec 'built': graph.$START[0].role: unknown role 'writr'") and "did you mean 'writer'?" in message
    broken = dataclasses.replace(_spec(), max_steps=0, roles={**_spec().roles, "critic": RoleSpec("reviews", goal="g", procedure="p", output="o")})
    said = [problem.format(draft.document) for draft in [lint_workflow(broken)] for problem in draft.errors]
    assert "WorkflowSpec 'built': max_steps: must be a positive integer, got 0" in said
    assert "WorkflowSpec 'built': roles.critic: role 'critic' is missing 'schema'" in said
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


SLOW = """
import sys, time
from uwf_core.api import Repo, put_workflow, start_thread, perform_step, StepOptions, StepError, PythonContext
repo = Repo.open(sys.argv[1])
put_workflow(repo, sys.argv[2])
def slow(ctx: PythonContext) -> dict[str, object]:
    print("slow starts")
    time.sleep(2)
    print("slow's late line")
    return {"draft": "x"}
repo.agents.register("slow", slow, timeout=0.5)
thread = start_thread(repo, "draft-review", "x", agents={"writer": "slow", "critic": "slow"}).thread
lines = []
try:
    perform_step(repo, thread, StepOptions(on_output=lines.append))
except StepError as exc:
    print("caught", exc.status, flush=True)
print("step output:", lines, flush=True)
time.sleep(2.5)
print("still mine", flush=True)
"""


def test_a_function_given_up_on_leaves_the_programs_own_output_alone(root_dir, tmp_path):
    """The step gives up on a synchronous function at its deadline; the function runs on in its
    thread, but what the program prints after is the program's (on its stdout), and what the
    function prints late goes nowhere."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", SLOW, str(root_dir), str(DRAFT_REVIEW)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["caught timeout", "step output: ['slow starts']", "still mine"], done.stdout


def test_a_misspelt_binding_is_refused_when_the_thread_starts(repo, api_words):
    repo.agents.register("writer", write)
    repo.agents.register("critic", critique)
    with pytest.raises(UwfError) as caught:
        start_thread(repo, "draft-review", "x", agents={"writer": "writr", "critic": "human"})
    message = caught.value.message
    assert message.startswith("agent 'writr' (from start_thread's agents={'writer': ...}) is neither a registered function")
    assert "did you mean 'writer'?" in message and "--agent" not in message
    assert list_threads(repo) == []  # nothing started


@pytest.mark.parametrize("body, refused", [
    ("try:\n    import json\nexcept ImportError:\n    json = None\nif False:\n    import os\n", None),  # definitions only
    ("if __name__ == '__main__':\n    pass\nelse:\n    print('in the child')\n", "line 7"),  # the guard's else runs there
    ("import functools\ng = functools.partial(f)\nrepo.agents.register('g', g, isolate=True)\n", "not one (define it with `def`"),
    ("def f(ctx):\n    return {'other': 1}\n", "that name is now another object"),  # f redefined: the child would load the second
])
def test_isolate_refuses_what_the_child_could_not_load_as_registered(tmp_path, body, refused):
    """What register checks of an isolated function of the script being run (the child loads it
    again by its path); the check guards intent: whatever the child runs, it runs contained."""
    import subprocess
    import sys

    head = "import tempfile\nfrom uwf_core.api import Repo\n\ndef f(ctx):\n    return {}\n"
    register = "\nif __name__ == '__main__':\n    repo = Repo.open(tempfile.mkdtemp())\n    repo.agents.register('f', first, isolate=True)\n    print('registered')\n"
    if "partial" in body:
        script = head + "\nif __name__ == '__main__':\n    repo = Repo.open(tempfile.mkdtemp())\n" + "".join(f"    {line}\n" for line in body.splitlines())
    else:
        script = head + "first = f\n" + body + register
    (tmp_path / "agent_script.py").write_text(script)
    done = subprocess.run([sys.executable, str(tmp_path / "agent_script.py")], capture_output=True, text=True, timeout=60)
    if refused is None:
        assert done.returncode == 0 and "registered" in done.stdout, done.stderr
    else:
        assert done.returncode != 0 and refused in done.stderr, done.stderr


def test_an_isolated_script_with_a_byte_order_mark_is_read_as_python_reads_it(tmp_path):
    import subprocess
    import sys

    script = "\ufeffimport tempfile\nfrom uwf_core.api import Repo\ndef f(ctx):\n    return {}\nprint('work')\n"
    (tmp_path / "bom.py").write_bytes(script.encode("utf-8"))
    done = subprocess.run([sys.executable, "-c", "import runpy; runpy.run_path(%r, run_name='__main__')" % str(tmp_path / "bom.py")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0  # the script itself runs
    checked = subprocess.run([sys.executable, "-c", f"from uwf_core.agent_functions import top_level_work; print(top_level_work({str(tmp_path / 'bom.py')!r}))"],
                             capture_output=True, text=True, timeout=60)
    assert checked.stdout.strip() == "5", checked.stdout + checked.stderr  # its print, found through the BOM


def test_a_budget_out_of_range_is_said_in_the_apis_words(repo, api_words):
    with pytest.raises(UwfError) as caught:
        start_thread(repo, "draft-review", "x", max_tokens=0)
    assert caught.value.message.startswith("max_tokens must be a positive whole number") and "--" not in caught.value.message
