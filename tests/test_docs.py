"""The documentation a user reads holds no leftovers of a merge."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MARKERS = ("<<<<<<< ", "=======\n", ">>>>>>> ")


@pytest.mark.parametrize("path", [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_no_merge_conflict_markers(path):
    lines = path.read_text().splitlines(keepends=True)
    found = [number for number, line in enumerate(lines, 1) if line.startswith(MARKERS)]
    assert not found, f"{path.name}: merge conflict markers at lines {found}"


def test_the_workflow_reference_names_every_schema_keyword_a_meta_may_use():
    from uwf_core.store.schemas import ALLOWED_KEYWORDS

    text = (REPO / "docs" / "reference" / "workflow-yaml.md").read_text()
    assert all(f"`{keyword}`" in text for keyword in ALLOWED_KEYWORDS), sorted(k for k in ALLOWED_KEYWORDS if f"`{k}`" not in text)
