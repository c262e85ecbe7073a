"""Fidelity to the reference system: its workflows run unchanged here, and what uwf refuses is
refused at the door — $first/$last, empty edge prompts, `location` targets, frontmatter only at
the start of an answer, one nesting limit, and errors that say why NaN/±Infinity and lone
surrogates are refused."""

from __future__ import annotations

import json
import os

import pytest
from workflow_texts import BASE, STATUS_BASE

from uwf_core.thread.model import StartNode, StepContext, ThreadContext
from uwf_core.thread.moderator import ModeratorError, evaluate
from uwf_core.workflow.model import (
    END,
    START,
    Condition,
    Role,
    Workflow,
    routes_from_payload,
)
from uwf_core.workflow.ops import lint_file

FAKE = "0" * 13


@pytest.fixture
def write(tmp_path):
    def write(text: str, name: str = "wf.yaml") -> str:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    return write


def _workflow(graph: dict, conditions: dict) -> Workflow:
    roles = {name: Role(name, name, "goal", (), "procedure", "output", FAKE) for name in ("planner", "developer", "reviewer")}
    return Workflow(
        "demo", "d", 100, roles,
        {name: Condition(name, "", expression) for name, expression in conditions.items()},
        {key: routes_from_payload(value) for key, value in graph.items()},
    )


def _context(*steps: tuple[str, dict]) -> ThreadContext:
    contexts = [
        StepContext(f"S{i:012d}", role, f"O{i:012d}", f"D{i:012d}", "agent", "2" * 13, load_output=lambda _h, out=output: out)
        for i, (role, output) in enumerate(steps)
    ]
    return ThreadContext(contexts[-1].hash, "2" * 13, StartNode("1" * 13, "task"), contexts, len(contexts))


# -- 1. $first and $last ----------------------------------------------------------------------


REVIEW_LOOP = {
    START: [{"role": "planner", "condition": None}],
    "planner": [{"role": "developer", "condition": None}],
    "developer": [{"role": "reviewer", "condition": None}],
    "reviewer": [{"role": "developer", "condition": "rejected"}, {"role": END, "condition": None}],
}


# The reference moderator's cases for findByRole, ported: `$first(role)` / `$last(role)` are that
# role's first / last *output*, undefined when the role has not run.
@pytest.mark.parametrize(
    "expression,steps,expected",
    [
        # a rejection sends the draft back; an approval ends the workflow
        ("$last('reviewer').approved = false", [("developer", {}), ("reviewer", {"approved": False})], "developer"),
        ("$last('reviewer').approved = false", [("developer", {}), ("reviewer", {"approved": True})], END),
        # the reviewer's latest verdict decides, not its first one
        ("$last('reviewer').approved = false", [("reviewer", {"approved": False}), ("reviewer", {"approved": True})], END),
        ("$last('reviewer').approved = false", [("reviewer", {"approved": True}), ("reviewer", {"approved": False})], "developer"),
        # $first reads the earliest output of a role
        ("$first('planner').steps > 1", [("planner", {"steps": 3}), ("planner", {"steps": 1}), ("reviewer", {})], "developer"),
        ("$first('planner').steps > 1", [("planner", {"steps": 1}), ("planner", {"steps": 3}), ("reviewer", {})], END),
        # a role that never ran is undefined, so the condition is false
        ("$exists($last('tester'))", [("reviewer", {"approved": False})], END),
        ("$last('tester').approved = false", [("reviewer", {"approved": False})], END),
        ("$exists($last('reviewer'))", [("reviewer", {"approved": True})], "developer"),
        # mixed with the thread's own steps, and through JSONata's functions
        ("$count(steps[role='developer']) < 2 and $last('reviewer').approved = false",
         [("developer", {}), ("reviewer", {"approved": False})], "developer"),
        ("$count(steps[role='developer']) < 2 and $last('reviewer').approved = false",
         [("developer", {}), ("developer", {}), ("reviewer", {"approved": False})], END),
        ("$count($last('reviewer').issues) > 0", [("reviewer", {"issues": ["a", "b"]})], "developer"),
        ("$contains($last('developer').summary, 'WIP')", [("developer", {"summary": "WIP: half"}), ("reviewer", {})], "developer"),
        # the old uwf form reads a field named `output` of the output: undefined, so false
        ("$last('reviewer').output.approved = false", [("reviewer", {"approved": False})], END),
        # the whole step stays reachable under uwf's own names
        ("$lastStep('reviewer').output.approved = false", [("reviewer", {"approved": False})], "developer"),
        ("$lastStep('reviewer').agent = 'agent'", [("reviewer", {"approved": True})], "developer"),
        ("$firstStep('planner').output.steps > 1", [("planner", {"steps": 3}), ("planner", {"steps": 1}), ("reviewer", {})], "developer"),
        ("$exists($firstStep('tester'))", [("reviewer", {})], END),
    ],
)
def test_first_and_last_route_as_the_reference(expression, steps, expected):
    workflow = _workflow(REVIEW_LOOP, {"rejected": expression})
    assert evaluate(workflow, _context(*steps)).role == expected


@pytest.mark.parametrize("expression", ["$last('reviewer').approved = false", "($r := 'reviewer'; $last($r).approved = false)"])
def test_first_and_last_give_the_same_answer_with_and_without_jsonata(expression):
    """The fast path (simple_condition) and JSONata agree: the first form takes the fast path,
    the second (a variable) goes to JSONata."""
    from uwf_core.workflow.jsonata_expr import evaluate as evaluate_expression

    context = _context(("reviewer", {"approved": False}))
    data = context.to_json()
    assert evaluate_expression(expression, data) is True  # the context's own steps
    functions = {"last": lambda role: {"approved": False} if role == "reviewer" else None}
    assert evaluate_expression(expression, data, functions=functions) is True


def test_first_and_last_see_the_steps_of_this_context_only():
    workflow = _workflow(REVIEW_LOOP, {"rejected": "$last('reviewer').approved = false"})
    rejected = _context(("reviewer", {"approved": False}))
    approved = _context(("reviewer", {"approved": True}))
    # one compiled expression serves both contexts, in either order
    assert evaluate(workflow, rejected).role == "developer"
    assert evaluate(workflow, approved).role == END
    assert evaluate(workflow, rejected).role == "developer"


def _with_condition(write, expression: str) -> str:
    return write(BASE.replace('expression: "steps[-1].output.ok = false"', f"expression: {json.dumps(expression)}"))


def test_lint_refuses_a_function_neither_jsonata_nor_uwf_has(write):
    errors = _errors(_with_condition(write, "$frist('checker').output.ok = false"))
    assert len(errors) == 1
    assert "condition 'rejected' calls $frist, which is neither a JSONata function nor uwf's ($first, $last, $firstStep, $lastStep)" in errors[0]
    assert "did you mean $first?" in errors[0]
    assert "wf.yaml:27: conditions.rejected.expression" in errors[0]  # file, line and field


@pytest.mark.parametrize(
    "expression",
    [
        "$last('checker').ok = false",
        "$first('writer').text = ''",
        "$lastStep('checker').output.ok = false",
        "$firstStep('writer').agent = 'x'",
        "$uppercase($last('writer').text) = 'X'",  # JSONata's own
        "($f := function($x) { $x.ok = false }; $f($last('checker')))",  # defined in the expression
        "$map(steps, function($s) { $s.role })[0] = 'writer'",
    ],
)
def test_lint_accepts_jsonata_uwf_and_local_functions(write, expression):
    assert _problems(_with_condition(write, expression)) == []


@pytest.mark.parametrize(
    "expression,call",
    [
        ("$last('checker').output.ok = false", "$last('checker')"),
        ("$first('writer').output.text = ''", "$first('writer')"),
        ("$not($last('checker').output.ok)", "$last('checker')"),
        ("($r := 'checker'; $last($r).output.ok = false)", "$last(...)"),
    ],
)
def test_lint_warns_with_the_fix_when_a_condition_reads_output_through_first_or_last(write, expression, call):
    """uwf's $first/$last returned the whole step before they returned the output as the
    reference's do: a stored condition in the old form would now read a missing field and route
    differently, so lint (and `workflow put`) say so, and how to write it."""
    problems = _problems(_with_condition(write, expression))
    assert len(problems) == 1, problems
    assert problems[0].severity == "warning"
    message = problems[0].message
    assert f"reads {call}.output, but {call} is the role's output itself" in message
    whole = call.replace("$last", "$lastStep").replace("$first", "$firstStep")
    assert f"write {call}.<field>, or {whole}.output.<field> for the whole step" in message


def test_lint_does_not_warn_when_the_role_has_an_output_field(write):
    text = BASE.replace("        ok: {type: boolean}\n", "        ok: {type: boolean}\n        output: {type: object}\n")
    assert "output: {type: object}" in text
    path = write(text.replace('expression: "steps[-1].output.ok = false"', 'expression: "$last(\'checker\').output.ok = false"'))
    assert _problems(path) == []


# -- 2. empty edge prompts ---------------------------------------------------------------------


@pytest.mark.parametrize("prompt", ['""', '"   "', '"{{! only a comment }}"', '"\\n\\n"'])
def test_lint_refuses_a_prompt_that_can_only_render_empty(write, prompt):
    path = write(BASE.replace("- {role: checker, condition: null}", f"- {{role: checker, condition: null, prompt: {prompt}}}"))
    errors = _errors(path)
    assert len(errors) == 1 and "graph.writer[0].prompt: the prompt is empty" in errors[0]


def test_a_prompt_that_renders_empty_at_step_time_is_an_error():
    graph = {START: [{"role": "planner", "condition": None}], "planner": [{"role": "developer", "condition": None, "prompt": "{{note}}"}]}
    workflow = _workflow({**graph, "developer": [{"role": END, "condition": None}]}, {})
    assert evaluate(workflow, _context(("planner", {"note": "Fix it"}))).instruction == "Fix it"
    with pytest.raises(ModeratorError, match="the prompt from 'planner' to 'developer' rendered empty"):
        evaluate(workflow, _context(("planner", {"note": "  "})))
    with pytest.raises(ModeratorError, match="rendered empty"):
        evaluate(workflow, _context(("planner", {})))


# -- 3. location on status-map targets --------------------------------------------------------------


def _status_with_location(write, location: str) -> str:
    return write(STATUS_BASE.replace("    bad: writer\n", f"    bad: {{role: writer, location: {json.dumps(location)}}}\n"))


@pytest.mark.parametrize(
    "location,message",
    [
        ("/etc", "must be relative to the thread's workspace, not absolute"),
        ("~/x", "must be relative to the thread's workspace, not absolute"),
        ("../elsewhere", "leaves the thread's workspace"),
        ("a/../../b", "leaves the thread's workspace"),
        ("", "must be a directory path relative to the thread's workspace"),
    ],
)
def test_lint_refuses_a_location_outside_the_workspace(write, location, message):
    errors = _errors(_status_with_location(write, location))
    assert len(errors) == 1 and "graph.checker.bad.location" in errors[0] and message in errors[0]


@pytest.mark.parametrize(
    "location,message",
    [
        ("/{{{dir}}}", "must be relative to the thread's workspace, not absolute"),
        ("~{{dir}}", "must be relative to the thread's workspace, not absolute"),
        ("../{{{dir}}}", "leaves the thread's workspace"),
        ("{{#dir}}x", "Mustache template error"),
    ],
)
def test_lint_refuses_a_location_template_that_can_never_be_valid(write, location, message):
    errors = _errors(_status_with_location(write, location))
    assert len(errors) == 1 and "graph.checker.bad.location" in errors[0] and message in errors[0], errors


@pytest.mark.parametrize("location", ["{{{repoPath}}}", "web/{{dir}}", "{{#dir}}{{dir}}{{/dir}}", "..{{dir}}", "{{! the top }}web"])
def test_lint_accepts_a_location_template_that_may_render_inside(write, location):
    assert _errors(_status_with_location(write, location)) == []


LOCATED = {
    START: [{"role": "planner", "condition": None}],
    "planner": {"go": {"role": "developer", "location": "{{{repoPath}}}"}, "done": {"role": END}},
    "developer": [{"role": END, "condition": None}],
}


@pytest.mark.parametrize(
    "output,location",
    [
        ({"$status": "go", "repoPath": "web/src"}, "web/src"),
        ({"$status": "go", "repoPath": "a&b <c>"}, "a&b <c>"),  # not HTML-escaped, as prompts
        ({"$status": "go"}, None),  # a missing variable renders empty: the workspace itself
        ({"$status": "go", "repoPath": ""}, None),
    ],
)
def test_a_location_is_rendered_with_the_last_output(output, location):
    decision = evaluate(_workflow(LOCATED, {}), _context(("planner", output)))
    assert decision.role == "developer" and decision.location == location


@pytest.mark.parametrize(
    "repo_path,message",
    [
        ("/etc", "location '/etc' (rendered from '{{{repoPath}}}') of the route from 'planner' to 'developer' must be relative"),
        ("../../x", "location '../../x' (rendered from '{{{repoPath}}}') of the route from 'planner' to 'developer' leaves the thread's workspace"),
        ("a/../../x", "leaves the thread's workspace"),
    ],
)
def test_a_rendered_location_outside_the_workspace_is_refused(repo_path, message):
    """Safer than the reference, which runs the agent wherever the path leads."""
    with pytest.raises(ModeratorError) as info:
        evaluate(_workflow(LOCATED, {}), _context(("planner", {"$status": "go", "repoPath": repo_path})))
    assert message in info.value.message


def test_a_location_is_kept_in_the_stored_workflow_and_plain_workflows_keep_their_hash(write, root):
    from uwf_core.store.builtin_schemas import BUILTIN_HASHES
    from uwf_core.workflow.ops import load_workflow, put_workflow

    plain = put_workflow(root, write(STATUS_BASE, "plain.yaml"))
    assert root.nodes.get(plain.hash).type == BUILTIN_HASHES["workflow"]  # hashes of existing workflows never change
    located = put_workflow(root, _status_with_location(write, "web/src"))
    assert root.nodes.get(located.hash).type != BUILTIN_HASHES["workflow"]
    workflow = load_workflow(root, located.hash)
    assert workflow.graph["checker"].statuses["bad"].location == "web/src"
    assert workflow.graph["checker"].statuses["good"].location is None


def test_a_location_target_runs_its_agent_in_that_directory(uwf, root_dir, tmp_path):
    workspace = tmp_path / "ws"
    (workspace / "web").mkdir(parents=True)
    wf = tmp_path / "loc.yaml"
    wf.write_text(STATUS_BASE.replace("    new: writer\n", "    new: {role: writer, location: web}\n"))
    assert uwf("workflow", "put", str(wf)).code == 0
    agent = tmp_path / "where.sh"
    agent.write_text('#!/bin/sh\ncat >/dev/null\npwd > "$0.seen"\necho \'{"$status": "done", "text": "t"}\'\n')
    agent.chmod(0o755)
    from uwf_core.config.model import AgentConfig, Config
    from uwf_core.repo import Repo

    Repo.open(str(root_dir)).save_config(Config(agents={"where": AgentConfig("where", str(agent), (), "text", writable=(str(tmp_path),))}, default_agent="where"))
    thread = uwf("thread", "start", "demo-status", "-p", "go", "-w", str(workspace)).json()["thread"]
    result = uwf("thread", "step", thread)
    assert result.code == 0, result
    assert (tmp_path / "where.sh.seen").read_text().strip() == str(workspace / "web")


def test_a_location_template_runs_the_agent_where_it_renders(uwf, root_dir, tmp_path):
    """At $START the template sees the StartNode, as a prompt does: `{{{prompt}}}` is the task."""
    workspace = tmp_path / "ws"
    (workspace / "web").mkdir(parents=True)
    wf = tmp_path / "loc.yaml"
    wf.write_text(STATUS_BASE.replace("    new: writer\n", "    new: {role: writer, location: '{{{prompt}}}'}\n"))
    assert uwf("workflow", "put", str(wf)).code == 0
    agent = tmp_path / "where.sh"
    agent.write_text('#!/bin/sh\ncat >/dev/null\npwd > "$0.seen"\necho \'{"$status": "done", "text": "t"}\'\n')
    agent.chmod(0o755)
    from uwf_core.config.model import AgentConfig, Config
    from uwf_core.repo import Repo

    Repo.open(str(root_dir)).save_config(Config(agents={"where": AgentConfig("where", str(agent), (), "text", writable=(str(tmp_path),))}, default_agent="where"))
    thread = uwf("thread", "start", "demo-status", "-p", "web", "-w", str(workspace)).json()["thread"]
    result = uwf("thread", "step", thread)
    assert result.code == 0, result
    assert (tmp_path / "where.sh.seen").read_text().strip() == str(workspace / "web")


def test_a_location_that_is_missing_or_leads_out_fails_the_step_and_keeps_the_head(uwf, root_dir, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.symlink(tmp_path, workspace / "out")
    for location, message in (("missing", "is not a directory in the workspace"), ("out", "leads out of the workspace")):
        wf = tmp_path / f"{location}.yaml"
        wf.write_text(STATUS_BASE.replace("name: demo-status", f"name: demo-{location}").replace(
            "    new: writer\n", f"    new: {{role: writer, location: {location}}}\n"))
        assert uwf("workflow", "put", str(wf)).code == 0
        thread = uwf("thread", "start", f"demo-{location}", "-p", "go", "-w", str(workspace)).json()["thread"]
        head = uwf("thread", "show", thread).json()["head"]
        result = uwf("thread", "step", thread, "--agent", "true")
        assert result.code == 1 and message in result.err, result
        assert uwf("thread", "show", thread).json()["head"] == head


# -- 5. one nesting limit ----------------------------------------------------------------------------


def test_a_payload_deeper_than_the_limit_is_refused_at_put_never_stored_unreadable(uwf, root_dir):
    schema = uwf("cas", "put", "meta", '{"type": "array"}').out.strip()
    deep = "[" * 400 + "]" * 400
    result = uwf("cas", "put", schema, "-", input=deep)
    assert result.code == 1 and "deeper than 200 levels" in result.err
    at_limit = "[" * 200 + "]" * 200
    stored = uwf("cas", "put", schema, "-", input=at_limit)
    assert stored.code == 0, stored
    assert uwf("cas", "get", stored.out.strip(), "--payload").code == 0  # what is stored reads back
    assert uwf("cas", "fsck").code == 0


# -- 6. say why ---------------------------------------------------------------------------------------


def test_nan_infinity_and_lone_surrogates_are_refused_saying_why(store):
    from uwf_core.errors import ValidationError
    from uwf_core.store.builtin_schemas import BUILTIN_HASHES

    store.ensure_builtins()
    for value, reason in ((float("inf"), "uwf refuses NaN and ±Infinity"), ("\ud800", "lone surrogate")):
        with pytest.raises(ValidationError, match=reason):
            store.put(BUILTIN_HASHES["detail"], {"usage": {"x": value}})


def test_the_cli_says_why_it_refuses_infinity(uwf):
    schema = uwf("cas", "put", "meta", '{"type": "number"}').out.strip()
    result = uwf("cas", "put", schema, "Infinity")
    assert result.code == 1 and "Infinity is not a JSON number (uwf refuses NaN and ±Infinity)" in result.err


def _errors(path: str) -> list[str]:
    draft = lint_file(path)
    return [problem.format(draft.document) for problem in draft.errors]


def _problems(path: str) -> list:
    return lint_file(path).problems


# -- the reference's words at the start of its errors (users search for them) --------------------


def test_a_role_with_no_transitions_is_named_in_the_references_words():
    graph = {START: [{"role": "planner", "condition": None}], "planner": [{"role": "developer", "condition": None}]}
    with pytest.raises(ModeratorError) as info:
        evaluate(_workflow(graph, {}), _context(("planner", {}), ("developer", {})))
    assert info.value.message.startswith('no transitions defined for role "developer": ')
    assert "workflow 'demo' has no routes from it" in info.value.message


def test_an_invalid_payload_and_an_invalid_schema_say_so_in_the_references_words(uwf):
    from uwf_core.store.builtin_schemas import BUILTIN_HASHES

    result = uwf("cas", "put", "content", "5")
    assert result.code == 1
    assert result.err.startswith(f"uwf: error: Validation failed for schema {BUILTIN_HASHES['content']}: ")
    assert "does not match its schema: at $: 5 is not of type 'string'" in result.err  # uwf's detail after them
    result = uwf("cas", "put", "meta", '{"type": "strng"}')
    assert result.code == 1 and result.err.startswith("uwf: error: Invalid schema: "), result
    assert "must be one of" in result.err
