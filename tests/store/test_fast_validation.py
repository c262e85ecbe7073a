"""The compiled check that spares a step importing jsonschema never accepts what jsonschema refuses
(property-based over the meta-schema's keyword subset), and it is what a valid put uses."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from uwf_core.store.schemas import _compile, _validator_for

TYPES = ["string", "integer", "number", "boolean", "object", "array", "null"]
scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from([0.0, 1.0, 1.5, -2.0]) | st.sampled_from(["", "a", "0ABCDEFGHJKMN", "zz"])
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3), max_leaves=8)


def schemas():
    leaf = st.one_of(
        st.builds(lambda t: {"type": t}, st.sampled_from(TYPES)),
        st.builds(lambda ts: {"type": ts}, st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)),
        st.builds(lambda e: {"enum": e}, st.lists(scalars, min_size=1, max_size=3)),
        st.builds(lambda c: {"const": c}, scalars),
        st.just({"type": "string", "format": "cas_ref"}),
        st.just({}),
    )

    def extend(inner):
        return st.one_of(
            st.builds(
                lambda props, req, extra: {"type": "object", "properties": props, "required": req, "additionalProperties": extra},
                st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
                st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True),
                st.one_of(st.booleans(), inner),
            ),
            st.builds(lambda items: {"type": "array", "items": items}, inner),
            st.builds(lambda subs: {"anyOf": subs}, st.lists(inner, min_size=1, max_size=3)),
            st.builds(lambda subs: {"oneOf": subs}, st.lists(inner, min_size=1, max_size=3)),
        )

    return st.recursive(leaf, extend, max_leaves=6)


@settings(max_examples=600, deadline=None)
@given(schemas(), values)
def test_the_fast_check_never_accepts_what_jsonschema_refuses(schema, value):
    if _compile(schema)(value):
        assert not list(_validator_for(schema, None).iter_errors(value)), (schema, value)


def test_a_valid_step_imports_no_jsonschema(tmp_path):
    code = (
        "import sys\n"
        "from uwf_core.api import Repo\n"
        "from uwf_core.store.builtin_schemas import BUILTIN_HASHES\n"
        f"repo = Repo.open({str(tmp_path)!r}); store = repo.nodes; store.ensure_builtins()\n"
        "store.put(BUILTIN_HASHES['detail'], {'agent': 'x', 'usage': {'a': 1}})\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def test_a_payload_failing_everywhere_gives_a_bounded_list_of_short_errors():
    """A hostile payload (a bundle's node of 200,000 wrong items) must not collect an error, and a
    repr of its value, for each."""
    from uwf_core.store.schemas import MAX_ERROR_CHARS, MAX_ERRORS, validation_errors

    schema = {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}}}
    errors = validation_errors(schema, {"items": [None] * 200_000})
    assert len(errors) == MAX_ERRORS
    assert errors[0].startswith("at $.items[0]:")
    assert all(len(error) <= MAX_ERROR_CHARS for error in errors)
    huge = validation_errors({"type": "string"}, ["x" * 100_000])
    assert len(huge) == 1 and huge[0].endswith("…")
