"""The seeds' supervisor and summarizer, through the real CLI against the tests' own
OpenAI-compatible server (real HTTP on 127.0.0.1): continue, kill with a reason, an LLM error,
intervals of 1, 2 and 5, a summary in the archive record, and the checks as nodes of the thread."""

from __future__ import annotations

import json

import pytest
from conftest import EXAMPLES
from fake_openai import FakeOpenAI, reply

from uwf_core.config.model import Config
from uwf_core.repo import Repo

SOLVE_AGENT = "uwf-script --script examples/solve-issue.script.yaml"
SOLVE_ROLES = ["planner", "developer", "reviewer", "developer", "reviewer"]
KEY = "sk-test-SUPERVISOR-0123456789"


def decision(value: str, reason: str, tokens: int = 10) -> dict:
    return reply(json.dumps({"decision": value, "reason": reason}), prompt_tokens=tokens, completion_tokens=3)


@pytest.fixture
def srv():
    with FakeOpenAI() as server:
        yield server


def _setup(uwf, root_dir, tmp_path, srv, *, interval: int | None, summarizer: bool = False) -> str:
    """solve-issue with `supervisorInterval` (None: not set), its scripted agent, the fake model;
    the summarizer named (`summarizer`), or off."""
    summary = ["--summarizer-model", "fake-model"] if summarizer else ["--summarizer", "off"]
    setup = uwf("setup", "--provider", "fake", "--base-url", srv.base_url, "--api-key", KEY, "--model", "fake-model", *summary)
    assert setup.code == 0, setup
    text = (EXAMPLES / "solve-issue.yaml").read_text(encoding="utf-8")
    if interval is not None:
        text = text.replace("maxSteps:", f"supervisorInterval: {interval}\nmaxSteps:", 1)
        assert f"supervisorInterval: {interval}" in text
    path = tmp_path / "solve-issue.yaml"
    path.write_text(text, encoding="utf-8")
    assert uwf("workflow", "put", str(path)).code == 0
    return uwf("thread", "start", "solve-issue", "-p", "Fix the login form").json()["thread"]


def _roles(uwf, thread: str) -> list[str]:
    return [step["role"] for step in uwf("thread", "steps", thread).json()]


def test_a_supervisor_every_step_that_says_continue_checks_after_each(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=1)
    srv.add(*[decision("continue", f"progress {i}") for i in range(4)])
    run = uwf("thread", "run", thread, "--agent", SOLVE_AGENT)
    assert run.code == 0 and "Traceback" not in run.err, run
    roles = _roles(uwf, thread)
    # after each step but the one that finishes the thread: nothing is left to supervise
    assert roles == [role for pair in zip(SOLVE_ROLES, ["$supervisor"] * 4) for role in pair] + ["reviewer"]
    assert len(srv.requests) == 4
    # the supervisor read the task and the step it follows; the key went nowhere
    first = srv.requests[0]["body"]["messages"][1]["content"]
    assert "Fix the login form" in first and "Step 1: planner" in first
    assert all(KEY not in json.dumps(request["body"]) for request in srv.requests)
    steps = uwf("thread", "steps", thread).json()
    assert steps[1]["output"] == {"decision": "continue", "reason": "progress 0"}
    assert steps[1]["agent"] == "uwf-supervisor"
    shown = uwf("thread", "show", thread).json()
    assert shown["done"] is True and shown["reason"] == "done"
    assert shown["steps"] == 5 and shown["checks"] == 4  # a step number means what routing counts
    assert shown["usage"]["requests"] == 4 and shown["usage"]["totalTokens"] == 4 * 13  # the checks' tokens count
    read = uwf("thread", "read", thread)
    assert read.code == 0 and "progress 3" in read.out
    assert "5 steps and 4 checks" in read.out
    assert "## 2. developer" in read.out and "## After step 2: $supervisor — uwf-supervisor" in read.out


# solve-issue takes 5 steps, the 5th finishing it: no check after that one
@pytest.mark.parametrize("interval,checked_after", [(2, [2, 4]), (4, [4]), (5, [])])
def test_the_supervisor_runs_every_interval_steps(uwf, root_dir, tmp_path, srv, interval, checked_after):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=interval)
    srv.add(*[decision("continue", "fine") for _ in checked_after])
    assert uwf("thread", "run", thread, "--agent", SOLVE_AGENT).code == 0
    roles = _roles(uwf, thread)
    assert [i for i, role in enumerate([r for r in roles if True]) if role == "$supervisor"] == [
        n + k for k, n in enumerate(checked_after)
    ]
    assert [role for role in roles if role != "$supervisor"] == SOLVE_ROLES  # routing never sees the checks
    assert len(srv.requests) == len(checked_after)


def test_kill_ends_the_thread_with_return_code_1_and_the_reason(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=2)
    srv.add(decision("kill", "the developer repeats the same change"))
    first = uwf("thread", "step", thread, "--agent", SOLVE_AGENT)
    assert first.code == 0 and not srv.requests
    second = uwf("thread", "step", thread, "--agent", SOLVE_AGENT)
    assert second.code == 1, second
    assert f"thread {thread} killed by the supervisor: the developer repeats the same change" in second.err
    assert "Traceback" not in second.err
    result = second.json()
    assert result["done"] is True and result["reason"] == "killed" and result["killedBy"].endswith("the same change")
    assert _roles(uwf, thread) == ["planner", "developer", "$supervisor"]
    shown = uwf("thread", "show", thread).json()
    assert shown["reason"] == "killed" and shown["summary"] == "killed by the supervisor: the developer repeats the same change"
    assert shown["head"] == result["head"]
    archived = [json.loads(line) for line in (root_dir / "history.jsonl").read_text().splitlines()]
    assert archived[-1]["summary"] == shown["summary"] and archived[-1]["reason"] == "killed"
    assert uwf("thread", "step", thread, "--agent", SOLVE_AGENT).code == 1  # it stays ended


def test_a_failed_check_leaves_the_step_standing_and_is_asked_again_once(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=1)
    srv.add({"status": 401, "body": {"error": {"message": "bad key"}}})
    first = uwf("thread", "step", thread, "--agent", SOLVE_AGENT)
    assert first.code == 0, first  # the step stands
    warnings = [line for line in first.err.splitlines() if "supervisor" in line]
    assert len(warnings) == 1 and warnings[0].startswith("uwf: warning: the supervisor could not be asked: ")
    assert warnings[0].endswith("the supervisor is asked again before the next step")
    assert _roles(uwf, thread) == ["planner"]
    # asked again first; failing again, the step goes on without that check
    srv.add({"status": 401, "body": {"error": {"message": "bad key"}}}, decision("continue", "after the developer"))
    second = uwf("thread", "step", thread, "--agent", SOLVE_AGENT)
    assert second.code == 0, second
    assert "the supervisor could not be asked" in second.err and "the step goes on without this check" in second.err
    assert _roles(uwf, thread) == ["planner", "developer", "$supervisor"]
    runs = uwf("thread", "runs", thread).json()
    assert sorted((run["role"], run["status"]) for run in runs) == [
        ("$supervisor", "failed"), ("$supervisor", "failed"), ("$supervisor", "ok"), ("developer", "ok"), ("planner", "ok")
    ]


def test_a_check_asked_again_that_answers_lands_before_the_step(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=1)
    srv.add({"status": 401, "body": {"error": {"message": "bad key"}}})
    assert uwf("thread", "step", thread, "--agent", SOLVE_AGENT).code == 0
    srv.add(decision("continue", "late but fine"), decision("continue", "still fine"))
    assert uwf("thread", "step", thread, "--agent", SOLVE_AGENT).code == 0
    steps = uwf("thread", "steps", thread).json()
    assert [s["role"] for s in steps] == ["planner", "$supervisor", "developer", "$supervisor"]
    assert steps[1]["output"]["reason"] == "late but fine"


def test_a_supervisor_answer_that_is_not_a_decision_is_a_failed_check(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=1)
    srv.add(reply("I think it is going fine!"))
    step = uwf("thread", "step", thread, "--agent", SOLVE_AGENT)
    assert step.code == 0
    assert "the supervisor answered 'I think it is going fine!', not {\"decision\"" in step.err
    assert _roles(uwf, thread) == ["planner"]


def test_no_interval_means_no_supervisor(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=None)
    assert uwf("thread", "run", thread, "--agent", SOLVE_AGENT).code == 0
    assert _roles(uwf, thread) == SOLVE_ROLES and not srv.requests


def test_config_gives_the_interval_when_the_workflow_does_not(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=None)
    repo = Repo.open(str(root_dir))
    repo.save_config(Config(**{**repo.config.__dict__, "supervisor_interval": 3}))
    assert "supervisorInterval: 3" in (root_dir / "config.yaml").read_text()
    srv.add(decision("continue", "fine"))
    assert uwf("thread", "run", thread, "--agent", SOLVE_AGENT).code == 0
    assert _roles(uwf, thread) == ["planner", "developer", "reviewer", "$supervisor", "developer", "reviewer"]


def test_the_summarizer_writes_one_summary_into_the_archive_record(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=None, summarizer=True)
    srv.add(reply("The planner split the fix; the reviewer approved the second attempt."))
    run = uwf("thread", "run", thread, "--agent", SOLVE_AGENT)
    assert run.code == 0, run
    assert _roles(uwf, thread) == [*SOLVE_ROLES, "$summary"]
    asked = srv.requests[0]["body"]["messages"][1]["content"]
    assert all(f"Step {n}: {role}" in asked for n, role in enumerate(SOLVE_ROLES, 1))
    shown = uwf("thread", "show", thread).json()
    assert shown["summary"] == "The planner split the fix; the reviewer approved the second attempt."
    assert shown["reason"] == "done"
    steps = uwf("thread", "steps", thread).json()
    assert steps[-1]["output"] == {"summary": shown["summary"]} and steps[-1]["hash"] == shown["head"]
    cost = uwf("thread", "cost", thread)
    assert cost.code == 0 and "$summary" in cost.out


RAW_SUMMARY = '{"approved": true, "comments": "Whitespace is trimmed and the three cases are tested. Approved."}'


def test_a_summarizer_that_fails_keeps_the_raw_summary_and_records_the_failure(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=None, summarizer=True)
    srv.add({"status": 404, "body": {"error": {"message": "no such model"}}})
    run = uwf("thread", "run", thread, "--agent", SOLVE_AGENT)
    assert run.code == 0, run
    assert "uwf: warning: the summarizer could not be asked" in run.err and "archived with its raw summary (from its last output)" in run.err
    shown = uwf("thread", "show", thread).json()
    assert shown["done"] is True and shown["summary"] == RAW_SUMMARY  # the reviewer's output: it has no `summary` of its own
    assert _roles(uwf, thread) == SOLVE_ROLES
    failed = uwf("thread", "runs", thread).json()[-1]
    assert failed["role"] == "$summary" and failed["status"] == "failed" and "no such model" in failed["error"]


def test_the_summarizer_is_on_by_default_with_the_extraction_model(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=None)
    assert uwf("setup", "--summarizer", "on").code == 0
    assert "summarizer" not in (root_dir / "config.yaml").read_text()  # on is the default: nothing written
    srv.add(reply("Fixed in two rounds."))
    assert uwf("thread", "run", thread, "--agent", SOLVE_AGENT).code == 0
    assert [request["body"]["model"] for request in srv.requests] == ["fake-model"]  # defaultModel, as extraction takes it
    assert uwf("thread", "show", thread).json()["summary"] == "Fixed in two rounds."
    assert _roles(uwf, thread) == [*SOLVE_ROLES, "$summary"]


def test_off_or_without_any_model_a_finished_thread_keeps_its_raw_summary(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=None)
    assert "\nsummarizer: false\n" in (root_dir / "config.yaml").read_text()
    run = uwf("thread", "run", thread, "--agent", SOLVE_AGENT)
    assert run.code == 0 and "warning" not in run.err and not srv.requests
    assert uwf("thread", "show", thread).json()["summary"] == RAW_SUMMARY
    (root_dir / "config.yaml").write_text("")  # no model at all (the offline demo): nothing to ask, nothing said
    again = uwf("thread", "start", "solve-issue", "-p", "again").json()["thread"]
    run = uwf("thread", "run", again, "--agent", SOLVE_AGENT)
    assert run.code == 0 and "warning" not in run.err and uwf("thread", "show", again).json()["summary"] == RAW_SUMMARY


def test_a_fork_and_a_resume_route_past_the_checks(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=1)
    srv.add(*[decision("continue", "fine") for _ in range(2)])
    assert uwf("thread", "run", thread, "--agent", SOLVE_AGENT, "--max", "2").code == 0
    steps = uwf("thread", "steps", thread).json()
    assert [s["role"] for s in steps] == ["planner", "$supervisor", "developer", "$supervisor"]
    fork = uwf("thread", "fork", steps[-1]["hash"]).json()["thread"]  # from the check itself
    dry = uwf("thread", "dry-run", fork, "--agent", SOLVE_AGENT)
    assert dry.code == 0 and dry.json()["role"] == "reviewer", dry


def test_a_worker_runs_the_checks_too(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=2, summarizer=True)
    repo = Repo.open(str(root_dir))
    repo.save_config(Config(**{**repo.config.__dict__, "default_agent": SOLVE_AGENT}))
    srv.add(decision("continue", "a"), decision("continue", "b"), reply("All done."))
    assert uwf("thread", "run", thread, "--detach").code == 0
    worker = uwf("worker", "--once", timeout=120)
    assert worker.code == 0, worker
    assert _roles(uwf, thread) == ["planner", "developer", "$supervisor", "reviewer", "developer", "$supervisor", "reviewer", "$summary"]
    assert uwf("thread", "show", thread).json()["summary"] == "All done."


def test_the_supervised_example_runs_with_a_model(uwf, srv):
    assert uwf("setup", "--provider", "fake", "--base-url", srv.base_url, "--api-key", KEY, "--model", "fake-model").code == 0
    put = uwf("workflow", "put", str(EXAMPLES / "supervised" / "solve-issue-supervised.yaml"))
    assert put.code == 0 and put.err == "", put
    thread = uwf("thread", "start", "solve-issue-supervised", "-p", "Fix the login form").json()["thread"]
    srv.add(decision("continue", "planned and built"), decision("continue", "revising after review"))
    assert uwf("thread", "run", thread, "--agent", SOLVE_AGENT).code == 0
    roles = _roles(uwf, thread)
    assert roles == ["planner", "developer", "$supervisor", "reviewer", "developer", "$supervisor", "reviewer"]


def test_agent_test_asks_no_supervisor_and_no_summarizer(uwf, root_dir, tmp_path, srv):
    """`uwf agent test` tries the agent alone: checks configured for real threads stay out."""
    _setup(uwf, root_dir, tmp_path, srv, interval=1, summarizer=True)
    script = tmp_path / "check.yaml"
    script.write_text("check:\n  - |\n    ---\n    answer: pong from the script\n    ---\n")
    result = uwf("agent", "test", f"uwf-script --script {script}")
    assert result.code == 0, result
    assert result.json()["answer"] == "pong from the script"
    assert srv.requests == []


def test_a_bundle_keeps_the_summary(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=None, summarizer=True)
    srv.add(reply("Fixed in two rounds."))
    assert uwf("thread", "run", thread, "--agent", SOLVE_AGENT).code == 0
    bundle = tmp_path / "t.tar.gz"
    assert uwf("bundle", "export", thread, "-o", str(bundle)).code == 0
    other = tmp_path / "other"
    imported = uwf("bundle", "import", str(bundle), "--root", str(other))
    assert imported.code == 0, imported
    shown = uwf("thread", "show", thread, "--root", str(other)).json()
    assert shown["summary"] == "Fixed in two rounds." and shown["reason"] == "done"


def test_a_worker_logs_a_failed_check(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=4)
    repo = Repo.open(str(root_dir))
    repo.save_config(Config(**{**repo.config.__dict__, "default_agent": SOLVE_AGENT}))
    srv.add({"status": 401, "body": {"error": {"message": "bad key"}}}, {"status": 401, "body": {"error": {"message": "bad key"}}})
    assert uwf("thread", "run", thread, "--detach").code == 0
    worker = uwf("worker", "--once", timeout=120)
    assert worker.code == 0, worker
    lines = [line for line in worker.err.splitlines() if " warning " in line]
    assert len(lines) == 2 and "the supervisor could not be asked" in lines[0], worker.err
    assert uwf("thread", "show", thread).json()["reason"] == "done"


def test_thread_run_prints_each_node_as_it_lands_in_order(uwf, root_dir, tmp_path, srv):
    """A step's line names its own hash, each check follows on its own line, and a check's warning
    comes after the step it followed."""
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=2, summarizer=True)
    srv.add({"delay": 0.3, "body": decision("continue", "fine")}, {"status": 401, "body": {"error": {"message": "bad key"}}},
            {"status": 401, "body": {"error": {"message": "bad key"}}}, reply("Done in two rounds."))
    run = uwf("thread", "run", thread, "--agent", SOLVE_AGENT)
    assert run.code == 0, run
    lines = [line.removeprefix("uwf: ") for line in run.err.splitlines()]
    steps = uwf("thread", "steps", thread).json()
    landed = [line for line in lines if " -> " in line]
    assert [line.split(" -> ")[1].split()[0] for line in landed] == [step["hash"] for step in steps]
    assert [line.split(" ")[0] for line in landed] == [step["role"] for step in steps]
    assert landed[2].endswith("continue: fine") and landed[-1].endswith("[done]")
    warned = [i for i, line in enumerate(lines) if line.startswith("warning: the supervisor could not be asked")]
    after_4 = lines.index(next(line for line in lines if line.startswith("developer") and steps[4]["hash"] in line))
    assert len(warned) == 2 and warned[0] == after_4 + 1  # the check after step 4, then its second asking
    runs = uwf("thread", "runs", thread).json()
    checks = [r for r in runs if r["role"] == "$supervisor" and r["status"] == "ok"]
    assert checks and checks[0]["durationMs"] >= 300  # timed from its call, as a step is
    assert [r["status"] for r in runs if r["role"] == "$summary"] == ["ok"]
    cost = uwf("thread", "cost", thread)
    assert "5 steps and 2 checks" in cost.out and "\n·" in "\n" + "\n".join(line.strip() for line in cost.out.splitlines())


def test_thread_step_json_names_the_step_and_the_check_that_followed(uwf, root_dir, tmp_path, srv):
    thread = _setup(uwf, root_dir, tmp_path, srv, interval=1)
    srv.add(decision("kill", "off task"))
    result = uwf("thread", "step", thread, "--agent", SOLVE_AGENT)
    assert result.code == 1
    data = result.json()
    steps = uwf("thread", "steps", thread).json()
    assert data["step"] == steps[0]["hash"] and data["head"] == steps[1]["hash"] and data["role"] == "planner"


def test_the_seeds_model_names_choose_the_models(uwf, root_dir, tmp_path, srv):
    """A model alias called `supervisor` / `summarizer` in config.yaml's models is that check's
    model (the seeds' names), over modelOverrides and defaultModel."""
    from uwf_core.config.model import ModelConfig

    thread = _setup(uwf, root_dir, tmp_path, srv, interval=4)
    repo = Repo.open(str(root_dir))
    config = repo.config
    models = {**config.models, "supervisor": ModelConfig("supervisor", "fake", "small-judge"), "summarizer": ModelConfig("summarizer", "fake", "writer")}
    repo.save_config(Config(**{**config.__dict__, "models": models, "summarizer": True}))
    srv.add(decision("continue", "fine"), reply("A summary."))
    assert uwf("thread", "run", thread, "--agent", SOLVE_AGENT).code == 0
    assert [request["body"]["model"] for request in srv.requests] == ["small-judge", "writer"]


def test_on_postgresql_the_archive_keeps_the_summary_and_a_kill(pg_url, tmp_path, srv):
    """Migration 3 (uwf_history.summary): the summary and the supervisor's kill read back."""
    import os
    import subprocess

    from conftest import REPO, _uwf_command

    env = dict(os.environ, UWF_STORAGE_ROOT=pg_url, UWF_ENV_FILE=str(tmp_path / ".env"))

    def uwf(*args):
        done = subprocess.run([*_uwf_command(), *args], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=120)
        assert "Traceback" not in done.stderr, done.stderr
        return done

    setup = uwf("setup", "--provider", "fake", "--base-url", srv.base_url, "--api-key", KEY, "--model", "m", "--summarizer-model", "m")
    assert setup.returncode == 0, setup.stderr
    text = (EXAMPLES / "solve-issue.yaml").read_text().replace("maxSteps:", "supervisorInterval: 4\nmaxSteps:", 1)
    (tmp_path / "wf.yaml").write_text(text)
    assert uwf("workflow", "put", str(tmp_path / "wf.yaml")).returncode == 0
    done = json.loads(uwf("thread", "start", "solve-issue", "-p", "one").stdout)["thread"]
    killed = json.loads(uwf("thread", "start", "solve-issue", "-p", "two").stdout)["thread"]
    srv.add(decision("continue", "fine"), reply("Approved on the second round."), decision("kill", "looping"))
    assert uwf("thread", "run", done, "--agent", SOLVE_AGENT).returncode == 0
    assert uwf("thread", "run", killed, "--agent", SOLVE_AGENT).returncode == 1
    first = json.loads(uwf("thread", "show", done).stdout)
    second = json.loads(uwf("thread", "show", killed).stdout)
    assert first["summary"] == "Approved on the second round." and first["reason"] == "done"
    assert second["summary"] == "killed by the supervisor: looping" and second["reason"] == "killed"
