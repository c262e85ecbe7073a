"""moderator.evaluate (design §8): pure routing from a thread's context.

Most tests hand-build a Workflow and a ThreadContext; a few go through
put_workflow and real threads (start, kill, resume) to check the $START
`new` / `resume` statuses on stored data.
"""

from __future__ import annotations

import math

import pytest
from conftest import EXAMPLES

from uwf_core.thread.model import StartNode, StepContext, ThreadContext
from uwf_core.thread.moderator import REASON_DONE, REASON_MAX_STEPS, ModeratorError, evaluate
from uwf_core.workflow.jsonata_expr import truthy
from uwf_core.workflow.model import END, START, Condition, Role, Workflow, routes_from_payload

FAKE = "0" * 13


def make_workflow(graph: dict, conditions: dict | None = None, max_steps: int = 100, roles=("writer", "checker", "fixer")) -> Workflow:
    return Workflow(
        name="demo",
        description="hand-built",
        max_steps=max_steps,
        roles={name: Role(name, name, "goal", (), "procedure", "output", FAKE) for name in roles},
        conditions={name: Condition(name, f"{name} description", expr) for name, expr in (conditions or {}).items()},
        graph={key: routes_from_payload(value) for key, value in graph.items()},
    )


def make_context(*steps: tuple[str, object], prompt: str = "the task", resumes: str | None = None, since_start: int | None = None) -> ThreadContext:
    start = StartNode("1" * 13, prompt, None, resumes, None)
    contexts = [
        StepContext(f"S{i:012d}", role, f"O{i:012d}", f"D{i:012d}", "agent-x", "2" * 13, load_output=lambda _h, out=output: out)
        for i, (role, output) in enumerate(steps)
    ]
    head = contexts[-1].hash if contexts and (since_start is None or since_start) else "2" * 13
    return ThreadContext(head, "2" * 13, start, contexts, len(contexts) if since_start is None else since_start)


def t(role: str, condition: str | None = None, prompt: str | None = None) -> dict:
    data = {"role": role, "condition": condition}
    if prompt is not None:
        data["prompt"] = prompt
    return data


# -- transition lists ---------------------------------------------------------------------------


def test_start_with_no_steps_routes_from_start():
    wf = make_workflow({START: [t("writer")], "writer": [t(END)]})
    decision = evaluate(wf, make_context())
    assert decision.role == "writer"
    assert decision.source == START
    assert decision.instruction is None
    assert decision.end_reason is None
    assert not decision.is_end


def test_key_is_the_last_steps_role():
    wf = make_workflow({START: [t("writer")], "writer": [t("checker")], "checker": [t(END)]})
    assert evaluate(wf, make_context(("writer", {"text": "x"}))).role == "checker"
    decision = evaluate(wf, make_context(("writer", {}), ("checker", {})))
    assert decision.is_end
    assert decision.role == END
    assert decision.end_reason == REASON_DONE
    assert decision.source == "checker"


def test_first_matching_transition_wins_when_several_are_true():
    wf = make_workflow(
        {START: [t("writer")], "writer": [t("checker", "yes1"), t("fixer", "yes2"), t(END)]},
        {"yes1": "true", "yes2": "true"},
    )
    assert evaluate(wf, make_context(("writer", {}))).role == "checker"


def test_later_transition_wins_when_earlier_is_false():
    wf = make_workflow(
        {START: [t("writer")], "writer": [t("checker", "no"), t("fixer", "yes"), t(END)]},
        {"no": "false", "yes": "true"},
    )
    assert evaluate(wf, make_context(("writer", {}))).role == "fixer"


def test_null_fallback_taken_when_no_condition_is_true():
    wf = make_workflow(
        {START: [t("writer")], "writer": [t("checker", "no1"), t("fixer", "no2"), t(END)]},
        {"no1": "false", "no2": "steps[-1].output.missing"},
    )
    decision = evaluate(wf, make_context(("writer", {"text": "x"})))
    assert decision.is_end
    assert decision.end_reason == REASON_DONE


def test_null_condition_first_wins_over_a_later_true_condition():
    wf = make_workflow({START: [t("writer")], "writer": [t("fixer"), t("checker", "yes")]}, {"yes": "true"})
    assert evaluate(wf, make_context(("writer", {}))).role == "fixer"


def test_conditions_see_start_and_steps_with_expanded_outputs():
    wf = make_workflow(
        {
            START: [t("writer")],
            "writer": [t("fixer", "promptSaysFix"), t("checker", "twoSteps"), t(END)],
        },
        {"promptSaysFix": 'start.prompt = "fix"', "twoSteps": "$count(steps) = 2 and steps[0].output.n = 1 and steps[-1].agent = 'agent-x'"},
    )
    assert evaluate(wf, make_context(("writer", {"n": 1}), prompt="fix")).role == "fixer"
    assert evaluate(wf, make_context(("writer", {"n": 1}), ("writer", {"n": 2}))).role == "checker"
    assert evaluate(wf, make_context(("writer", {"n": 5}), ("writer", {"n": 2}))).is_end


def test_conditions_on_the_solve_issue_shape():
    wf = make_workflow(
        {START: [t("writer")], "writer": [t("checker")], "checker": [t("writer", "notApproved"), t(END)]},
        {"notApproved": "steps[-1].output.approved = false"},
    )
    rejected = make_context(("writer", {}), ("checker", {"approved": False}))
    approved = make_context(("writer", {}), ("checker", {"approved": True}))
    assert evaluate(wf, rejected).role == "writer"
    assert evaluate(wf, approved).is_end


# -- truthiness ----------------------------------------------------------------------------------

FALSY_EXPRESSIONS = ["null", "false", "0", "0.0", '""', '$number("NaN")', "steps[-1].output.missing", "steps[-1].output.zero", "steps[-1].output.empty"]
TRUTHY_EXPRESSIONS = ["true", '"x"', '"false"', "1", "-0.5", "steps[-1].output.zero + 7", '{"a": 1}', "[1, 2]", "{}", "steps[-1].output.obj", "steps[-1].output.list", "steps[-1].output.emptyObj"]
OUTPUT = {"zero": 0, "empty": "", "obj": {"k": None}, "list": [0], "emptyObj": {}}


def _routes_when(expression: str) -> str:
    wf = make_workflow({START: [t("writer")], "writer": [t("checker", "c"), t("fixer")]}, {"c": expression})
    return evaluate(wf, make_context(("writer", OUTPUT))).role


@pytest.mark.parametrize("expression", FALSY_EXPRESSIONS)
def test_falsy_condition_values_fall_through(expression):
    assert _routes_when(expression) == "fixer"


@pytest.mark.parametrize("expression", TRUTHY_EXPRESSIONS)
def test_truthy_condition_values_take_the_transition(expression):
    assert _routes_when(expression) == "checker"


@pytest.mark.parametrize(
    "value, expected",
    [
        (None, False),
        (False, False),
        (True, True),
        (0, False),
        (0.0, False),
        (-0.0, False),
        (math.nan, False),
        (1, True),
        (-3, True),
        (0.001, True),
        (math.inf, True),
        ("", False),
        ("0", True),
        ("false", True),
        ({}, True),
        ({"a": 1}, True),
        ([], True),
        ([None], True),
    ],
)
def test_truthy_rules(value, expected):
    assert truthy(value) is expected


# -- errors -----------------------------------------------------------------------------------------


def test_condition_failing_at_runtime_is_an_error_naming_it():
    wf = make_workflow(
        {START: [t("writer")], "writer": [t("checker", "brokenSum"), t(END)]},
        {"brokenSum": "steps[-1].output.text + 1"},
    )
    with pytest.raises(ModeratorError) as info:
        evaluate(wf, make_context(("writer", {"text": "abc"})))
    message = info.value.message
    assert "brokenSum" in message
    assert "steps[-1].output.text + 1" in message
    assert "writer" in message
    assert "\n" not in message


def test_runtime_failure_is_not_a_silent_false_even_with_a_fallback():
    wf = make_workflow({START: [t("writer")], "writer": [t("checker", "bad"), t(END)]}, {"bad": '$number("x") > 1'})
    with pytest.raises(ModeratorError, match="condition 'bad'"):
        evaluate(wf, make_context(("writer", {})))


def test_no_route_names_the_role_and_the_values_seen():
    wf = make_workflow(
        {START: [t("writer")], "writer": [t("checker", "isGood"), t("fixer", "isBad")]},
        {"isGood": "steps[-1].output.verdict = 'good'", "isBad": "steps[-1].output.score"},
    )
    with pytest.raises(ModeratorError) as info:
        evaluate(wf, make_context(("writer", {"verdict": "meh", "score": 0})))
    message = info.value.message
    assert "no route from 'writer'" in message
    assert "isGood=false" in message
    assert "isBad=0" in message
    assert '"verdict": "meh"' in message  # the last output it saw


def test_no_route_from_start_with_an_empty_transition_list():
    wf = make_workflow({START: [], "writer": [t(END)]})
    with pytest.raises(ModeratorError, match=r'no transitions defined for role "\$START"'):
        evaluate(wf, make_context())


def test_missing_graph_key_names_it():
    wf = make_workflow({START: [t("writer")]})
    with pytest.raises(ModeratorError, match='no transitions defined for role "writer": workflow .demo. has no routes from it'):
        evaluate(wf, make_context(("writer", {})))


# -- status maps -------------------------------------------------------------------------------------


def status_workflow(**extra) -> Workflow:
    graph = {
        START: {"new": {"role": "writer", "prompt": "fresh: {{prompt}}"}, "resume": {"role": "checker", "prompt": "again: {{prompt}} after {{resumes}}"}},
        "writer": {"done": {"role": "checker"}, "stuck": {"role": "fixer", "prompt": "help with {{reason}}"}},
        "checker": {"good": {"role": END}, "bad": {"role": "writer"}},
        "fixer": {"fixed": {"role": END}},
    }
    return make_workflow(graph, **extra)


def test_status_map_routes_by_status():
    wf = status_workflow()
    assert evaluate(wf, make_context(("writer", {"$status": "done"}))).role == "checker"
    decision = evaluate(wf, make_context(("writer", {"$status": "stuck", "reason": "x"})))
    assert decision.role == "fixer"
    assert decision.instruction == "help with x"
    assert evaluate(wf, make_context(("writer", {"$status": "done"}), ("checker", {"$status": "bad"}))).role == "writer"
    end = evaluate(wf, make_context(("writer", {"$status": "done"}), ("checker", {"$status": "good"})))
    assert end.is_end and end.end_reason == REASON_DONE


def test_status_map_start_uses_new():
    decision = evaluate(status_workflow(), make_context(prompt="P1"))
    assert decision.role == "writer"
    assert decision.instruction == "fresh: P1"


def test_status_map_start_uses_resume_after_a_resume():
    earlier = ("writer", {"$status": "done"}), ("checker", {"$status": "good"})
    context = make_context(*earlier, prompt="P2", resumes="3" * 13, since_start=0)
    assert context.last_step is None
    decision = evaluate(status_workflow(), context)
    assert decision.role == "checker"
    assert decision.source == START
    assert decision.instruction == f"again: P2 after {'3' * 13}"


@pytest.mark.parametrize("output", [{"text": "no status"}, {"$status": 3}, {"$status": None}, "a string", ["done"]])
def test_status_map_output_without_string_status_is_an_error_naming_the_role(output):
    with pytest.raises(ModeratorError) as info:
        evaluate(status_workflow(), make_context(("writer", output)))
    assert "role 'writer'" in info.value.message
    assert "$status" in info.value.message


def test_status_map_unknown_status_names_the_role_status_and_the_routed_ones():
    with pytest.raises(ModeratorError) as info:
        evaluate(status_workflow(), make_context(("writer", {"$status": "confused"})))
    message = info.value.message
    assert "'writer'" in message
    assert "'confused'" in message
    assert "done" in message and "stuck" in message


def test_status_map_start_without_resume_route_after_resume_is_an_error():
    wf = make_workflow({START: {"new": {"role": "writer"}}, "writer": {"done": {"role": END}}})
    with pytest.raises(ModeratorError, match="'resume'"):
        evaluate(wf, make_context(("writer", {"$status": "done"}), resumes="3" * 13, since_start=0))


# -- Mustache prompts -------------------------------------------------------------------------------------


def test_prompt_rendered_from_last_output_without_html_escaping():
    wf = make_workflow(
        {START: [t("writer")], "writer": [t("checker", prompt="Review: {{comments}} / {{{comments}}} / {{&comments}} n={{n}}")], "checker": [t(END)]}
    )
    decision = evaluate(wf, make_context(("writer", {"comments": "<a & b> \"q\" 'x'", "n": 3})))
    assert decision.instruction == "Review: <a & b> \"q\" 'x' / <a & b> \"q\" 'x' / <a & b> \"q\" 'x' n=3"


def test_prompt_sections_and_lists():
    wf = make_workflow(
        {START: [t("writer")], "writer": [t("checker", prompt="Q:{{#questions}} - {{.}}{{/questions}}{{^questions}} none{{/questions}}")], "checker": [t(END)]}
    )
    assert evaluate(wf, make_context(("writer", {"questions": ["<x>", "y&z"]}))).instruction == "Q: - <x> - y&z"
    assert evaluate(wf, make_context(("writer", {"questions": []}))).instruction == "Q: none"


def test_prompt_at_start_rendered_from_the_start_node_payload():
    wf = make_workflow({START: [t("writer", prompt="Task: {{prompt}} (ws={{workspace}})")], "writer": [t(END)]})
    decision = evaluate(wf, make_context(prompt="fix <login> & <logout>"))
    assert decision.instruction == "Task: fix <login> & <logout> (ws=)"


def test_prompt_uses_the_last_output_only():
    wf = make_workflow({START: [t("writer")], "writer": [t("checker", prompt="[{{text}}]")], "checker": [t(END)]})
    decision = evaluate(wf, make_context(("writer", {"text": "old"}), ("checker", {}), ("writer", {"text": "new"})))
    assert decision.instruction == "[new]"


def test_no_instruction_for_end():
    wf = make_workflow({START: [t("writer")], "writer": [t(END, prompt="ignored {{x}}")]})
    decision = evaluate(wf, make_context(("writer", {"x": 1})))
    assert decision.is_end and decision.instruction is None


# -- maxSteps -------------------------------------------------------------------------------------------------


def looping_workflow(max_steps: int) -> Workflow:
    return make_workflow({START: [t("writer")], "writer": [t("writer")]}, max_steps=max_steps)


def test_max_steps_not_reached():
    decision = evaluate(looping_workflow(2), make_context(("writer", {})))
    assert decision.role == "writer" and decision.end_reason is None


@pytest.mark.parametrize("taken", [2, 3])
def test_max_steps_reached_ends_with_reason_max_steps(taken):
    decision = evaluate(looping_workflow(2), make_context(*[("writer", {})] * taken))
    assert decision.is_end
    assert decision.role == END
    assert decision.end_reason == REASON_MAX_STEPS
    assert decision.source == "writer"


def test_max_steps_zero_ends_at_start():
    decision = evaluate(looping_workflow(0), make_context())
    assert decision.is_end and decision.end_reason == REASON_MAX_STEPS


def test_max_steps_counts_only_steps_since_the_current_start():
    context = make_context(*[("writer", {})] * 5, since_start=1)
    decision = evaluate(looping_workflow(2), context)
    assert decision.role == "writer"


def test_natural_end_at_the_limit_is_done_not_max_steps():
    wf = make_workflow({START: [t("writer")], "writer": [t(END)]}, max_steps=1)
    decision = evaluate(wf, make_context(("writer", {})))
    assert decision.is_end and decision.end_reason == REASON_DONE


# -- stored workflows and real threads ----------------------------------------------------------------------


def test_real_threads_route_start_by_new_then_resume(root):
    from uwf_core.engine.control import kill_thread
    from uwf_core.thread.context import build_context
    from uwf_core.thread.ops import resume_thread, start_thread
    from uwf_core.workflow.ops import load_workflow, put_workflow

    put_workflow(root, str(EXAMPLES / "triage-bug.yaml"))
    store = root.nodes
    workflow = load_workflow(root, "triage-bug")
    info = start_thread(root, "triage-bug", "The login <form> crashes & burns")
    decision = evaluate(workflow, build_context(store, info.head))
    assert decision.role == "triager"
    assert decision.instruction == "Triage this bug report."

    kill_thread(root, info.thread)
    resumed = resume_thread(root, info.thread, "Now with details")
    context = build_context(store, resumed.head)
    assert context.start.resumes == info.head
    assert context.since_start == 0
    decision = evaluate(workflow, context)
    assert decision.role == "triager"
    assert decision.instruction == "New information arrived; triage the bug again."


def test_real_workflow_start_prompt_renders_start_node_unescaped(root, tmp_path):
    from uwf_core.thread.context import build_context
    from uwf_core.thread.ops import start_thread
    from uwf_core.workflow.ops import load_workflow, put_workflow

    source = (EXAMPLES / "analyze-topic.yaml").read_text()
    source = source.replace(
        "  $START:\n    - role: analyst\n      condition: null\n",
        '  $START:\n    - role: analyst\n      condition: null\n      prompt: "Analyze: {{prompt}}"\n',
    )
    assert 'prompt: "Analyze' in source
    path = tmp_path / "analyze.yaml"
    path.write_text(source)
    put_workflow(root, str(path))
    store = root.nodes
    info = start_thread(root, "analyze-topic", "<CAS> & \"forks\"")
    decision = evaluate(load_workflow(root, "analyze-topic"), build_context(store, info.head))
    assert decision.role == "analyst"
    assert decision.instruction == 'Analyze: <CAS> & "forks"'
