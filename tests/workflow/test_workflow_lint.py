"""Lint at put time (design §6): every refusal names the file, the line and the field."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from conftest import EXAMPLES, snapshot_tree
from workflow_texts import BASE, STATUS_BASE  # noqa: E402

from uwf_core.errors import WorkflowError
from uwf_core.workflow.ops import lint_file, put_workflow


def _replace(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def _line_of(text: str, fragment: str) -> int:
    """The line holding `fragment` (which must be unique)."""
    lines = text.splitlines()
    matches = [number for number, line in enumerate(lines, 1) if fragment in line]
    assert len(matches) == 1, (fragment, matches)
    return matches[0]


def _role_line(text: str, role: str) -> int:
    """The `  role:` line under `roles:`."""
    lines = text.splitlines()
    start = lines.index("roles:")
    return lines.index(f"  {role}:", start) + 1


def _graph_line(text: str, key: str) -> int:
    """The `  key:` line under `graph:`."""
    lines = text.splitlines()
    start = lines.index("graph:")
    return next(number for number, line in enumerate(lines, 1) if number > start and line.startswith(f"  {key}:"))


@pytest.fixture
def write(tmp_path):
    def write(text: str, name: str = "wf.yaml"):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    return write


def _shown(path: str) -> str:
    """How messages name a file given by absolute path: relative to the working directory."""
    return os.path.relpath(path)


def _errors(path: str) -> list[str]:
    draft = lint_file(path)
    return [problem.format(draft.document) for problem in draft.errors]


def _warnings(path: str) -> list[str]:
    draft = lint_file(path)
    return [problem.format(draft.document) for problem in draft.warnings]


def _refused(root, path: str) -> str:
    """put_workflow refuses the file: the message, after checking that nothing was written."""
    root_dir = Path(root.location)
    before = snapshot_tree(root_dir)
    with pytest.raises(WorkflowError) as info:
        put_workflow(root, path)
    assert snapshot_tree(root_dir) == before
    message = str(info.value)
    assert "\n" not in message
    return message


# -- the valid baselines -----------------------------------------------------------------


def test_base_workflows_lint_clean(write):
    for text in (BASE, STATUS_BASE):
        draft = lint_file(write(text))
        assert draft.problems == []
        assert draft.workflow is not None


@pytest.mark.parametrize("name", ["solve-issue.yaml", "analyze-topic.yaml", "triage-bug.yaml"])
def test_examples_lint_without_errors(name):
    draft = lint_file(str(EXAMPLES / name))
    assert draft.errors == []
    assert draft.workflow is not None
    assert draft.workflow.name == name.removesuffix(".yaml")
    assert set(draft.schemas) == set(draft.workflow.roles)


def test_role_schema_gets_a_default_title(write):
    draft = lint_file(write(BASE))
    assert draft.schemas["writer"]["title"] == "demo.writer"
    assert draft.schemas["checker"]["title"] == "demo.checker"


def test_role_schema_keeps_its_own_title(write):
    text = _replace(BASE, "      properties:\n        text:", "      title: Writer output\n      properties:\n        text:")
    assert lint_file(write(text)).schemas["writer"]["title"] == "Writer output"


def test_default_max_steps_is_100(write):
    assert lint_file(write(BASE)).workflow.max_steps == 100


# -- YAML-level problems ---------------------------------------------------------------------


def test_yaml_syntax_error_names_file_and_line(write, root):
    text = _replace(BASE, '    expression: "steps[-1].output.ok = false"', '    expression: "steps[-1].output.ok = false')
    path = write(text)
    message = _refused(root, path)
    assert re.match(rf"^{re.escape(path)}:\d+: YAML syntax error: ", message) or re.match(
        rf"^{re.escape(_shown(path))}:\d+: YAML syntax error: ", message
    ), message


def test_yaml_syntax_error_line_is_the_offending_line(write, root):
    text = _replace(BASE, "    goal: Check things.\n", "    goal: Check things.\n      bad: [1, 2\n")
    path = write(text)
    message = _refused(root, path)
    assert "YAML syntax error" in message
    line = int(re.search(r"\.yaml:(\d+):", message).group(1))
    assert line == _line_of(text, "bad: [1, 2")


def test_duplicate_key_names_both_lines(write, root):
    text = _replace(BASE, "    goal: Check things.\n", "    goal: Check things.\n    goal: Again.\n")
    path = write(text)
    message = _refused(root, path)
    first = _line_of(text, "goal: Check things.")
    assert f":{first + 1}: duplicate key 'goal' (first on line {first})" in message
    assert os.path.basename(path) in message


def test_duplicate_top_level_key(write, root):
    text = BASE + "name: again\n"
    message = _refused(root, write(text))
    assert f":{len(text.splitlines())}: duplicate key 'name' (first on line 1)" in message


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_empty_file(write, root, text):
    path = write(text)
    message = _refused(root, path)
    assert message.endswith("the file is empty")
    assert os.path.basename(path) in message


def test_missing_file(tmp_path, root):
    path = str(tmp_path / "nope.yaml")
    message = _refused(root, path)
    assert message == f"{path}: no such file"


def test_directory_instead_of_file(tmp_path, root):
    message = _refused(root, str(tmp_path))
    assert "is a directory" in message


def test_not_utf8(tmp_path, root):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(BASE.replace("Demo", "D\xe9mo").encode("latin-1"))
    assert "not UTF-8" in _refused(root, str(path))


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "42\n"])
def test_document_that_is_not_a_mapping(write, root, text):
    assert "a workflow must be a YAML mapping" in _refused(root, write(text))


def test_two_documents(write, root):
    assert "YAML syntax error" in _refused(root, write(BASE + "---\nname: other\n"))


# -- role fields ---------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["goal", "description", "procedure", "output"])
def test_role_missing_a_field(write, root, field):
    lines = [line for line in BASE.splitlines(keepends=True)]
    writer_start = _role_line(BASE, "writer")
    # drop the writer's line for this field (the first occurrence after `writer:`)
    index = next(i for i, line in enumerate(lines) if i >= writer_start and line.startswith(f"    {field}:"))
    text = "".join(lines[:index] + lines[index + 1 :])
    path = write(text)
    message = _refused(root, path)
    assert message.startswith(f"{_shown(path)}:{writer_start}: roles.writer: role 'writer' is missing '{field}'")


def test_role_missing_meta(write, root):
    text = _replace(BASE, "    meta:\n      type: object\n      properties:\n        text: {type: string}\n      required: [text]\n", "")
    path = write(text)
    message = _refused(root, path)
    assert message.startswith(f"{_shown(path)}:{_role_line(text, 'writer')}: roles.writer: role 'writer' is missing 'meta'")


def test_unknown_role_field_with_suggestion(write, root):
    text = _replace(BASE, "    goal: Write things.", "    goal: Write things.\n    procedures: extra")
    path = write(text)
    message = _refused(root, path)
    assert message.startswith(f"{_shown(path)}:{_line_of(text, 'procedures: extra')}: roles.writer.procedures: unknown role field 'procedures'")
    assert "did you mean 'procedure'?" in message


def test_role_field_of_the_wrong_type(write, root):
    text = _replace(BASE, "    goal: Write things.", "    goal: [not, a, string]")
    path = write(text)
    message = _refused(root, path)
    assert message.startswith(f"{_shown(path)}:{_line_of(text, 'goal: [not, a, string]')}: roles.writer.goal: must be a string")


def test_capabilities_must_be_strings(write, root):
    text = _replace(BASE, "    goal: Write things.", "    goal: Write things.\n    capabilities: [1, 2]")
    path = write(text)
    message = _refused(root, path)
    assert message.startswith(f"{_shown(path)}:{_line_of(text, 'capabilities: [1, 2]')}: roles.writer.capabilities: must be a list of strings")


def test_invalid_role_name(write, root):
    text = _replace(BASE, "  checker:\n    description: Checks", "  $checker:\n    description: Checks")
    assert "'$checker' is not a valid role name" in _refused(root, write(text))


def test_unknown_top_level_field(write, root):
    text = _replace(BASE, "description: Demo workflow", "description: Demo workflow\nmaxStep: 3")
    message = _refused(root, write(text))
    assert ":3: maxStep: unknown field 'maxStep' (did you mean 'maxSteps'?)" in message


@pytest.mark.parametrize("value", ["0", "-1", "many", "2.5", "true"])
def test_max_steps_must_be_a_positive_integer(write, root, value):
    text = _replace(BASE, "description: Demo workflow", f"description: Demo workflow\nmaxSteps: {value}")
    assert ":3: maxSteps: must be a positive integer" in _refused(root, write(text))


@pytest.mark.parametrize("name", ["has space", "-dash", "sl/ash"])
def test_invalid_workflow_name(write, root, name):
    text = _replace(BASE, "name: demo", f"name: '{name}'")
    assert "is not a valid workflow name" in _refused(root, write(text))


# -- graph ------------------------------------------------------------------------------------------


def test_unknown_role_as_a_target_with_suggestion(write, root):
    text = _replace(BASE, "    - {role: checker, condition: null}", "    - {role: chekcer, condition: null}")
    path = write(text)
    message = _refused(root, path)
    line = _line_of(text, "role: chekcer")
    assert message.startswith(f"{_shown(path)}:{line}: graph.writer[0].role: unknown role 'chekcer' (did you mean 'checker'?)")


def test_unknown_role_as_a_graph_key(write, root):
    text = BASE + "  ghost:\n    - {role: $END, condition: null}\n"
    path = write(text)
    message = _refused(root, path)
    assert message.startswith(f"{_shown(path)}:{_graph_line(text, 'ghost')}: graph.ghost: unknown role 'ghost'")


def test_unknown_condition_with_suggestion(write, root):
    text = _replace(BASE, "condition: rejected}", "condition: rejectd}")
    path = write(text)
    message = _refused(root, path)
    line = _line_of(text, "condition: rejectd")
    assert message.startswith(f"{_shown(path)}:{line}: graph.checker[0].condition: unknown condition 'rejectd' (did you mean 'rejected'?)")


def test_role_unreachable_from_start(write, root):
    text = BASE.replace("  writer:\n    - {role: checker, condition: null}\n", "  writer:\n    - {role: $END, condition: null}\n")
    text = _replace(text, "    - {role: writer, condition: rejected}\n", "")
    text = _replace(text, "  $START:\n    - {role: writer, condition: null}", "  $START:\n    - {role: checker, condition: null}")
    path = write(text)
    message = _refused(root, path)
    assert message.startswith(f"{_shown(path)}:{_role_line(text, 'writer')}: roles.writer: role 'writer' is unreachable from $START")


def test_no_path_to_end(write, root):
    # writer <-> checker with no exit
    text = _replace(BASE, "    - {role: $END, condition: null}", "    - {role: writer, condition: null}")
    path = write(text)
    errors = _errors(path)
    assert errors == [
        f"{_shown(path)}:{_graph_line(text, '$START')}: graph.$START: no path from '$START' to $END: a thread there could never finish",
        f"{_shown(path)}:{_graph_line(text, 'writer')}: graph.writer: no path from 'writer' to $END: a thread there could never finish",
        f"{_shown(path)}:{_graph_line(text, 'checker')}: graph.checker: no path from 'checker' to $END: a thread there could never finish",
    ]
    message = _refused(root, path)
    assert message.startswith(errors[0])
    assert "(2 more problems; see `uwf workflow lint`)" in message


def test_role_with_no_outgoing_transitions(write, root):
    text = _replace(BASE, "  writer:\n    - {role: checker, condition: null}\n", "")
    path = write(text)
    message = _refused(root, path)
    assert "roles.writer: role 'writer' has no outgoing transitions" in message


def test_graph_key_with_empty_transitions(write, root):
    text = _replace(BASE, "  writer:\n    - {role: checker, condition: null}\n", "  writer: []\n")
    assert "graph.writer: role 'writer' has no outgoing transitions" in _refused(root, write(text))


def test_graph_without_start(write, root):
    text = _replace(BASE, "  $START:\n    - {role: writer, condition: null}\n", "")
    assert "graph: no '$START' entry" in _refused(root, write(text))


def test_end_cannot_have_transitions(write, root):
    text = BASE + "  $END:\n    - {role: writer, condition: null}\n"
    assert "graph.$END: '$END' cannot have outgoing transitions" in _refused(root, write(text))


def test_start_cannot_be_a_target(write, root):
    text = _replace(BASE, "    - {role: $END, condition: null}", "    - {role: $START, condition: null}")
    assert "'$START' cannot be a target" in _refused(root, write(text))


def test_transition_with_unknown_field(write, root):
    text = _replace(BASE, "    - {role: checker, condition: null}", "    - {role: checker, condition: null, when: x}")
    assert "graph.writer[0].when: unknown transition field 'when'" in _refused(root, write(text))


def test_bad_mustache_prompt(write, root):
    text = _replace(BASE, "    - {role: writer, condition: rejected}", '    - {role: writer, condition: rejected, prompt: "Fix {{#items}} it"}')
    path = write(text)
    message = _refused(root, path)
    assert f":{_line_of(text, 'Fix {{#items}}')}: graph.checker[0].prompt: Mustache template error" in message


# -- conditions --------------------------------------------------------------------------------------


def test_jsonata_syntax_error_names_the_condition(write, root):
    text = _replace(BASE, '"steps[-1].output.ok = false"', '"steps[-1].output.ok = = false"')
    path = write(text)
    message = _refused(root, path)
    line = _line_of(text, "expression:")
    assert message.startswith(f"{_shown(path)}:{line}: conditions.rejected.expression: condition 'rejected': JSONata syntax error: ")


@pytest.mark.parametrize("expression", ['"steps[-1].output.ok = "', '"(steps"', '"steps["', '"steps[-1].output.{"', "'\"abc'", '"}"'])
def test_other_jsonata_syntax_errors(write, root, expression):
    text = _replace(BASE, '"steps[-1].output.ok = false"', expression)
    assert "condition 'rejected': JSONata syntax error" in _refused(root, write(text))


@pytest.mark.parametrize("blank", ['""', '"   "'])
def test_empty_jsonata_expression_is_refused(write, root, blank):
    text = _replace(BASE, '"steps[-1].output.ok = false"', blank)
    message = _refused(root, write(text))
    assert "conditions.rejected.expression: condition 'rejected': the expression is empty" in message


def test_condition_missing_expression(write, root):
    text = _replace(BASE, '    expression: "steps[-1].output.ok = false"\n', "")
    path = write(text)
    message = _refused(root, path)
    assert message.startswith(f"{_shown(path)}:{_line_of(text, '  rejected:')}: conditions.rejected: missing field 'expression'")


def test_condition_as_a_bare_string(write):
    text = _replace(
        BASE,
        '  rejected:\n    description: Checker rejected\n    expression: "steps[-1].output.ok = false"',
        '  rejected: "steps[-1].output.ok = false"',
    )
    draft = lint_file(write(text))
    assert draft.errors == []
    assert draft.workflow.conditions["rejected"].expression == "steps[-1].output.ok = false"


# -- output schemas (meta) ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "property_text, fragment",
    [
        ("text: {type: string, minLength: 1}", "Invalid schema: meta.properties.text: keyword 'minLength' is not allowed"),
        ("text: {type: string, pattern: '^a'}", "Invalid schema: meta.properties.text: keyword 'pattern' is not allowed"),
        ("text: {type: strng}", "Invalid schema: meta.properties.text.type: must be one of string, number"),
        ("text: {type: [string, text]}", "Invalid schema: meta.properties.text.type: must be one of"),
        ("text: string", "Invalid schema: meta.properties.text: a schema must be an object"),
        ("text: {enum: []}", "Invalid schema: meta.properties.text.enum: must be a non-empty list"),
        ("text: {type: array, items: [{type: string}]}", "Invalid schema: meta.properties.text.items: a schema must be an object"),
    ],
)
def test_invalid_meta_schema(write, root, property_text, fragment):
    text = _replace(BASE, "        text: {type: string}", f"        {property_text}")
    path = write(text)
    message = _refused(root, path)
    line = _role_line(text, "writer") + 5  # the `meta:` line
    assert text.splitlines()[line - 1] == "    meta:"
    assert message.startswith(f"{_shown(path)}:{line}: roles.writer.meta: {fragment}"), message


def test_meta_with_a_disallowed_top_level_keyword(write, root):
    text = _replace(BASE, "      required: [text]", "      required: [text]\n      minProperties: 1")
    message = _refused(root, write(text))
    assert "roles.writer.meta: Invalid schema: meta: keyword 'minProperties' is not allowed" in message


@pytest.mark.parametrize(
    "meta, fragment",
    [
        ("      type: string\n", "the output schema must have 'type: object'"),
        ("      type: array\n      items: {type: string}\n", "the output schema must have 'type: object'"),
        ("      type: [object, 'null']\n", "the output schema must have 'type: object'"),
        ("      properties:\n        a: {type: string}\n", "the output schema must have 'type: object'"),
    ],
)
def test_meta_that_is_not_type_object(write, root, meta, fragment):
    text = _replace(BASE, "      type: object\n      properties:\n        text: {type: string}\n      required: [text]\n", meta)
    path = write(text)
    message = _refused(root, path)
    line = _role_line(text, "writer") + 5
    assert message.startswith(f"{_shown(path)}:{line}: roles.writer.meta: {fragment}")


@pytest.mark.parametrize("meta", ["    meta: a string\n", "    meta: [type, object]\n", "    meta: true\n"])
def test_meta_that_is_not_a_mapping(write, root, meta):
    text = _replace(BASE, "    meta:\n      type: object\n      properties:\n        text: {type: string}\n      required: [text]\n", meta)
    message = _refused(root, write(text))
    assert "roles.writer.meta: Invalid schema: meta: a schema must be an object" in message


# -- status maps -----------------------------------------------------------------------------------


def test_status_map_lints_clean(write):
    draft = lint_file(write(STATUS_BASE))
    assert draft.problems == []
    assert draft.workflow.graph["checker"].is_status_map


def test_status_the_schema_cannot_produce(write, root):
    text = _replace(STATUS_BASE, "    bad: writer\n", "    bad: writer\n    ugly: writer\n")
    path = write(text)
    message = _refused(root, path)
    line = _line_of(text, "ugly: writer")
    assert message.startswith(f"{_shown(path)}:{line}: graph.checker.ugly: role 'checker' cannot produce $status 'ugly' (its schema allows good, bad)")


def test_status_map_with_const_schema(write, root):
    text = _replace(STATUS_BASE, "        $status: {type: string, enum: [done]}", "        $status: {const: done}")
    assert lint_file(write(text)).errors == []
    text = _replace(text, "    done: checker", "    finished: checker")
    assert "role 'writer' cannot produce $status 'finished' (its schema allows done)" in _refused(root, write(text, "b.yaml"))


def test_status_map_for_a_role_without_status_property(write, root):
    text = _replace(STATUS_BASE, "        $status: {type: string, enum: [good, bad]}\n      required: [$status]", "        ok: {type: boolean}")
    message = _refused(root, write(text))
    assert "roles.checker.meta: role 'checker' is routed by $status but its meta has no '$status' property" in message


def test_status_property_must_be_a_string(write, root):
    text = _replace(STATUS_BASE, "        $status: {type: string, enum: [good, bad]}", "        $status: {type: integer, enum: [1, 2]}")
    assert "'$status' of role 'checker' must be a string" in _refused(root, write(text))


def test_start_status_map_without_new(write, root):
    text = _replace(STATUS_BASE, "  $START:\n    new: writer", "  $START:\n    resume: writer")
    path = write(text)
    message = _refused(root, path)
    assert message.startswith(
        f"{_shown(path)}:{_graph_line(text, '$START')}: graph.$START: a $START status map needs a 'new' entry, or no thread can start"
    )


def test_start_status_map_with_other_statuses(write, root):
    text = _replace(STATUS_BASE, "  $START:\n    new: writer", "  $START:\n    new: writer\n    restart: writer")
    assert "graph.$START.restart: $START statuses are 'new' and 'resume', not 'restart'" in _refused(root, write(text))


def test_status_map_warnings(write):
    # a status with no route, and a $status that is not required
    text = _replace(STATUS_BASE, "    bad: writer\n", "")
    text = _replace(text, "      required: [$status]\n", "")
    path = write(text)
    draft = lint_file(path)
    assert draft.errors == []
    warnings = _warnings(path)
    assert any("graph.checker: $status 'bad' of role 'checker' has no route" in w for w in warnings)
    assert any("roles.checker.meta: '$status' should be required" in w for w in warnings)


# -- warnings --------------------------------------------------------------------------------------


def test_shadowed_transition_after_a_null_fallback_warns(write):
    text = _replace(
        BASE,
        "    - {role: writer, condition: rejected}\n    - {role: $END, condition: null}",
        "    - {role: $END, condition: null}\n    - {role: writer, condition: rejected}",
    )
    path = write(text)
    assert _errors(path) == []
    assert _warnings(path) == [
        f"{_shown(path)}:{_line_of(text, 'role: writer, condition: rejected')}: graph.checker[1]: unreachable: an earlier transition has condition null and always matches"
    ]


def test_unused_condition_warns(write):
    text = _replace(BASE, "conditions:\n", 'conditions:\n  neverUsed:\n    description: x\n    expression: "true"\n')
    path = write(text)
    assert _errors(path) == []
    assert _warnings(path) == [f"{_shown(path)}:{_line_of(text, 'neverUsed:')}: conditions.neverUsed: condition 'neverUsed' is never used"]


def test_no_fallback_warns(write):
    text = _replace(BASE, "    - {role: $END, condition: null}", '    - {role: $END, condition: rejected}')
    path = write(text)
    assert _errors(path) == []
    assert any("graph.checker: no fallback transition" in w for w in _warnings(path))


def test_warnings_do_not_block_put(write, root):
    text = _replace(BASE, "conditions:\n", 'conditions:\n  neverUsed:\n    description: x\n    expression: "true"\n')
    result = put_workflow(root, write(text))
    assert result.name == "demo"
    assert result.changed
    assert len(result.warnings) == 1 and "neverUsed" in result.warnings[0]


# -- put_workflow ----------------------------------------------------------------------------------


def test_put_workflow_stores_roles_meta_as_schema_hashes(write, root, store):
    result = put_workflow(root, write(BASE))
    node = store.get(result.hash)
    assert node.payload["name"] == "demo"
    for role in ("writer", "checker"):
        meta = node.payload["roles"][role]["meta"]
        assert store.title_of(meta) == f"demo.{role}"
    assert store.schema(node.payload["roles"]["writer"]["meta"])["properties"] == {"text": {"type": "string"}}
    assert node.payload["maxSteps"] == 100
    assert node.payload["graph"]["checker"] == [{"role": "writer", "condition": "rejected"}, {"role": "$END", "condition": None}]


def test_put_workflow_twice_is_unchanged(write, root):
    path = write(BASE)
    first = put_workflow(root, path)
    second = put_workflow(root, path)
    assert first.hash == second.hash
    assert first.changed and not second.changed


def test_lint_collects_every_error_not_just_the_first(write):
    text = _replace(BASE, "condition: rejected}", "condition: rejectd}")
    text = _replace(text, "    - {role: checker, condition: null}", "    - {role: chekcer, condition: null}")
    errors = _errors(write(text))
    assert len(errors) == 2
    assert any("unknown role 'chekcer'" in e for e in errors)
    assert any("unknown condition 'rejectd'" in e for e in errors)


def test_meta_with_a_non_string_property_name_is_refused_cleanly(write, root):
    text = _replace(BASE, "        text: {type: string}", "        1: {type: string}")
    _refused(root, write(text))


@pytest.mark.parametrize("value", ["{type: string, const: 2024-01-01}", "{type: string, enum: [2024-01-01]}", "{const: !!binary aGVsbG8=}"])
def test_meta_with_a_non_json_value_is_refused_cleanly(write, root, value):
    text = _replace(BASE, "        text: {type: string}", f"        text: {value}")
    _refused(root, write(text))


def test_complex_mapping_key_is_refused_cleanly(write, root):
    _refused(root, write("? [a, b]\n: c\n"))


@pytest.mark.parametrize("status_schema", ["{type: string, enum: [good, bad, {a: 1}]}", "{const: [good]}"])
def test_status_enum_with_a_non_scalar_value_is_refused_cleanly(write, root, status_schema):
    text = _replace(STATUS_BASE, "        $status: {type: string, enum: [good, bad]}", f"        $status: {status_schema}")
    _refused(root, write(text))


# -- sizes: refused in one line, before the costly part ---------------------------------------------


def test_a_condition_too_long_is_refused_before_it_is_compiled(write, root):
    """A 2 MB condition took 30 s and 1 GB to compile before it was refused as a syntax error."""
    import time

    long = " and ".join(["steps[-1].output.ok = false"] * 2_000)
    text = _replace(BASE, 'expression: "steps[-1].output.ok = false"', f'expression: "{long}"')
    began = time.monotonic()
    message = _refused(root, write(text))
    assert f"condition 'rejected': {len(long):,} characters, more than a condition may have (10,000)" in message
    assert time.monotonic() - began < 5


def test_more_roles_than_a_workflow_may_have_are_refused_at_once(write, root):
    role = "  r{i}:\n    description: R\n    goal: G.\n    procedure: P.\n    output: O.\n    meta: {{type: object}}\n"
    many = "".join(role.format(i=i) for i in range(501))
    text = BASE.replace("roles:\n", "roles:\n" + many, 1)
    assert "roles: 503 roles, more than a workflow may have (500)" in _refused(root, write(text))  # and writer, checker


def test_a_workflow_file_past_a_megabyte_is_refused_before_it_is_parsed(write, root):
    text = BASE + "# " + "x" * 1_000_000 + "\n"
    assert "more than a workflow may have (1,000,000)" in _refused(root, write(text))


def test_a_bundled_condition_too_long_is_refused_when_it_would_run():
    """A workflow that came in a bundle was never linted: the limit holds where it is compiled."""
    from uwf_core.errors import UwfError
    from uwf_core.workflow.jsonata_expr import evaluate

    with pytest.raises(UwfError, match="more than a condition may have"):
        evaluate("$count(steps) > 0 or " * 600 + "true", {"steps": []})


def test_more_conditions_than_a_workflow_may_have_and_a_name_past_100_are_refused(write, root):
    many = "".join(f"  c{i}: 'true'\n" for i in range(501))
    text = BASE.replace("conditions:\n", "conditions:\n" + many, 1)
    assert "conditions: 502 conditions, more than a workflow may have (500)" in _refused(root, write(text))  # and rejected
    assert "is not a valid workflow name" in _refused(root, write(_replace(BASE, "name: demo", "name: " + "n" * 101)))
