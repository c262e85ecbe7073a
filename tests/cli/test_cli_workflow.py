"""`uwf workflow ...` black-box, through the real CLI in a subprocess (design §6, §12, §14)."""

from __future__ import annotations

import re

import pytest
from conftest import EXAMPLES, snapshot_tree
from node_file import hashes as stored_hashes
from workflow_texts import BASE, STATUS_BASE

from uwf_core.encoding.ids import is_hash

SOLVE = str(EXAMPLES / "solve-issue.yaml")
EXAMPLE_FILES = [str(EXAMPLES / name) for name in ("solve-issue.yaml", "analyze-topic.yaml", "triage-bug.yaml")]


def assert_one_line_error(result, code: int = 1) -> str:
    assert result.code == code, result
    assert "Traceback" not in result.err, result.err
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("uwf: error: "), result.err
    assert result.err.endswith("\n")
    return lines[0][len("uwf: error: ") :]


def _put_in_process(root_dir, path: str) -> dict:
    """Set-up only: register through the library (the CLI itself is what the tests exercise)."""
    from uwf_core.repo import Repo
    from uwf_core.workflow.ops import put_workflow

    result = put_workflow(Repo.open(str(root_dir)), path)
    return {"name": result.name, "hash": result.hash}


def _put(uwf, path: str) -> dict:
    result = uwf("workflow", "put", path)
    assert result.code == 0, result
    return result.json()


def _replace(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


# -- put ---------------------------------------------------------------------------------------


def test_put_prints_name_and_hash(uwf, root_dir):
    result = uwf("workflow", "put", SOLVE)
    assert result.code == 0, result
    data = result.json()
    assert set(data) == {"name", "hash"}
    assert data["name"] == "solve-issue"
    assert is_hash(data["hash"])
    assert data["hash"] in stored_hashes(root_dir)
    assert (root_dir / "registry.yaml").is_file()
    assert result.err == ""


def test_put_with_a_relative_path(uwf):
    result = uwf("workflow", "put", "examples/solve-issue.yaml")
    assert result.code == 0, result
    assert result.json()["name"] == "solve-issue"


def test_put_of_a_file_that_is_not_a_workflow_says_so_in_one_line(uwf, root_dir):
    result = uwf("workflow", "put", str(EXAMPLES / "solve-issue.script.yaml"))  # `uwf workflow put examples/*.yaml`
    assert result.code == 1 and result.err.count("\n") == 1
    assert "not a workflow: it has none of 'name', 'roles' and 'graph'" in result.err
    assert not (root_dir / "registry.yaml").exists()


def test_put_again_is_a_no_op(uwf, root_dir):
    first = _put(uwf, SOLVE)
    registry = (root_dir / "registry.yaml").read_bytes()
    nodes = snapshot_tree(root_dir)
    again = uwf("workflow", "put", SOLVE)
    assert again.code == 0, again
    assert again.json() == first
    assert (root_dir / "registry.yaml").read_bytes() == registry
    assert snapshot_tree(root_dir) == nodes
    assert "nothing changed" in again.err
    assert "Traceback" not in again.err


def test_put_is_deterministic_across_roots(uwf, tmp_path):
    first = _put(uwf, SOLVE)
    other = uwf("workflow", "put", SOLVE, env={"UWF_STORAGE_ROOT": str(tmp_path / "other-root")})
    assert other.json() == first


def test_put_with_root_option(uwf, tmp_path):
    other = tmp_path / "explicit-root"
    result = uwf("--root", str(other), "workflow", "put", SOLVE)
    assert result.code == 0, result
    assert (other / "registry.yaml").is_file()


def test_put_reports_warnings_on_stderr(uwf, tmp_path):
    path = tmp_path / "warn.yaml"
    path.write_text(_replace(BASE, "conditions:\n", 'conditions:\n  neverUsed:\n    description: x\n    expression: "true"\n'))
    result = uwf("workflow", "put", str(path))
    assert result.code == 0, result
    assert result.json()["name"] == "demo"
    assert result.err.startswith("uwf: warning: ")
    assert "neverUsed" in result.err


# -- list / show ------------------------------------------------------------------------------------


def test_list(uwf, root_dir):
    assert uwf("workflow", "list").json() == []
    puts = {}
    for path in EXAMPLE_FILES:
        data = _put_in_process(root_dir, path)
        puts[data["name"]] = data["hash"]
    result = uwf("workflow", "list")
    assert result.code == 0, result
    assert result.json() == [{"name": name, "hash": puts[name]} for name in sorted(puts)]


def test_show_by_name(uwf, root_dir):
    put = _put_in_process(root_dir, SOLVE)
    result = uwf("workflow", "show", "solve-issue")
    assert result.code == 0, result
    data = result.json()
    assert data["name"] == "solve-issue"
    assert data["description"] == "End-to-end issue resolution"
    assert data["maxSteps"] == 30
    assert list(data["roles"]) == ["planner", "developer", "reviewer"]
    for role in data["roles"].values():
        assert is_hash(role["meta"]), role["meta"]
        assert set(role) == {"description", "goal", "capabilities", "procedure", "output", "meta"}
    assert data["roles"]["planner"]["capabilities"] == ["issue-analysis", "planning"]
    assert data["conditions"] == {
        "notApproved": {"description": "Reviewer rejected the implementation", "expression": "steps[-1].output.approved = false"}
    }
    assert data["graph"]["$START"] == [{"role": "planner", "condition": None}]
    assert data["graph"]["reviewer"][0]["condition"] == "notApproved"
    assert data["graph"]["reviewer"][1] == {"role": "$END", "condition": None}
    # the meta hashes are schema nodes holding the role's schema
    schema = uwf("cas", "schema", "get", data["roles"]["reviewer"]["meta"]).json()
    assert schema["properties"]["approved"] == {"type": "boolean"}
    assert schema["title"] == "solve-issue.reviewer"
    assert uwf("workflow", "show", put["hash"]).json() == data


def test_show_by_hash_prefix(uwf, root_dir):
    put = _put_in_process(root_dir, SOLVE)
    by_name = uwf("workflow", "show", "solve-issue").json()
    for prefix in (put["hash"][:5], put["hash"][:9].lower(), put["hash"].lower()):
        result = uwf("workflow", "show", prefix)
        assert result.code == 0, result
        assert result.json() == by_name


def test_show_source_returns_the_original_yaml(uwf, root_dir):
    _put_in_process(root_dir, SOLVE)
    original = (EXAMPLES / "solve-issue.yaml").read_text(encoding="utf-8")
    result = uwf("workflow", "show", "solve-issue", "--source")
    assert result.code == 0, result
    assert original.endswith("\n")
    assert result.out == original


def test_show_source_of_an_old_version(uwf, tmp_path, root_dir):
    old = _put_in_process(root_dir, SOLVE)
    modified = tmp_path / "solve-modified.yaml"
    text = _replace((EXAMPLES / "solve-issue.yaml").read_text(), "description: End-to-end issue resolution", "description: Modified copy")
    modified.write_text(text)
    _put_in_process(root_dir, str(modified))
    assert uwf("workflow", "show", "solve-issue", "--source").out == text
    assert uwf("workflow", "show", old["hash"], "--source").out == (EXAMPLES / "solve-issue.yaml").read_text()


def test_show_a_node_that_is_not_a_workflow(uwf, root_dir):
    put = _put_in_process(root_dir, SOLVE)
    meta = uwf("workflow", "show", "solve-issue").json()["roles"]["planner"]["meta"]
    message = assert_one_line_error(uwf("workflow", "show", meta))
    assert "not a workflow" in message
    assert put["hash"] != meta


# -- history / rollback ----------------------------------------------------------------------------


@pytest.fixture
def two_versions(uwf, tmp_path, root_dir):
    old = _put_in_process(root_dir, SOLVE)
    modified = tmp_path / "solve-modified.yaml"
    modified.write_text(_replace((EXAMPLES / "solve-issue.yaml").read_text(), "description: End-to-end issue resolution", "description: Modified copy"))
    new = _put_in_process(root_dir, str(modified))
    assert new["name"] == old["name"] == "solve-issue"
    assert new["hash"] != old["hash"]
    return old["hash"], new["hash"]


def test_history_after_a_second_version(uwf, two_versions):
    old, new = two_versions
    result = uwf("workflow", "history", "solve-issue")
    assert result.code == 0, result
    data = result.json()
    assert data["name"] == "solve-issue"
    assert data["current"]["hash"] == new
    assert [version["hash"] for version in data["history"]] == [old]
    assert data["current"]["timestamp"] >= data["history"][0]["timestamp"]
    assert is_hash(data["current"]["source"]) and is_hash(data["history"][0]["source"])
    assert uwf("workflow", "show", "solve-issue").json()["description"] == "Modified copy"


def test_rollback_restores_the_old_hash(uwf, two_versions):
    old, new = two_versions
    result = uwf("workflow", "rollback", "solve-issue")
    assert result.code == 0, result
    assert result.json() == {"name": "solve-issue", "hash": old}
    history = uwf("workflow", "history", "solve-issue").json()
    assert history["current"]["hash"] == old
    assert [version["hash"] for version in history["history"]] == [new]
    assert uwf("workflow", "list").json() == [{"name": "solve-issue", "hash": old}]
    assert uwf("workflow", "show", "solve-issue").json()["description"] == "End-to-end issue resolution"
    assert uwf("workflow", "show", "solve-issue", "--source").out == (EXAMPLES / "solve-issue.yaml").read_text()


def test_rollback_to_a_named_version(uwf, two_versions):
    old, new = two_versions
    uwf("workflow", "rollback", "solve-issue")
    result = uwf("workflow", "rollback", "solve-issue", new[:6].lower())
    assert result.code == 0, result
    assert result.json() == {"name": "solve-issue", "hash": new}


def test_rollback_errors(uwf, root_dir, two_versions):
    before = snapshot_tree(root_dir)
    assert "no earlier version" in assert_one_line_error(uwf("workflow", "rollback", "solve-issue", "0000"))
    assert "no workflow named 'nope'" in assert_one_line_error(uwf("workflow", "rollback", "nope"))
    assert snapshot_tree(root_dir) == before


def test_rollback_without_history(uwf, root_dir):
    _put_in_process(root_dir, SOLVE)
    before = snapshot_tree(root_dir)
    assert "no earlier version" in assert_one_line_error(uwf("workflow", "rollback", "solve-issue"))
    assert snapshot_tree(root_dir) == before


def test_putting_the_old_version_again_moves_the_new_one_to_history(uwf, two_versions):
    old, new = two_versions
    assert _put(uwf, SOLVE)["hash"] == old
    history = uwf("workflow", "history", "solve-issue").json()
    assert history["current"]["hash"] == old
    assert [version["hash"] for version in history["history"]] == [new, old]


# -- graph / walk ----------------------------------------------------------------------------------


def test_graph_text(uwf, root_dir):
    _put_in_process(root_dir, SOLVE)
    result = uwf("workflow", "graph", "solve-issue")
    assert result.code == 0, result
    text = result.out
    assert "notApproved" in text
    assert "planner" in text and "developer" in text and "reviewer" in text
    assert "$START" in text and "$END" in text
    assert re.search(r"reviewer\s+--> developer\s+\[notApproved\]", text)
    assert "steps[-1].output.approved = false" in text


def test_graph_mermaid(uwf, root_dir):
    put = _put_in_process(root_dir, SOLVE)
    result = uwf("workflow", "graph", put["hash"][:6], "--mermaid")
    assert result.code == 0, result
    assert result.out.startswith("flowchart")
    assert '-->|"notApproved"|' in result.out
    assert "START --> r_planner" in result.out


def test_graph_of_a_status_map_workflow(uwf, root_dir):
    _put_in_process(root_dir, str(EXAMPLES / "triage-bug.yaml"))
    text = uwf("workflow", "graph", "triage-bug").out
    assert "$status=needs-info" in text
    assert "$status=not-a-bug" in text


def test_cas_walk_of_a_workflow_contains_every_role_meta(uwf, root_dir):
    put = _put_in_process(root_dir, SOLVE)
    shown = uwf("workflow", "show", "solve-issue").json()
    result = uwf("cas", "walk", put["hash"])
    assert result.code == 0, result
    walked = result.json()
    assert walked[0] == put["hash"]
    metas = {role["meta"] for role in shown["roles"].values()}
    assert len(metas) == 3
    assert metas <= set(walked)
    assert len(walked) == len(set(walked))
    assert set(uwf("cas", "refs", put["hash"]).json()) == metas


# -- every bad input: one line, exit 1, nothing changed ---------------------------------------------


BAD_INPUTS = {
    "yaml-syntax": (
        _replace(BASE, '    expression: "steps[-1].output.ok = false"', '    expression: "steps[-1].output.ok = false'),
        r"bad\.yaml:\d+: YAML syntax error",
    ),
    "missing-goal": (_replace(BASE, "    goal: Write things.\n", ""), r"bad\.yaml:4: roles\.writer: role 'writer' is missing 'goal'"),
    "unknown-role": (
        _replace(BASE, "    - {role: checker, condition: null}", "    - {role: chekcer, condition: null}"),
        r"bad\.yaml:\d+: graph\.writer\[0\]\.role: unknown role 'chekcer' \(did you mean 'checker'\?\)",
    ),
    "unknown-condition": (
        _replace(BASE, "condition: rejected}", "condition: rejectd}"),
        r"bad\.yaml:\d+: graph\.checker\[0\]\.condition: unknown condition 'rejectd' \(did you mean 'rejected'\?\)",
    ),
    "unreachable-role": (
        BASE.replace("  writer:\n    - {role: checker, condition: null}\n", "  writer:\n    - {role: $END, condition: null}\n")
        .replace("    - {role: writer, condition: rejected}\n", "")
        .replace("  $START:\n    - {role: writer, condition: null}", "  $START:\n    - {role: checker, condition: null}"),
        r"bad\.yaml:4: roles\.writer: role 'writer' is unreachable from \$START",
    ),
    "no-path-to-end": (
        _replace(BASE, "    - {role: $END, condition: null}", "    - {role: writer, condition: null}"),
        r"bad\.yaml:\d+: graph\.\$START: no path from '\$START' to \$END",
    ),
    "jsonata": (
        _replace(BASE, '"steps[-1].output.ok = false"', '"steps[-1].output.ok = = false"'),
        r"bad\.yaml:27: conditions\.rejected\.expression: condition 'rejected': JSONata syntax error: ",
    ),
    "schema-keyword": (
        _replace(BASE, "        text: {type: string}", "        text: {type: string, minLength: 1}"),
        r"bad\.yaml:9: roles\.writer\.meta: Invalid schema: meta\.properties\.text: keyword 'minLength' is not allowed",
    ),
    "schema-type": (
        _replace(BASE, "        text: {type: string}", "        text: {type: strng}"),
        r"bad\.yaml:9: roles\.writer\.meta: Invalid schema: meta\.properties\.text\.type: must be one of",
    ),
    "meta-not-object": (
        _replace(BASE, "      type: object\n      properties:\n        text: {type: string}\n      required: [text]\n", "      type: string\n"),
        r"bad\.yaml:9: roles\.writer\.meta: the output schema must have 'type: object'",
    ),
    "status-not-producible": (
        _replace(STATUS_BASE, "    bad: writer\n", "    bad: writer\n    ugly: writer\n"),
        r"bad\.yaml:\d+: graph\.checker\.ugly: role 'checker' cannot produce \$status 'ugly'",
    ),
    "start-without-new": (
        _replace(STATUS_BASE, "  $START:\n    new: writer", "  $START:\n    resume: writer"),
        r"bad\.yaml:\d+: graph\.\$START: a \$START status map needs a 'new' entry",
    ),
    "duplicate-key": (
        _replace(BASE, "    goal: Check things.\n", "    goal: Check things.\n    goal: Again.\n"),
        r"bad\.yaml:17: duplicate key 'goal' \(first on line 16\)",
    ),
    "empty": ("", r"bad\.yaml: the file is empty"),
    "not-a-mapping": ("- just\n- a list\n", r"bad\.yaml:1: a workflow must be a YAML mapping"),
}


@pytest.fixture
def populated_root(root_dir):
    """A root with a workflow already registered, so a bad put has a registry and CAS to disturb."""
    _put_in_process(root_dir, SOLVE)
    return root_dir


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_workflow_put_is_one_line_and_changes_nothing(uwf, populated_root, tmp_path, case):
    text, pattern = BAD_INPUTS[case]
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    before = snapshot_tree(populated_root)
    result = uwf("workflow", "put", str(path))
    message = assert_one_line_error(result)
    assert re.search(pattern, message), message
    assert result.out == ""
    assert snapshot_tree(populated_root) == before


def test_bad_workflow_put_on_a_fresh_root_writes_nothing(uwf, root_dir, tmp_path):
    for case in ("missing-goal", "jsonata", "schema-keyword", "empty"):
        text, pattern = BAD_INPUTS[case]
        path = tmp_path / "bad.yaml"
        path.write_text(text, encoding="utf-8")
        assert re.search(pattern, assert_one_line_error(uwf("workflow", "put", str(path))))
        assert snapshot_tree(root_dir) == {}, case


def test_bad_workflow_lint_exits_1(uwf, root_dir, tmp_path):
    for case in ("yaml-syntax", "unknown-role", "status-not-producible", "duplicate-key"):
        text, pattern = BAD_INPUTS[case]
        path = tmp_path / "bad.yaml"
        path.write_text(text, encoding="utf-8")
        result = uwf("workflow", "lint", str(path))
        assert result.code == 1, result
        assert "Traceback" not in result.err
        combined = result.out + result.err
        assert re.search(pattern, combined), combined
        assert snapshot_tree(root_dir) == {}


def test_missing_file(uwf, populated_root, tmp_path):
    before = snapshot_tree(populated_root)
    missing = tmp_path / "does-not-exist.yaml"
    message = assert_one_line_error(uwf("workflow", "put", str(missing)))
    assert message == f"{missing}: no such file"
    assert snapshot_tree(populated_root) == before


def test_directory_instead_of_a_file(uwf, populated_root, tmp_path):
    before = snapshot_tree(populated_root)
    assert "is a directory" in assert_one_line_error(uwf("workflow", "put", str(tmp_path)))
    assert snapshot_tree(populated_root) == before


def test_several_errors_are_summarized_on_one_line(uwf, root_dir, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(_replace(BASE, "    - {role: $END, condition: null}", "    - {role: writer, condition: null}"))
    message = assert_one_line_error(uwf("workflow", "put", str(path)))
    assert "more problems; see `uwf workflow lint`" in message
    lint = uwf("workflow", "lint", str(path))
    assert lint.code == 1
    assert len([line for line in lint.out.splitlines() if line.startswith("error: ")]) == 3


def test_lint_of_the_examples(uwf):
    for path in EXAMPLE_FILES:
        result = uwf("workflow", "lint", path)
        assert result.code == 0, result
        assert "error:" not in result.out


def test_unknown_workflow(uwf, populated_root):
    before = snapshot_tree(populated_root)
    for args in (("show", "no-such-workflow"), ("graph", "no-such-workflow"), ("history", "no-such-workflow"), ("show", "0000000000000")):
        message = assert_one_line_error(uwf("workflow", *args))
        assert "no workflow named" in message or "no node" in message
    assert snapshot_tree(populated_root) == before


def test_unknown_workflow_on_a_fresh_root(uwf, root_dir):
    assert "no workflow named 'solve-issue'" in assert_one_line_error(uwf("workflow", "show", "solve-issue"))
    assert snapshot_tree(root_dir) == {}


def test_usage_errors_exit_2(uwf, root_dir):
    for args in (("workflow", "put"), ("workflow", "put", "a.yaml", "b.yaml"), ("workflow", "frobnicate"), ("workflow", "graph", "x", "--bogus")):
        result = uwf(*args)
        assert result.code == 2, result
        assert "Traceback" not in result.err
        assert "usage:" in result.err
    assert snapshot_tree(root_dir) == {}


def test_bare_group_prints_help_and_exits_2(uwf):
    result = uwf("workflow")
    assert result.code == 2
    assert "put" in result.err and "rollback" in result.err


# -- damaged registry.yaml ----------------------------------------------------------------------------


@pytest.fixture
def registered_examples(root_dir):
    for path in EXAMPLE_FILES:
        _put_in_process(root_dir, path)
    return root_dir / "registry.yaml"


def _check_registry_refused(uwf, registry_path, expected_fragment=None):
    damaged = registry_path.read_bytes()
    for args in (("workflow", "list"), ("workflow", "put", SOLVE), ("workflow", "show", "solve-issue")):
        result = uwf(*args)
        message = assert_one_line_error(result)
        assert "registry.yaml cannot be read" in message, message
        assert "nothing was changed" in message
        if expected_fragment:
            assert expected_fragment in message, message
        assert registry_path.read_bytes() == damaged


def test_truncated_registry_mid_quoted_string(uwf, registered_examples):
    data = registered_examples.read_bytes()
    # cut inside a quoted hash at or after 40% of the file: the string is left unterminated
    start = data.index(b'hash: "', int(len(data) * 0.4)) + len(b'hash: "') + 5
    registered_examples.write_bytes(data[:start])
    assert registered_examples.read_bytes().rstrip().endswith(data[start - 5 : start])
    _check_registry_refused(uwf, registered_examples)


def test_truncated_registry_at_40_percent(uwf, registered_examples):
    data = registered_examples.read_bytes()
    registered_examples.write_bytes(data[: int(len(data) * 0.4)])
    # wherever 40% falls, the cut file must be refused or read as a clean subset, never crash
    result = uwf("workflow", "list")
    assert "Traceback" not in result.err
    if result.code != 0:
        _check_registry_refused(uwf, registered_examples)


@pytest.mark.parametrize("new", ['"not-a-hash"', "12345", "[]"])
def test_hand_edited_registry_with_a_non_hash_value(uwf, registered_examples, new):
    fragment = "is not a hash"
    text = registered_examples.read_text()
    current = re.search(r'hash: ("[0-9A-Z]{13}")', text).group(1)
    registered_examples.write_text(text.replace(f"hash: {current}", f"hash: {new}", 1))
    _check_registry_refused(uwf, registered_examples, fragment)


def test_hand_edited_registry_with_a_bad_timestamp(uwf, registered_examples):
    text = registered_examples.read_text()
    registered_examples.write_text(re.sub(r"timestamp: \d+", "timestamp: yesterday", text, count=1))
    _check_registry_refused(uwf, registered_examples, "is not a number")


def test_registry_that_is_not_a_mapping(uwf, registered_examples):
    registered_examples.write_text("- just\n- a list\n")
    _check_registry_refused(uwf, registered_examples)


def test_registry_with_bad_yaml(uwf, registered_examples):
    registered_examples.write_text("workflows: {unclosed: [\n")
    _check_registry_refused(uwf, registered_examples, "line ")


def test_hand_edited_registry_in_other_yaml_style_still_reads(uwf, registered_examples):
    listed = uwf("workflow", "list").json()
    flow = "workflows: {" + ", ".join(
        f"{item['name']}: {{hash: {item['hash']}, timestamp: 1, history: []}}" for item in listed
    ) + "}  # edited by hand\n"
    registered_examples.write_text(flow)
    assert uwf("workflow", "list").json() == listed


def test_registry_with_all_digit_hash_stays_a_string(uwf, registered_examples, root_dir):
    # an all-digit hash must survive a registry round trip as a string (design §4)
    text = registered_examples.read_text()
    current = re.search(r'"solve-issue":\n    hash: "([0-9A-Z]{13})"', text).group(1)
    registered_examples.write_text(text.replace(f'hash: "{current}"', 'hash: "0123456789012"', 1))
    listed = {item["name"]: item["hash"] for item in uwf("workflow", "list").json()}
    assert listed["solve-issue"] == "0123456789012"
    # an unquoted one too (hand-edited)
    registered_examples.write_text(registered_examples.read_text().replace('hash: "0123456789012"', "hash: 0123456789012"))
    listed = {item["name"]: item["hash"] for item in uwf("workflow", "list").json()}
    assert listed["solve-issue"] == "0123456789012"
    # and a put rewrites it quoted
    assert uwf("workflow", "put", SOLVE).code == 0
    assert 'hash: "0123456789012"' in registered_examples.read_text()
