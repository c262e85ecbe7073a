"""Snapshots of each view on the fixed demo root, compared as SVG.

The fixed root is deterministic (frozen clock, counted ids), so the only
thing that differs between two runs is Rich's generated element id, which
is normalised. After an intended UI change, regenerate the golden files:
UWF_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/tui/test_tui_snapshots.py
(and scripts/screenshots.py for the docs).
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

import pytest
from tui_capture import SIZE, SMALL, capture, normalize  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "snapshots"
VIEWS = ["workflows", "threads", "attempt", "cas", "help", "diff", "preview"]
SIZES = {"": SIZE, "-80x24": SMALL}  # golden file suffix -> terminal size


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    """Every view at 160x48 and at 80x24, keyed like the golden files ("threads", "threads-80x24")."""
    from inbox_capture import capture_inbox

    taken = {}
    for suffix, size in SIZES.items():
        for view, svg in capture(VIEWS, str(tmp_path_factory.mktemp("snapshots")), size=size).items():
            taken[f"{view}{suffix}"] = svg
        taken[f"inbox{suffix}"] = capture_inbox(str(tmp_path_factory.mktemp("inbox")), size)  # on a root of its own: two threads ask a person
    return taken


def _visible_text(svg: str) -> list[str]:
    """The text of each screen line, for a readable diff when a snapshot differs."""
    return [re.sub(r"<[^>]+>", "", line) for line in svg.split("<text") if "textLength" in line]


@pytest.mark.parametrize("view", [f"{view}{suffix}" for suffix in SIZES for view in [*VIEWS, "inbox"]])
def test_view_matches_snapshot(shots, view):
    svg = normalize(shots[view])
    golden = GOLDEN / f"{view}.svg"
    if os.environ.get("UWF_UPDATE_SNAPSHOTS") or not golden.exists():
        GOLDEN.mkdir(exist_ok=True)
        golden.write_text(svg)
        if not os.environ.get("UWF_UPDATE_SNAPSHOTS"):
            pytest.fail(f"wrote a new snapshot {golden}; check it in and run again")
    expected = golden.read_text()
    if svg != expected:
        diff = "\n".join(difflib.unified_diff(_visible_text(expected), _visible_text(svg), "golden", "now", lineterm="", n=0))
        pytest.fail(f"{view} differs from {golden.name}:\n{diff[:3000]}")
