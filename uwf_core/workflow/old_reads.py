"""Conditions written for uwf's first meaning of $first / $last.

Before they returned the role's output, as the reference's findByRole does, uwf's returned the
whole step, so conditions read `$last('reviewer').output.approved`. Such a condition now reads a
field named `output` of the output, finds nothing and routes as if the field were missing: lint
warns when a workflow is put, and a step warns when it routes with one that is already stored.
"""

from __future__ import annotations

import re

from .model import Workflow

# `$first(...)` or `$last(...)` followed by `.output`: a textual look, no jsonata import (a step
# pays it); lint finds the same in the parsed expression (jsonata_expr.output_reads).
_OLD_READ = re.compile(r"\$(first|last)\s*\(\s*(?:(['\"])([^'\"]*)\2|[^)]*)\s*\)\s*\.\s*output\b")


def old_read_message(condition: str, function: str, role: str | None) -> str:
    call = f"${function}('{role}')" if role is not None else f"${function}(...)"
    whole = f"${function}Step" + call[len(function) + 1 :]
    return (
        f"condition '{condition}' reads {call}.output, but {call} is the role's output itself (as in the reference), "
        f"so this looks for a field named 'output' and routes as if it were missing: write {call}.<field>, "
        f"or {whole}.output.<field> for the whole step"
    )


def has_output_field(schema: object) -> bool:
    """A role whose own output has an `output` field reads it rightly as `$last('role').output`."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return isinstance(properties, dict) and "output" in properties


def stored_old_reads(workflow: Workflow, schema_of) -> list[str]:
    """The warnings for a stored workflow's conditions in the old form; `schema_of(role)` gives a
    role's output schema (None when unknown)."""
    found = []
    for name, condition in workflow.conditions.items():
        for match in _OLD_READ.finditer(condition.expression):
            role = match.group(3)
            if role is None or role not in workflow.roles or not has_output_field(schema_of(role)):
                found.append(old_read_message(name, match.group(1), role))
    return list(dict.fromkeys(found))
