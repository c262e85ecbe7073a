"""The moderator says why it routed (Decision.matched / .reason) without routing differently."""

from __future__ import annotations

from test_moderator import make_context, make_workflow, t

from uwf_core.thread.moderator import REASON_MAX_STEPS, evaluate, route_to
from uwf_core.workflow.model import END, START


def test_only_transition():
    decision = evaluate(make_workflow({START: [t("writer")], "writer": [t(END)]}), make_context())
    assert decision.role == "writer" and decision.matched is None
    assert decision.reason == "the only transition from '$START'"


def test_condition_that_matched_and_those_before_it():
    wf = make_workflow(
        {START: [t("writer")], "writer": [t("fixer", "broken"), t("checker", "rejected"), t(END)]},
        {"broken": "steps[-1].output.broken", "rejected": "steps[-1].output.ok = false"},
    )
    decision = evaluate(wf, make_context(("writer", {"ok": False, "broken": False})))
    assert decision.role == "checker"
    assert decision.matched == "rejected"
    assert decision.reason == "condition 'rejected' (steps[-1].output.ok = false) is true, after broken=false"


def test_fallback_after_false_conditions():
    wf = make_workflow({START: [t("writer")], "writer": [t("checker", "rejected"), t(END)]}, {"rejected": "steps[-1].output.ok = false"})
    decision = evaluate(wf, make_context(("writer", {"ok": True})))
    assert decision.is_end and decision.matched is None
    assert decision.reason == "the fallback transition from 'writer' (condition: null), after rejected=false"


def test_status_map_reason():
    wf = make_workflow({START: {"new": {"role": "writer"}}, "writer": {"done": {"role": END}, "again": {"role": "writer"}}})
    first = evaluate(wf, make_context())
    assert first.matched == "new" and first.reason == "$status 'new' at $START"
    decision = evaluate(wf, make_context(("writer", {"$status": "again"})))
    assert decision.role == "writer" and decision.matched == "again"
    assert decision.reason == "$status 'again' of 'writer''s output"


def test_max_steps_reason():
    wf = make_workflow({START: [t("writer")], "writer": [t("writer")]}, max_steps=1)
    decision = evaluate(wf, make_context(("writer", {})))
    assert decision.end_reason == REASON_MAX_STEPS and decision.reason == "maxSteps (1) reached"


def test_route_to_a_role_the_graph_reaches_renders_its_prompt():
    wf = make_workflow({START: [t("writer")], "writer": [t("checker", None, "check {{text}}")], "checker": [t(END)]})
    decision = route_to(wf, make_context(("writer", {"text": "poem"})), "checker")
    assert decision.instruction == "check poem"
    assert "routes from 'writer' to 'checker' on condition null" in decision.reason
    other = route_to(wf, make_context(("writer", {"text": "poem"})), "fixer")
    assert other.role == "fixer" and other.instruction is None and "no route from 'writer'" in other.reason
