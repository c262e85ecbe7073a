"""thread/diff.py's pure parts: the structural JSON diff and the text diff."""

from __future__ import annotations

from uwf_core.thread.diff import ADDED, CHANGED, REMOVED, Change, structural_diff, text_diff


def test_equal_values_have_no_changes():
    value = {"a": [1, {"b": None}], "c": "x"}
    assert structural_diff(value, {"c": "x", "a": [1, {"b": None}]}) == []


def test_mappings_key_by_key_in_a_then_b_order():
    changes = structural_diff({"keep": 1, "gone": True, "edit": "x"}, {"edit": "y", "keep": 1, "new": [1]})
    assert changes == [
        Change("gone", REMOVED, True, None),
        Change("edit", CHANGED, "x", "y"),
        Change("new", ADDED, None, [1]),
    ]


def test_nested_paths_lists_by_index_and_odd_keys():
    a = {"plan": {"steps": ["one", "two", "three"]}, "$status": "draft", "with space": 1}
    b = {"plan": {"steps": ["one", "2"]}, "$status": "done", "with space": 2}
    assert [(c.path, c.kind) for c in structural_diff(a, b)] == [
        ("plan.steps[1]", CHANGED),
        ("plan.steps[2]", REMOVED),
        ("$status", CHANGED),
        ('["with space"]', CHANGED),
    ]


def test_types_matter_but_json_numbers_are_numbers():
    assert structural_diff({"n": 1}, {"n": 1.0}) == []
    assert structural_diff({"n": 1}, {"n": True}) == [Change("n", CHANGED, 1, True)]
    assert structural_diff({"n": "1"}, {"n": 1}) == [Change("n", CHANGED, "1", 1)]
    assert structural_diff({"n": {}}, {"n": []}) == [Change("n", CHANGED, {}, [])]
    assert structural_diff([1], {"a": 1}) == [Change("", CHANGED, [1], {"a": 1})]


def test_change_json_leaves_out_the_missing_side():
    assert Change("x", ADDED, None, 2).to_json() == {"path": "x", "kind": "added", "b": 2}
    assert Change("x", REMOVED, 1, None).to_json() == {"path": "x", "kind": "removed", "a": 1}


def test_text_diff_is_unified_and_empty_when_equal():
    assert text_diff("same\n", "same\n") == ()
    lines = text_diff("one\ntwo\n", "one\n2\n", "a/X", "b/Y")
    assert lines[:2] == ("--- a/X", "+++ b/Y")
    assert "-two" in lines and "+2" in lines
