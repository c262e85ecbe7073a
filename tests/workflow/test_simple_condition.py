"""The JSONata subset uwf evaluates itself gives JSONata's answers: random conditions of the
subset over random thread data, each evaluated both ways. Where the subset says "Unsupported"
the expression goes to JSONata, so only its definite answers are compared."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uwf_core.workflow.simple_condition import UNDEFINED, Unsupported, compile_condition

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-5, 5, allow_nan=False), st.sampled_from(["", "a", "b", "yes"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "approved", "n"]), inner, max_size=3), max_leaves=8)
outputs = st.dictionaries(st.sampled_from(["approved", "n", "a", "b", "items"]), values, max_size=4)
steps = st.lists(st.builds(lambda role, output: {"role": role, "output": output, "detail": "D" * 13, "agent": "x"},
                           st.sampled_from(["planner", "developer", "reviewer"]), outputs), max_size=5)

literal = st.one_of(st.sampled_from(["true", "false", "null", "''", '"a"', "'yes'", "0", "1", "2.5", "-1"]))
field = st.sampled_from(["approved", "n", "a", "b", "items", "`n`", "missing"])
path = st.one_of(
    st.builds(lambda i, fs: f"steps[{i}].output" + "".join(f".{f}" for f in fs), st.integers(-3, 2), st.lists(field, max_size=2)),
    st.builds(lambda fn, role, fs: f"${fn}('{role}').output" + "".join(f".{f}" for f in fs),
              st.sampled_from(["first", "last"]), st.sampled_from(["planner", "reviewer", "nobody"]), st.lists(field, max_size=2)),
    st.builds(lambda fs: "steps[-1]" + "".join(f".{f}" for f in fs) + "[0]", st.lists(field, max_size=2)),
    st.just("start.prompt"),
    st.just("steps[-1].role"),
)
comparison = st.builds(lambda a, op, b: f"{a} {op} {b}", path, st.sampled_from(["=", "!=", "<", ">=", ">"]), st.one_of(literal, path))
atom = st.one_of(path, comparison, st.builds(lambda x: f"$not({x})", st.one_of(path, comparison)))
conditions = st.recursive(atom, lambda inner: st.builds(lambda a, op, b: f"({a}) {op} ({b})", inner, st.sampled_from(["and", "or"]), inner), max_leaves=4)


def _jsonata(expression: str, data: dict, functions: dict):
    import jsonata

    compiled = jsonata.Jsonata(expression)
    compiled.register_lambda("first", functions["first"])
    compiled.register_lambda("last", functions["last"])
    return compiled.evaluate(data)


def _functions(data: dict) -> dict:
    def first(role):
        return next((s for s in data["steps"] if s["role"] == role), None)

    def last(role):
        return next((s for s in reversed(data["steps"]) if s["role"] == role), None)

    return {"first": first, "last": last}


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conditions, steps)
def test_the_subset_answers_as_jsonata_does(expression, thread_steps):
    node = compile_condition(expression)
    assert node is not None, expression  # everything generated is in the subset's grammar
    data = {"start": {"prompt": "fix it", "workspace": None}, "steps": thread_steps}
    functions = _functions(data)
    try:
        ours = node(data, functions)
    except Unsupported:
        return
    try:
        theirs = _jsonata(expression, data, functions)
    except Exception as exc:  # JSONata refused what the subset answered
        pytest.fail(f"{expression} over {json.dumps(thread_steps)}: subset said {ours!r}, JSONata raised {exc}")
    ours = None if ours is UNDEFINED else ours
    assert ours == theirs and type(ours) is type(theirs) or (isinstance(ours, (int, float)) and isinstance(theirs, (int, float)) and ours == theirs), (
        f"{expression} over {json.dumps(thread_steps)}: subset {ours!r}, JSONata {theirs!r}"
    )


@pytest.mark.parametrize(
    "expression",
    ["$count(steps)", "steps[role='x']", "$sum(steps[-1].output.n)", "steps[-1].output.n + 1", "$.steps[-1]",
     "steps[-1].output.a in ['x']", "$exists(steps[-1])", "steps[-1]['a']"],
)
def test_what_is_outside_the_subset_goes_to_jsonata(expression):
    assert compile_condition(expression) is None


def test_a_condition_of_the_subset_imports_no_jsonata():
    import subprocess
    import sys

    probe = (
        "import sys; from uwf_core.workflow.jsonata_expr import evaluate, steps_window; "
        "data = {'start': {}, 'steps': [{'role': 'r', 'output': {'approved': False}}]}; "
        "assert evaluate('steps[-1].output.approved = false', data) is True; "
        "assert steps_window('steps[-1].output.approved = false') == 1; "
        "print('jsonata' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip() == "False"
