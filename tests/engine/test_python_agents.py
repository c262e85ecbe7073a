"""Python functions as agents (the python protocol): registered from Python or named in
config.yaml, sync and async, raising, overrunning their deadline in uwf's process and isolated in
a child, corrected, reused, redacted; the same StepNode, detail and runs log as any agent's."""

from __future__ import annotations

import json
import os
import time

import pytest
from conftest import EXAMPLES, REPO

from uwf_core.api import PythonContext, Repo, StepError, StepOptions, perform_step, put_workflow, run_thread, start_thread, step_details
from uwf_core.errors import UwfError

FIXTURE = "tests.engine.python_agents_fixture"


@pytest.fixture
def repo(root_dir, monkeypatch) -> Repo:
    monkeypatch.syspath_prepend(str(REPO))  # the fixture module, as an installed package would be
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # and in an isolated child
    repo = Repo.open(str(root_dir))
    put_workflow(repo, str(EXAMPLES / "solve-issue.yaml"))
    return repo


def _thread(repo: Repo) -> str:
    return start_thread(repo, "solve-issue", "Fix the login bug").thread


def _fn(name: str):
    from tests.engine import python_agents_fixture

    return getattr(python_agents_fixture, name)


def _runs(repo: Repo, thread: str) -> list:
    return list(repo.runs.read(thread))


def test_a_registered_function_runs_a_thread_to_its_end(repo):
    repo.agents.register("solver", _fn("solve"))
    thread = _thread(repo)
    seen = []
    result = run_thread(repo, thread, StepOptions(agent="solver"), on_step=seen.append)
    assert result.done and result.reason == "done"
    assert [step.role for step in seen] == ["planner", "developer", "reviewer", "developer", "reviewer"]
    details = step_details(repo, seen[0].head)
    assert details.agent == "solver" and details.output == {"plan": "p", "steps": ["s"]}
    assert details.detail["protocol"] == "python"
    assert details.detail["function"] == f"{FIXTURE}:solve"
    assert details.detail["call"] == "in-process"
    assert len(details.detail["source"]) == 13  # the hash of the module's source: changed code is another agent
    assert details.prompt is None and details.content is None  # it read no prompt and returned a dict
    assert [run.status for run in _runs(repo, thread)] == ["ok"] * 5
    assert all(run.agent == "solver" for run in _runs(repo, thread))


def test_an_async_function_and_a_function_given_directly(repo):
    thread = _thread(repo)
    first = perform_step(repo, thread, StepOptions(agent=_fn("solve_async")))
    assert first.agent == f"{FIXTURE}:solve_async" and first.role == "planner"
    repo.agents.register("decorated")(_fn("solve"))
    second = perform_step(repo, thread, StepOptions(agent="decorated"))
    assert second.role == "developer" and step_details(repo, second.head).output["summary"] == "s"


def test_the_context_holds_the_task_the_steps_and_the_prompt_when_asked(repo):
    seen: list[PythonContext] = []

    def look(ctx: PythonContext):
        seen.append(ctx)
        if ctx.role == "developer":
            assert "## Task" in ctx.prompt  # read: then stored with the step
        return _fn("solve")(ctx)

    repo.agents.register("look", look)
    thread = _thread(repo)
    perform_step(repo, thread, StepOptions(agent="look"))
    result = perform_step(repo, thread, StepOptions(agent="look"))
    ctx = seen[-1]
    assert ctx.task == "Fix the login bug" and ctx.role == "developer" and ctx.workflow_name == "solve-issue"
    assert ctx.workflow == result.workflow  # the hash, as everywhere in the API
    assert [step.role for step in ctx.steps] == ["planner"] and ctx.last_output == {"plan": "p", "steps": ["s"]}
    assert ctx.last is not None and ctx.last.role == "planner" and ctx.last.output == ctx.last_output == ctx.steps[-1].output
    assert ctx.output_of("planner") == ctx.last_output and ctx.output_of("reviewer") is None
    assert ctx.schema["required"] == ["filesChanged", "summary"]
    assert os.path.isdir(ctx.workspace) and ctx.deadline is None and ctx.time_left() is None
    details = step_details(repo, result.head)
    assert details.prompt is not None and "Fix the login bug" in details.prompt


def test_a_function_that_raises_fails_the_attempt_with_its_exception(repo):
    repo.agents.register("raises", _fn("raises"))
    thread = _thread(repo)
    head = repo.threads.heads()[thread]
    with pytest.raises(StepError) as caught:
        perform_step(repo, thread, StepOptions(agent="raises"))
    assert caught.value.message == "python agent 'raises' raised ValueError: no plan for planner"
    assert repo.threads.heads()[thread] == head
    run = _runs(repo, thread)[-1]
    assert run.status == "failed" and "raised ValueError" in run.error
    assert "Traceback" in run.stderr and "python_agents_fixture.py" in run.stderr  # the traceback, kept with the attempt
    assert isinstance(caught.value.cause, ValueError) and caught.value.__cause__ is caught.value.cause  # the exception itself


def test_the_exception_a_function_raised_can_be_caught_by_its_type(repo):
    def looks_up(ctx):
        return {"plan": {}["missing"], "steps": []}

    repo.agents.register("looks-up", looks_up)
    thread = _thread(repo)
    try:
        perform_step(repo, thread, StepOptions(agent="looks-up"))
    except StepError as exc:
        assert isinstance(exc.cause, KeyError) and exc.cause.args == ("missing",)
    else:
        raise AssertionError("the step did not fail")


def test_a_synchronous_overrun_is_a_timeout_at_the_deadline_and_its_answer_is_dropped(repo, monkeypatch):
    monkeypatch.setenv("UWF_TEST_SLEEP", "4")
    repo.agents.register("sleeps", _fn("sleeps"))
    thread = _thread(repo)
    head = repo.threads.heads()[thread]
    started = time.monotonic()
    with pytest.raises(StepError) as caught:
        perform_step(repo, thread, StepOptions(agent="sleeps", timeout=0.5))
    took = time.monotonic() - started
    assert took < 3, f"the step waited {took:.1f}s for a function whose deadline was 0.5s"  # a hard deadline, not the function's 4 s
    assert caught.value.status == "timeout" and caught.value.message.startswith("python agent 'sleeps' timed out after 0.5s; uwf stopped waiting")
    assert repo.threads.heads()[thread] == head and _runs(repo, thread)[-1].status == "timeout"


def test_a_cooperative_function_stops_at_its_deadline(repo):
    repo.agents.register("checks", _fn("checks"))
    thread = _thread(repo)
    started = time.monotonic()
    with pytest.raises(StepError) as caught:
        perform_step(repo, thread, StepOptions(agent="checks", timeout=0.4))
    assert caught.value.status == "timeout" and time.monotonic() - started < 3
    assert caught.value.message == "python agent 'checks' timed out after 0.4s; it stopped at ctx.check()"


def test_an_async_function_is_cancelled_at_the_deadline(repo):
    repo.agents.register("slow", _fn("sleeps_async"))
    thread = _thread(repo)
    started = time.monotonic()
    with pytest.raises(StepError) as caught:
        perform_step(repo, thread, StepOptions(agent="slow", timeout=0.3))
    assert caught.value.status == "timeout" and caught.value.message == "python agent 'slow' timed out after 0.3s; the async function was cancelled at the deadline"
    assert time.monotonic() - started < 5


def test_an_isolated_function_is_killed_at_the_deadline(repo, monkeypatch):
    # 4 s: on a loaded machine the sandbox's start-up took over 1 s once, and the step's time ran out
    # before the child was spawned (a timeout too, but not the kill this test is about)
    monkeypatch.setenv("UWF_TEST_SLEEP", "60")
    repo.agents.register("sleeps", _fn("sleeps"), isolate=True)
    thread = _thread(repo)
    started = time.monotonic()
    with pytest.raises(StepError) as caught:
        perform_step(repo, thread, StepOptions(agent="sleeps", timeout=4))
    assert caught.value.status == "timeout" and "process group was killed" in caught.value.message
    assert time.monotonic() - started < 30


def test_an_isolated_function_runs_in_a_process_of_its_own(repo):
    repo.agents.register("pid", _fn("pid"), isolate=True)
    thread = _thread(repo)
    result = perform_step(repo, thread, StepOptions(agent="pid"))
    details = step_details(repo, result.head)
    assert details.output["plan"] != str(os.getpid())
    assert details.detail["call"] == "process"


def test_an_isolated_function_that_raises(repo):
    repo.agents.register("raises", _fn("raises"), isolate=True)
    thread = _thread(repo)
    with pytest.raises(StepError) as caught:
        perform_step(repo, thread, StepOptions(agent="raises"))
    assert caught.value.message == "python agent 'raises' raised ValueError: no plan for planner"
    assert "Traceback" in _runs(repo, thread)[-1].stderr


def test_isolate_needs_an_importable_function(repo):
    with pytest.raises(UwfError, match="isolate needs a function a child process can import"):
        repo.agents.register("local", lambda ctx: {}, isolate=True)


def test_an_output_that_breaks_the_schema_is_corrected_like_a_text_agents(repo):
    repo.agents.register("fixes", _fn("wrong_then_right"))
    thread = _thread(repo)
    result = perform_step(repo, thread, StepOptions(agent="fixes"))
    details = step_details(repo, result.head)
    assert details.output == {"plan": "p", "steps": ["s"]} and details.detail["corrections"] == 1


def test_an_output_that_stays_wrong_fails_after_two_corrections(repo):
    calls = []

    def wrong(ctx):
        calls.append(ctx.correction)
        return {"plan": 3 + len(calls)}  # wrong, and differently each time

    repo.agents.register("wrong", wrong)
    thread = _thread(repo)
    with pytest.raises(StepError) as caught:
        perform_step(repo, thread, StepOptions(agent="wrong"))
    assert "does not match the role's schema" in caught.value.message and "; after 2 corrections" in caught.value.message
    assert calls[0] is None and len(calls) == 3
    first = calls[1]  # a value, not a text agent's words about frontmatter
    assert first.output == {"plan": 4} and any("plan" in error for error in first.errors) and "frontmatter" not in str(first)
    assert "does not match the role's schema" in first.message


def test_a_function_that_returns_the_same_wrong_output_is_not_asked_a_third_time(repo):
    calls = []

    def wrong(ctx):
        calls.append(ctx.correction)
        return _fn("always_wrong")(ctx)

    repo.agents.register("wrong", wrong)
    thread = _thread(repo)
    with pytest.raises(StepError) as caught:
        perform_step(repo, thread, StepOptions(agent="wrong"))
    assert "the same output again after a correction" in caught.value.message and len(calls) == 2


def test_a_text_answer_is_extracted(repo):
    repo.agents.register("texts", _fn("text_answer"))
    thread = _thread(repo)
    result = perform_step(repo, thread, StepOptions(agent="texts"))
    details = step_details(repo, result.head)
    assert details.output == {"plan": "from text", "steps": ["one", "two"]}
    assert details.detail["extract"] == "frontmatter" and "The plan, in words." in details.content


def test_unserializable_output_and_none_are_one_line_errors(repo):
    repo.agents.register("sets", lambda ctx: {"plan": "p", "steps": {1, 2}})
    repo.agents.register("nothing", lambda ctx: None)
    thread = _thread(repo)
    with pytest.raises(StepError, match=r"returned its output with a set at \$\.steps, which JSON cannot hold"):
        perform_step(repo, thread, StepOptions(agent="sets"))
    with pytest.raises(StepError, match="returned None"):
        perform_step(repo, thread, StepOptions(agent="nothing"))


def test_reuse_of_a_python_step_and_changed_code_is_not_reused(repo):
    calls = []

    def counted(ctx):
        calls.append(ctx.role)
        return _fn("solve")(ctx)

    repo.agents.register("counted", counted, reuse=True)
    first, second = _thread(repo), _thread(repo)
    perform_step(repo, first, StepOptions(agent="counted"))
    result = perform_step(repo, second, StepOptions(agent="counted"))
    assert calls == ["planner"] and result.reused_from is not None


def test_a_key_the_function_returns_is_redacted(repo, root_dir):
    (root_dir / ".env").write_text("UWF_TEST_KEY=sk-test-abcdef0123456789\n")
    repo.reload_config()
    repo.agents.register("leaks", _fn("leaks"), secrets=["UWF_TEST_KEY"])
    thread = _thread(repo)
    result = perform_step(repo, thread, StepOptions(agent="leaks"))
    details = step_details(repo, result.head)
    assert "sk-test-abcdef0123456789" not in json.dumps([details.output, details.detail])
    assert details.output["plan"].startswith("use ") and details.detail["usage"] == {"promptTokens": 3, "completionTokens": 2}
    from uwf_core.api import thread_cost

    ledger = thread_cost(repo, thread)  # what it said it spent is in the cost ledger, under its model
    assert ledger.total.tokens == 5 and ledger.total.unrecorded == 0 and list(ledger.by_model) == ["m1"]


def test_a_function_gets_only_the_keys_its_entry_names(repo, root_dir):
    (root_dir / ".env").write_text("UWF_TEST_KEY=sk-test-abcdef0123456789\nOTHER_KEY=sk-other-0123456789abcdef\n")
    repo.reload_config()
    seen = []
    repo.agents.register("named", lambda ctx: seen.append(dict(ctx.secrets)) or {"plan": "p", "steps": []}, secrets=["UWF_TEST_KEY"])
    perform_step(repo, _thread(repo), StepOptions(agent="named"))
    assert seen == [{"UWF_TEST_KEY": "sk-test-abcdef0123456789"}]


def test_what_a_function_prints_is_the_steps_output_not_stdout(repo, capsys):
    repo.agents.register("prints", _fn("prints"))
    lines = []
    perform_step(repo, _thread(repo), StepOptions(agent="prints", on_output=lines.append))
    assert lines == ["hello from planner"]
    assert "hello" not in capsys.readouterr().out


def test_a_function_that_writes_its_own_step(repo):
    from uwf_core.api import AgentAnswer, WrittenStep, complete_step, load_agent_context

    def full(ctx):
        kit = load_agent_context(ctx.repo, ctx.thread, ctx.role)
        text = "---\nplan: mine\nsteps: [a]\n---\n"
        return WrittenStep(complete_step(kit, AgentAnswer(text), agent_label="full", started_ms=0))

    repo.agents.register("full", full)
    thread = _thread(repo)
    result = perform_step(repo, thread, StepOptions(agent="full"))
    assert repo.threads.heads()[thread] == result.head
    assert step_details(repo, result.head).output == {"plan": "mine", "steps": ["a"]}


def test_a_written_step_that_does_not_continue_the_head_is_refused(repo):
    from uwf_core.api import WrittenStep

    repo.agents.register("liar", lambda ctx: WrittenStep(ctx.context.start_hash))
    thread = _thread(repo)
    with pytest.raises(UwfError, match="not a StepNode"):
        perform_step(repo, thread, StepOptions(agent="liar"))


def test_a_worker_started_from_python_steps_with_registered_functions(repo):
    from uwf_core.api import Worker, queue_thread, thread_info

    repo.agents.register("solver", _fn("solve"))
    threads = []
    for _ in range(2):
        thread = start_thread(repo, "solve-issue", "task", agents={"planner": "solver", "developer": "solver", "reviewer": "solver"}).thread
        queue_thread(repo, thread)
        threads.append(thread)
    Worker(repo, "in-python", lanes=2, once=True).run()
    assert all(thread_info(repo, thread).reason == "done" for thread in threads)
    assert {run.agent for thread in threads for run in _runs(repo, thread)} == {"solver"}


def test_another_function_under_the_same_name_is_not_reused(repo):
    repo.agents.register("counted", _fn("solve"), reuse=True)
    perform_step(repo, _thread(repo), StepOptions(agent="counted"))
    repo.agents.register("counted", _fn("solve_async"), reuse=True, replace=True)  # new code, same name
    result = perform_step(repo, _thread(repo), StepOptions(agent="counted"))
    assert result.reused_from is None


def test_the_quickstart_example_runs_to_its_end(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(EXAMPLES / "python" / "quickstart.py"), str(tmp_path / "root")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "done: True (done)" in done.stdout and "(revised: make it shorter)" in done.stdout


def test_a_function_that_changes_what_it_was_given_changes_nothing_of_uwfs(repo):
    def meddle(ctx):
        if ctx.role == "developer":
            ctx.last_output["plan"] = "changed"  # its own copy
            ctx.last.output["plan"] = "changed too"
            ctx.schema["required"] = []
            return {"filesChanged": [], "summary": ctx.output_of("planner")["plan"]}
        return _fn("solve")(ctx)

    repo.agents.register("meddle", meddle)
    thread = _thread(repo)
    perform_step(repo, thread, StepOptions(agent="meddle"))
    result = perform_step(repo, thread, StepOptions(agent="meddle"))
    assert step_details(repo, result.head).output["summary"] == "p"
    from uwf_core.api import thread_steps

    assert thread_steps(repo, thread)[0].output == {"plan": "p", "steps": ["s"]}
    with pytest.raises(StepError, match="does not match the role's schema"):
        repo.agents.register("meddle2", lambda ctx: {"approved": True})  # no comments: still required
        perform_step(repo, thread, StepOptions(agent="meddle2"))


def test_sys_exit_in_a_function_fails_its_attempt_not_uwf(repo):
    import sys

    repo.agents.register("exits", lambda ctx: sys.exit(3))
    thread = _thread(repo)
    with pytest.raises(StepError, match="raised SystemExit: 3"):
        perform_step(repo, thread, StepOptions(agent="exits"))
    assert _runs(repo, thread)[-1].status == "failed"


def test_cancel_stops_an_async_function_and_a_checking_one(repo):
    import threading

    from uwf_core.api import Cancel

    repo.agents.register("slow", _fn("sleeps_async"))
    repo.agents.register("checks", _fn("checks"))
    for agent in ("slow", "checks"):
        thread = _thread(repo)
        cancel = Cancel()
        threading.Timer(0.3, cancel.set).start()
        started = time.monotonic()
        with pytest.raises(StepError) as caught:
            perform_step(repo, thread, StepOptions(agent=agent, cancel=cancel))
        assert caught.value.status == "killed" and time.monotonic() - started < 5, caught.value.message
        assert _runs(repo, thread)[-1].status == "killed"


def test_thread_kill_from_elsewhere_stops_a_checking_function(repo):
    import threading

    from uwf_core.api import kill_thread

    repo.agents.register("checks", _fn("checks"))
    thread = _thread(repo)
    other = Repo.open(repo.location)  # as another process would
    threading.Timer(0.3, lambda: kill_thread(other, thread)).start()
    with pytest.raises(StepError) as caught:
        perform_step(repo, thread, StepOptions(agent="checks", timeout=20))
    assert caught.value.status == "killed" and "was killed" in caught.value.message, caught.value.message


def test_what_a_function_writes_to_descriptor_1_is_the_steps_output(repo, capfd):
    import subprocess
    import sys

    def runs_a_program(ctx):
        subprocess.run([sys.executable, "-c", "print('from a child process')"], check=True)
        os.write(1, b"written to fd 1\n")
        return _fn("solve")(ctx)

    repo.agents.register("programs", runs_a_program)
    lines = []
    perform_step(repo, _thread(repo), StepOptions(agent="programs", on_output=lines.append))
    assert "from a child process" in lines and "written to fd 1" in lines
    assert "from a child process" not in capfd.readouterr().out


def test_a_changed_module_is_imported_again_and_its_new_hash_recorded(repo, tmp_path):
    from uwf_core.api import Config
    from uwf_core.config.model import AgentConfig

    module = tmp_path / "edited_agent.py"
    module.write_text("def plan(ctx):\n    return {'plan': 'one', 'steps': []}\n")
    repo.save_config(Config(agents={"edited": AgentConfig("edited", "", (), "python", python=f"{module}:plan")}))
    first = perform_step(repo, _thread(repo), StepOptions(agent="edited"))
    module.write_text("def plan(ctx):\n    return {'plan': 'two', 'steps': []}\n\ndef later(ctx):\n    return {}\n")
    os.utime(module, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    second = perform_step(repo, _thread(repo), StepOptions(agent="edited"))
    one, two = step_details(repo, first.head), step_details(repo, second.head)
    assert (one.output["plan"], two.output["plan"]) == ("one", "two")
    assert one.detail["source"] != two.detail["source"]


def test_an_isolated_function_does_not_import_from_the_workspace(repo, tmp_path):
    workspace = tmp_path / "ws"
    (workspace / "uwf_core").mkdir(parents=True)
    (workspace / "uwf_core" / "__init__.py").write_text("raise SystemExit('SHADOWED uwf_core')\n")
    (workspace / "json.py").write_text("raise ImportError('SHADOWED json')\n")
    repo.agents.register("solve", _fn("solve"), isolate=True)
    thread = start_thread(repo, "solve-issue", "task", str(workspace)).thread
    result = perform_step(repo, thread, StepOptions(agent="solve"))
    assert step_details(repo, result.head).output == {"plan": "p", "steps": ["s"]}


@pytest.mark.parametrize("usage", [
    {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    {"input_tokens": 10, "output_tokens": 5},
    {"promptTokens": 10, "completionTokens": 5},
])
def test_a_functions_token_counts_reach_the_ledger_by_any_common_name(repo, usage):
    from uwf_core.api import PythonAnswer, thread_cost

    repo.agents.register("counts", lambda ctx: PythonAnswer({"plan": "p", "steps": []}, detail={"model": "m", "usage": usage}))
    thread = _thread(repo)
    perform_step(repo, thread, StepOptions(agent="counts"))
    assert thread_cost(repo, thread).total.tokens == 15


def test_token_counts_uwf_cannot_read_are_an_error(repo):
    from uwf_core.api import PythonAnswer

    repo.agents.register("counts", lambda ctx: PythonAnswer({"plan": "p", "steps": []}, detail={"usage": {"tokens": 3}}))
    with pytest.raises(StepError, match="usage has no token counts uwf reads"):
        perform_step(repo, _thread(repo), StepOptions(agent="counts"))


def test_an_isolated_function_says_its_errors_as_an_in_process_one(repo, monkeypatch):
    monkeypatch.setenv("UWF_TEST_SLEEP", "30")
    repo.agents.register("sets", _fn("returns_a_set"), isolate=True)
    repo.agents.register("sleeps", _fn("sleeps"), isolate=True)
    thread = _thread(repo)
    with pytest.raises(StepError, match=r"^python agent 'sets' returned its output with a set at \$\.steps, which JSON cannot hold$"):
        perform_step(repo, thread, StepOptions(agent="sets"))
    with pytest.raises(StepError, match=r"^python agent 'sleeps' timed out after 3s"):  # 3 s: the sandbox's start-up fits under load
        perform_step(repo, thread, StepOptions(agent="sleeps", timeout=3))
    from uwf_core.api import Config
    from uwf_core.config.model import AgentConfig

    missing = f"{FIXTURE}:no_such_function"
    repo.save_config(Config(agents={name: AgentConfig(name, "", (), "python", python=missing, isolate=isolate)
                                    for name, isolate in (("here", False), ("boxed", True))}))
    said = {}
    for name in ("here", "boxed"):
        with pytest.raises(StepError) as caught:
            perform_step(repo, thread, StepOptions(agent=name))
        said[name] = caught.value.message.replace(f"'{name}'", "'X'")
    assert said["here"] == said["boxed"] == f"python agent 'X' ({missing}): {FIXTURE} has no 'no_such_function'"


def test_an_isolated_entrys_module_never_runs_in_uwfs_process(repo, tmp_path, monkeypatch):
    from uwf_core.api import Config, dry_run
    from uwf_core.config.model import AgentConfig

    module = tmp_path / "guarded_agent.py"
    module.write_text(
        "import os\n"
        "if os.getpid() == int(os.environ['UWF_TEST_PARENT']):\n"
        "    raise RuntimeError('imported in uwf\\'s own process')\n"
        "def plan(ctx):\n"
        "    return {'plan': str(os.getpid()), 'steps': []}\n"
    )
    monkeypatch.setenv("UWF_TEST_PARENT", str(os.getpid()))
    entry = AgentConfig("guarded", "", (), "python", python=f"{module}:plan", isolate=True)
    repo.save_config(Config(agents={"guarded": entry}))
    thread = _thread(repo)
    assert dry_run(repo, thread, agent="guarded").agent_error is None
    result = perform_step(repo, thread, StepOptions(agent="guarded"))
    details = step_details(repo, result.head)
    assert details.output["plan"] != str(os.getpid()) and len(details.detail["source"]) == 13


def test_a_text_agent_after_python_steps_gets_their_history_and_stores_it_by_reference(repo):
    """Python steps leave their history entries to the first prompt that shows them; that prompt
    rebuilds them and is stored in parts, its history one reference, as after any step."""
    from uwf_core.api import Config
    from uwf_core.config.model import AgentConfig
    from uwf_core.store.builtin_schemas import PROMPT_HASH

    answer = json.dumps({"approved": True, "comments": "ok"})
    repo.save_config(Config(agents={"text": AgentConfig("text", "sh", ("-c", f"cat >/dev/null; echo '{answer}'"), "text", sandbox=False)}))
    repo.agents.register("solver", _fn("solve"))
    thread = _thread(repo)
    perform_step(repo, thread, StepOptions(agent="solver"))
    perform_step(repo, thread, StepOptions(agent="solver"))
    result = perform_step(repo, thread, StepOptions(agent="text"))
    details = step_details(repo, result.head)
    assert "### Step 1: planner (agent: solver)" in details.prompt and "### Step 2: developer (agent: solver)" in details.prompt
    assert repo.nodes.get(details.detail["prompt"]).type == PROMPT_HASH


def test_an_isolated_function_stores_a_prompt_only_when_it_read_one(repo):
    repo.agents.register("quiet", _fn("solve"), isolate=True)
    repo.agents.register("reader", _fn("reads_prompt"), isolate=True)
    thread = _thread(repo)
    first = perform_step(repo, thread, StepOptions(agent="quiet"))
    second = perform_step(repo, thread, StepOptions(agent="reader"))
    assert step_details(repo, first.head).prompt is None
    assert "Fix the login bug" in step_details(repo, second.head).prompt


def test_what_the_store_cannot_hold_is_corrected_as_for_an_extracted_answer(repo):
    repo.agents.register("nan", lambda ctx: {"plan": "p", "steps": [], "x": float("nan")})
    repo.agents.register("big", lambda ctx: {"plan": "p", "steps": [], "x": 2**70})
    thread = _thread(repo)
    with pytest.raises(StepError, match="field 'x' is nan, which JSON cannot carry"):
        perform_step(repo, thread, StepOptions(agent="nan"))
    with pytest.raises(StepError, match="more than 64 bits hold"):
        perform_step(repo, thread, StepOptions(agent="big"))
    assert [run.status for run in _runs(repo, thread)] == ["failed", "failed"]
