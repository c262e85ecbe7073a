"""The reference's review loop routed by `$last('reviewer')`, through the real CLI: a rejection
goes back to the developer (the reference's meaning of $last: the role's output), and a
workflow still written for uwf's old meaning (`$last(...).output.x`) is warned about when it is
put and on every step it routes, because it would end the thread at the first rejection."""

from __future__ import annotations

from conftest import EXAMPLES

SOLVE_AGENT = "uwf-script --script examples/solve-issue.script.yaml"
OLD = "$last('reviewer').output.approved = false"


def _solve_issue(tmp_path, expression: str) -> str:
    text = (EXAMPLES / "solve-issue.yaml").read_text(encoding="utf-8")
    assert '"steps[-1].output.approved = false"' in text
    path = tmp_path / "solve-issue.yaml"
    path.write_text(text.replace('"steps[-1].output.approved = false"', f'"{expression}"'), encoding="utf-8")
    return str(path)


def _run(uwf, path: str) -> tuple[list[str], str]:
    put = uwf("workflow", "put", path)
    assert put.code == 0, put
    thread = uwf("thread", "start", "solve-issue", "-p", "Fix the login form").json()["thread"]
    run = uwf("thread", "run", thread, "--agent", SOLVE_AGENT)
    assert run.code == 0 and "Traceback" not in run.err, run
    return [step["role"] for step in uwf("thread", "steps", thread).json()], put.err + run.err


def test_last_reads_the_reviewers_output_and_a_rejection_goes_back(uwf, tmp_path):
    roles, err = _run(uwf, _solve_issue(tmp_path, "$last('reviewer').approved = false"))
    assert roles == ["planner", "developer", "reviewer", "developer", "reviewer"]
    assert "warning" not in err


def test_last_step_keeps_the_whole_step_reachable(uwf, tmp_path):
    roles, err = _run(uwf, _solve_issue(tmp_path, "$lastStep('reviewer').output.approved = false"))
    assert roles == ["planner", "developer", "reviewer", "developer", "reviewer"]
    assert "warning" not in err


def test_the_old_form_is_warned_about_when_put_and_when_it_routes(uwf, tmp_path):
    roles, err = _run(uwf, _solve_issue(tmp_path, OLD))
    assert roles == ["planner", "developer", "reviewer"]  # the misroute the warning is about
    warnings = [line for line in err.splitlines() if "reads $last('reviewer').output" in line]
    assert warnings[0].startswith("uwf: warning: ") and "conditions.notApproved.expression" in warnings[0]  # at put
    fix = "write $last('reviewer').<field>, or $lastStep('reviewer').output.<field> for the whole step"
    assert all(fix in line for line in warnings)
    routed = [line for line in warnings if line.startswith("uwf: warning: workflow 'solve-issue': condition 'notApproved'")]
    assert len(routed) == 3  # each step `thread run` took
