"""`uwf thread ...` black-box: the real CLI in subprocesses (design §7, §9, §11, §12)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import EXAMPLES, REPO, CliResult, _uwf_command

from uwf_core.encoding.ids import is_hash, is_ulid

SOLVE_AGENT = "uwf-script --script examples/solve-issue.script.yaml"
SOLVE_ROLES = ["planner", "developer", "reviewer", "developer", "reviewer"]
TRIAGE_ROLES = ["triager", "reporter", "triager", "fixer"]
PROMPT = "The login form accepts <empty> passwords & crashes"


def ok(result):
    assert result.code == 0, result
    assert "Traceback" not in result.err, result.err
    return result


def put(uwf, name: str) -> str:
    return ok(uwf("workflow", "put", f"examples/{name}.yaml")).json()["hash"]


def start(uwf, workflow: str, prompt: str = PROMPT, *extra: str) -> dict:
    return ok(uwf("thread", "start", workflow, "-p", prompt, *extra)).json()


def steps_of(uwf, thread: str) -> list[dict]:
    return ok(uwf("thread", "steps", thread)).json()


def one_error_line(result) -> str:
    assert result.code == 1, result
    assert "Traceback" not in result.err, result.err
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("uwf: error: "), result.err
    return lines[0]


def subset(actual: dict, expected: dict) -> None:
    """More keys may be added to CLI output (design §12), none renamed."""
    assert {key: actual.get(key, "<missing>") for key in expected} == expected, actual


@pytest.fixture(scope="module")
def shared_uwf(tmp_path_factory):
    """A `uwf` runner on a root shared by the read-only tests of this module."""
    root_dir = tmp_path_factory.mktemp("shared-root")
    home = tmp_path_factory.mktemp("shared-home")

    def run(*args: str, timeout: float = 60) -> CliResult:
        env = dict(os.environ, UWF_STORAGE_ROOT=str(root_dir), HOME=str(home))
        completed = subprocess.run([*_uwf_command(), *args], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=timeout)
        return CliResult(completed)

    run.root_dir = root_dir
    return run


@pytest.fixture(scope="module")
def solved(shared_uwf):
    """A solve-issue thread run to the end with the scripted agent (read-only for the tests using it)."""
    uwf = shared_uwf
    workflow = put(uwf, "solve-issue")
    started = start(uwf, "solve-issue")
    run = ok(uwf("thread", "run", started["thread"], "--agent", SOLVE_AGENT))
    return {"workflow": workflow, "thread": started["thread"], "start": started["head"], "run": run, "root_dir": uwf.root_dir}


# -- the new-user flow ----------------------------------------------------------------------------


def test_start_prints_workflow_thread_and_head(uwf, root_dir):
    workflow = put(uwf, "solve-issue")
    result = ok(uwf("thread", "start", "solve-issue", "-p", PROMPT))
    data = result.json()
    assert set(data) >= {"workflow", "thread", "head"}
    assert data["workflow"] == workflow
    assert is_ulid(data["thread"])
    assert is_hash(data["head"])
    start_node = ok(uwf("cas", "get", data["head"], "--payload")).json()
    assert start_node == {"workflow": workflow, "prompt": PROMPT, "workspace": None, "resumes": None, "agents": None}
    shown = ok(uwf("thread", "show", data["thread"])).json()
    subset(shown, {"workflow": workflow, "thread": data["thread"], "head": data["head"], "done": False})
    assert "reason" not in shown
    assert ok(uwf("thread", "steps", data["thread"])).json() == []


def test_run_to_done(shared_uwf, solved):
    uwf = shared_uwf
    final = solved["run"].json()
    assert final["done"] is True
    assert final["thread"] == solved["thread"]
    assert final["workflow"] == solved["workflow"]
    assert final["reason"] == "done"
    assert final["role"] == "reviewer"
    assert is_hash(final["head"])
    progress = [line for line in solved["run"].err.splitlines() if line.startswith("uwf: ")]
    assert [line.split()[1] for line in progress] == SOLVE_ROLES
    assert progress[-1].endswith("[done]")

    steps = steps_of(uwf, solved["thread"])
    assert [s["role"] for s in steps] == SOLVE_ROLES
    assert all(set(s) >= {"hash", "role", "agent", "output", "detail"} for s in steps)
    assert steps[-1]["hash"] == final["head"]
    assert steps[0]["output"]["plan"] == "Reject empty passwords in the login form before they reach the API."
    assert steps[2]["output"] == {"approved": False, "comments": "Whitespace-only passwords still pass, and there are no tests."}
    assert steps[4]["output"]["approved"] is True

    shown = ok(uwf("thread", "show", solved["thread"])).json()
    subset(shown, {"workflow": solved["workflow"], "thread": solved["thread"], "head": final["head"], "done": True, "reason": "done"})

    history = [json.loads(line) for line in (solved["root_dir"] / "history.jsonl").read_text().splitlines()]
    assert len(history) == 1
    assert {k: history[0][k] for k in ("thread", "workflow", "head", "reason")} == {
        "thread": solved["thread"],
        "workflow": solved["workflow"],
        "head": final["head"],
        "reason": "done",
    }


def test_step_chain_links(shared_uwf, solved):
    uwf = shared_uwf
    steps = steps_of(uwf, solved["thread"])
    previous = None
    for step in steps:
        node = ok(uwf("cas", "get", step["hash"], "--payload")).json()
        assert node["start"] == solved["start"]
        assert node["prev"] == previous
        assert node["role"] == step["role"]
        previous = step["hash"]
    fourth = ok(uwf("cas", "get", steps[3]["hash"], "--payload")).json()
    assert fourth["instruction"] == (
        "The reviewer rejected your change: Whitespace-only passwords still pass, and there are no tests. Address every comment."
    )
    assert fourth["startedAt"] <= fourth["completedAt"]


def test_read_contains_prompt_roles_and_comments(shared_uwf, solved):
    uwf = shared_uwf
    text = ok(uwf("thread", "read", solved["thread"])).out
    assert text.startswith(f"# Thread {solved['thread']} — solve-issue")
    assert "## Prompt\n\n" + PROMPT in text
    for number, role in enumerate(SOLVE_ROLES, 1):
        assert f"## {number}. {role} — " in text
    assert "Whitespace-only passwords still pass, and there are no tests." in text
    assert "Whitespace is trimmed and the three cases are tested. Approved." in text
    assert "Both comments are addressed. Ship it." in text  # the reviewer's markdown body
    assert "archived (done)" in text


def test_read_quota(shared_uwf, solved):
    uwf = shared_uwf
    text = ok(uwf("thread", "read", solved["thread"], "--quota", "300")).out
    assert len(text.rstrip("\n")) <= 300
    assert "omitted by --quota" in text
    assert PROMPT in text
    assert "## 5. reviewer" in text
    assert "## 1. planner" not in text


def test_read_quota_counts_the_final_newline(shared_uwf, solved):
    uwf = shared_uwf
    text = ok(uwf("thread", "read", solved["thread"], "--quota", "300")).out
    assert len(text) <= 300


def test_read_before(shared_uwf, solved):
    uwf = shared_uwf
    steps = steps_of(uwf, solved["thread"])
    text = ok(uwf("thread", "read", solved["thread"], "--before", steps[2]["hash"])).out
    assert "## 1. planner" in text
    assert "## 2. developer" in text
    assert "## 3." not in text
    assert "## 4." not in text
    assert steps[2]["hash"] not in text.split("## Prompt", 1)[1]
    assert "Whitespace-only passwords still pass" not in text


def test_read_before_a_foreign_hash_fails(shared_uwf, solved):
    uwf = shared_uwf
    result = uwf("thread", "read", solved["thread"], "--before", solved["workflow"])
    assert "is not a step of thread" in one_error_line(result)


def test_fork_runs_an_independent_history(uwf):
    solved = {"workflow": put(uwf, "solve-issue"), "thread": start(uwf, "solve-issue")["thread"]}
    ok(uwf("thread", "run", solved["thread"], "--agent", SOLVE_AGENT))
    original = steps_of(uwf, solved["thread"])
    third = original[2]["hash"]
    forked = ok(uwf("thread", "fork", third)).json()
    assert set(forked) >= {"workflow", "thread", "head"}
    assert forked["head"] == third
    assert forked["workflow"] == solved["workflow"]
    assert forked["thread"] != solved["thread"]
    assert [s["hash"] for s in steps_of(uwf, forked["thread"])] == [s["hash"] for s in original[:3]]

    final = ok(uwf("thread", "run", forked["thread"], "--agent", SOLVE_AGENT)).json()
    assert final["done"] is True and final["reason"] == "done"
    fork_steps = steps_of(uwf, forked["thread"])
    assert [s["role"] for s in fork_steps] == SOLVE_ROLES
    assert [s["hash"] for s in fork_steps[:3]] == [s["hash"] for s in original[:3]]
    assert fork_steps[3]["hash"] != original[3]["hash"]
    assert fork_steps[4]["hash"] != original[4]["hash"]
    assert [s["output"] for s in fork_steps] == [s["output"] for s in original]  # same script, same answers
    assert steps_of(uwf, solved["thread"]) == original  # the original is untouched

    # list: an active third thread, the two archived ones only with --all
    active = start(uwf, "solve-issue", "another task")
    listed = ok(uwf("thread", "list")).json()
    assert len(listed) == 1
    subset(listed[0], {"thread": active["thread"], "workflow": solved["workflow"], "head": active["head"]})
    assert "reason" not in listed[0]
    everything = ok(uwf("thread", "list", "--all")).json()
    by_id = {item["thread"]: item for item in everything}
    assert set(by_id) == {solved["thread"], forked["thread"], active["thread"]}
    subset(by_id[solved["thread"]], {"thread": solved["thread"], "workflow": solved["workflow"], "head": original[4]["hash"], "reason": "done"})
    subset(by_id[forked["thread"]], {"thread": forked["thread"], "workflow": solved["workflow"], "head": fork_steps[4]["hash"], "reason": "done"})
    assert "reason" not in by_id[active["thread"]]
    assert [item["thread"] for item in everything] == sorted(by_id, reverse=True)  # newest first
    assert {item["name"] for item in everything} == {"solve-issue"}  # the name beside the hash, for people


def test_fork_of_a_non_thread_node_fails(shared_uwf, solved):
    uwf = shared_uwf
    result = uwf("thread", "fork", solved["workflow"])
    assert "neither a StartNode nor a StepNode" in one_error_line(result)


def test_runs_lists_attempts(shared_uwf, solved):
    uwf = shared_uwf
    runs = ok(uwf("thread", "runs", solved["thread"])).json()
    steps = steps_of(uwf, solved["thread"])
    assert [r["status"] for r in runs] == ["ok"] * 5
    assert [r["role"] for r in runs] == SOLVE_ROLES
    assert [r["step"] for r in runs] == [s["hash"] for s in steps]
    assert [r["head"] for r in runs] == [solved["start"]] + [s["hash"] for s in steps[:4]]
    assert all(r["agent"] == SOLVE_AGENT and r["thread"] == solved["thread"] for r in runs)
    assert all(r["durationMs"] >= 0 and r["completedAt"] >= r["startedAt"] for r in runs)


def test_step_details_show_output_content_and_prompt(shared_uwf, solved):
    uwf = shared_uwf
    steps = steps_of(uwf, solved["thread"])
    details = ok(uwf("thread", "step-details", steps[2]["hash"])).json()
    assert details["step"] == steps[2]["hash"]
    assert details["role"] == "reviewer"
    assert details["agent"] == "uwf-script"
    assert details["output"] == steps[2]["output"]
    assert details["detail"]["hash"] == steps[2]["detail"]
    assert details["detail"]["type"] == "detail"
    assert details["detail"]["payload"]["extract"] == "frontmatter"
    assert details["content"].startswith("---\napproved: false\n")
    assert "The helper checks `password.length`" in details["content"]
    prompt = details["prompt"]
    assert "# Role: reviewer" in prompt
    assert "## Task\n\n" + PROMPT in prompt
    assert "- `approved` (boolean, required)" in prompt
    assert "### Step 2: developer" in prompt


def test_step_by_step_and_show(uwf):
    put(uwf, "solve-issue")
    thread = start(uwf, "solve-issue")["thread"]
    first = ok(uwf("thread", "step", thread, "--agent", SOLVE_AGENT)).json()
    assert first["done"] is False
    assert first["role"] == "planner"
    assert first["thread"] == thread
    assert ok(uwf("thread", "show", thread)).json()["head"] == first["head"]
    # a thread id prefix works too
    second = ok(uwf("thread", "step", thread[:20].lower(), "--agent", SOLVE_AGENT)).json()
    assert second["role"] == "developer"
    assert [s["role"] for s in steps_of(uwf, thread)] == ["planner", "developer"]


def test_run_max(uwf):
    put(uwf, "solve-issue")
    thread = start(uwf, "solve-issue")["thread"]
    result = ok(uwf("thread", "run", thread, "--agent", SOLVE_AGENT, "--max", "2")).json()
    assert result["done"] is False
    assert [s["role"] for s in steps_of(uwf, thread)] == ["planner", "developer"]
    assert ok(uwf("thread", "show", thread)).json()["done"] is False


# -- agents from bindings and config ---------------------------------------------------------------


def test_start_agent_binding_is_used(uwf, root_dir):
    put(uwf, "solve-issue")
    ok(uwf("setup", "--agent", "script=uwf-script --script-dir examples", "--default-agent", "script"))
    started = start(uwf, "solve-issue", PROMPT, "--agent", f"planner={SOLVE_AGENT}")
    start_node = ok(uwf("cas", "get", started["head"], "--payload")).json()
    assert start_node["agents"] == {"planner": SOLVE_AGENT}
    first = ok(uwf("thread", "step", started["thread"])).json()
    assert first["role"] == "planner"
    assert first["agent"] == SOLVE_AGENT
    ok(uwf("thread", "run", started["thread"]))
    runs = ok(uwf("thread", "runs", started["thread"])).json()
    assert [(r["role"], r["agent"], r["status"]) for r in runs] == [
        ("planner", SOLVE_AGENT, "ok"),
        ("developer", "script", "ok"),
        ("reviewer", "script", "ok"),
        ("developer", "script", "ok"),
        ("reviewer", "script", "ok"),
    ]
    # a fork keeps the thread's bindings (they are in the StartNode)
    forked = ok(uwf("thread", "fork", started["head"])).json()
    assert ok(uwf("thread", "step", forked["thread"])).json()["agent"] == SOLVE_AGENT


def test_step_agent_option_beats_the_binding(uwf):
    put(uwf, "solve-issue")
    started = start(uwf, "solve-issue", PROMPT, "--agent", "planner=false")
    result = ok(uwf("thread", "step", started["thread"], "--agent", SOLVE_AGENT)).json()
    assert result["agent"] == SOLVE_AGENT
    assert result["role"] == "planner"


def test_start_agent_binding_for_an_unknown_role_fails(uwf):
    put(uwf, "solve-issue")
    result = uwf("thread", "start", "solve-issue", "-p", PROMPT, "--agent", "tester=foo")
    line = one_error_line(result)
    assert "tester" in line and "planner" in line
    assert ok(uwf("thread", "list", "--all")).json() == []


def test_setup_default_agent_then_run_without_agent(uwf, root_dir):
    put(uwf, "solve-issue")
    setup = ok(uwf("setup", "--agent", "script=uwf-script --script-dir examples", "--default-agent", "script")).json()
    assert setup["defaultAgent"] == "script"
    subset(setup["agents"]["script"], {"command": "uwf-script", "args": ["--script-dir", "examples"], "protocol": "step"})
    assert (root_dir / "config.yaml").is_file()
    thread = start(uwf, "solve-issue")["thread"]
    final = ok(uwf("thread", "run", thread)).json()
    assert final["done"] is True and final["reason"] == "done"
    assert [s["role"] for s in steps_of(uwf, thread)] == SOLVE_ROLES
    assert {r["agent"] for r in ok(uwf("thread", "runs", thread)).json()} == {"script"}


def test_a_root_that_is_a_file_is_one_line(uwf, tmp_path):
    file = tmp_path / "notes.txt"
    file.write_text("not a root")
    for args in (("thread", "list"), ("workflow", "put", "examples/solve-issue.yaml"), ("cas", "fsck")):
        result = uwf("--root", str(file), *args)
        assert result.code == 1 and result.err == f"uwf: error: the root {file} is a file, not a directory (give a directory with --root or UWF_STORAGE_ROOT)\n"
    assert file.read_text() == "not a root"


def test_setup_knows_the_base_url_of_well_known_providers(uwf, root_dir):
    setup = ok(uwf("setup", "--provider", "openrouter", "--api-key", "sk-or-test-1234567")).json()
    assert setup["providers"]["openrouter"]["baseUrl"] == "https://openrouter.ai/api/v1"
    refused = uwf("setup", "--provider", "acme", "--api-key", "k-1234567")
    assert refused.code == 1 and "provider 'acme' needs a base URL (--base-url; openrouter and openai have one by default)" in refused.err


def test_fresh_root_without_config_step_says_how_to_configure(uwf, root_dir):
    put(uwf, "solve-issue")
    started = start(uwf, "solve-issue")
    assert not (root_dir / "config.yaml").exists()
    result = uwf("thread", "step", started["thread"])
    line = one_error_line(result)
    assert "uwf setup" in line
    assert "--agent" in line
    assert "planner" in line
    assert result.out == ""
    assert ok(uwf("thread", "show", started["thread"])).json()["head"] == started["head"]


# -- status-map workflow, resume ----------------------------------------------------------------------


def test_triage_bug_routes_by_status_to_done(uwf):
    put(uwf, "triage-bug")
    thread = start(uwf, "triage-bug", "Login crashes")["thread"]
    final = ok(uwf("thread", "run", thread, "--agent", "uwf-script --script-dir examples")).json()
    assert final["done"] is True and final["reason"] == "done"
    steps = steps_of(uwf, thread)
    assert [s["role"] for s in steps] == TRIAGE_ROLES
    assert [s["output"]["$status"] for s in steps] == ["needs-info", "answered", "confirmed", "fixed"]
    reporter = ok(uwf("cas", "get", steps[1]["hash"], "--payload")).json()
    assert reporter["instruction"] == "The triager needs more information: - Which browser and version? - What exactly did you type in the password field? "
    fixer = ok(uwf("cas", "get", steps[3]["hash"], "--payload")).json()
    assert fixer["instruction"] == "Confirmed (high): An empty password makes the API answer 500 in every browser."


def test_resume_a_done_thread_routes_from_start_with_resume(uwf, tmp_path):
    put(uwf, "triage-bug")
    script = (EXAMPLES / "triage-bug.script.yaml").read_text()
    script = script.replace(
        "reporter:\n",
        "  - output:\n"
        "      $status: not-a-bug\n"
        "      rationale: The new details show it is expected behaviour.\n"
        "    body: Closing.\n"
        "reporter:\n",
        1,
    )
    path = tmp_path / "triage-bug.script.yaml"
    path.write_text(script)
    agent = f"uwf-script --script {path}"
    thread = start(uwf, "triage-bug", "Login crashes")["thread"]
    ok(uwf("thread", "run", thread, "--agent", agent))
    done_head = ok(uwf("thread", "show", thread)).json()["head"]

    resumed = ok(uwf("thread", "resume", thread, "-p", "again")).json()
    assert resumed["thread"] == thread
    assert resumed["head"] != done_head
    new_start = ok(uwf("cas", "get", resumed["head"], "--payload")).json()
    assert new_start["resumes"] == done_head
    assert new_start["prompt"] == "again"
    subset(ok(uwf("thread", "show", thread)).json(), {"workflow": resumed["workflow"], "thread": thread, "head": resumed["head"], "done": False})
    assert thread in [item["thread"] for item in ok(uwf("thread", "list")).json()]

    step = ok(uwf("thread", "step", thread, "--agent", agent)).json()
    assert step["role"] == "triager"
    assert step["done"] is True  # not-a-bug -> $END
    node = ok(uwf("cas", "get", step["head"], "--payload")).json()
    assert node["instruction"] == "New information arrived; triage the bug again."
    assert node["prev"] is None
    assert node["start"] == resumed["head"]
    steps = steps_of(uwf, thread)
    assert [s["role"] for s in steps] == TRIAGE_ROLES + ["triager"]  # the history continues through the resume
    assert ok(uwf("thread", "show", thread)).json()["reason"] == "done"


def test_resume_of_an_active_thread_fails(uwf):
    put(uwf, "solve-issue")
    thread = start(uwf, "solve-issue")["thread"]
    assert "still active" in one_error_line(uwf("thread", "resume", thread, "-p", "again"))


def test_kill_archives_with_reason_killed(uwf):
    put(uwf, "solve-issue")
    started = start(uwf, "solve-issue")
    killed = ok(uwf("thread", "kill", started["thread"])).json()
    assert killed["done"] is True and killed["reason"] == "killed" and killed["head"] == started["head"]
    assert ok(uwf("thread", "list")).json() == []
    assert ok(uwf("thread", "list", "--all")).json()[0]["reason"] == "killed"
    line = one_error_line(uwf("thread", "step", started["thread"], "--agent", SOLVE_AGENT))
    assert "archived (killed)" in line
