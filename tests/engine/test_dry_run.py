"""engine/dry_run.py through the public API: typed records a UI can show (the TUI's preview)."""

from __future__ import annotations

from conftest import EXAMPLES

import uwf_core.api as api

AGENT = f"uwf-script --script {EXAMPLES / 'solve-issue.script.yaml'}"


def test_dry_run_returns_typed_records(uwf, root):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "Fix the login bug").json()["thread"]
    preview = api.dry_run(root, thread, agent=AGENT)
    assert isinstance(preview, api.DryRun) and isinstance(preview.decision, api.Decision)
    assert isinstance(preview.agent, api.AgentChoice)
    assert preview.role == "planner" and preview.outcome == "step" and not preview.forced
    assert preview.decision.reason == "the only transition from '$START'"
    assert preview.agent.origin == "--agent" and preview.agent.argv[0] == "uwf-script"
    assert preview.prompt.startswith("Workflow: solve-issue") and "## Task\n\nFix the login bug" in preview.prompt
    assert preview.budget is None and preview.running is None and preview.reuse_from is None


def test_no_agent_configured_is_reported_not_raised(uwf, root):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "Fix the login bug").json()["thread"]
    preview = api.dry_run(root, thread)
    assert preview.agent is None and "no agent is configured for role 'planner'" in preview.agent_error
    assert preview.prompt is not None  # the prompt is known all the same
