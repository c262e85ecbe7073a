"""Plain-text golden files for the pure renderers: the workflow graph drawing,
`uwf workflow graph` text and Mermaid, and `uwf thread read` of the fixed root.
Regenerate after an intended change with UWF_UPDATE_SNAPSHOTS=1."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixed_root import EXAMPLES, build_fixed_root  # noqa: E402

from uwf_core.repo import Repo  # noqa: E402
from uwf_core.workflow.graph_text import render_mermaid, render_text  # noqa: E402
from uwf_core.workflow.ops import load_workflow, put_workflow  # noqa: E402
from uwf_tui.widgets.graph_layout import render_graph  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden"
WORKFLOWS = ["solve-issue", "triage-bug", "analyze-topic", "develop"]


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UWF_UPDATE_SNAPSHOTS") or not path.exists():
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
        if not os.environ.get("UWF_UPDATE_SNAPSHOTS"):
            pytest.fail(f"wrote a new golden file {path}; check it in and run again")
    assert text == path.read_text()


@pytest.fixture(scope="module")
def examples_root(tmp_path_factory):
    root = Repo.open(str(tmp_path_factory.mktemp("golden") / "root"))
    for name in WORKFLOWS:
        put_workflow(root, str(EXAMPLES / f"{name}.yaml"))
    return root


@pytest.mark.parametrize("name", WORKFLOWS)
def test_graph_drawing(examples_root, name):
    check(f"{name}.graph.txt", render_graph(load_workflow(examples_root, name)))


@pytest.mark.parametrize("name", WORKFLOWS)
def test_graph_text_and_mermaid(examples_root, name):
    workflow = load_workflow(examples_root, name)
    check(f"{name}.text.txt", render_text(workflow))
    check(f"{name}.mermaid.txt", render_mermaid(workflow))


def test_every_role_and_edge_label_is_drawn(examples_root):
    from uwf_core.workflow.graph_text import edges

    for name in WORKFLOWS:
        workflow = load_workflow(examples_root, name)
        drawing = render_graph(workflow)
        for role in workflow.roles:
            assert f"│ {role} │" in drawing
        for _, _, label in edges(workflow):
            assert label.removeprefix("$status=") in drawing


def test_thread_read(tmp_path, monkeypatch):
    from uwf_core.thread.read import read_thread

    monkeypatch.setenv("TZ", "UTC")
    ids = build_fixed_root(str(tmp_path / "root"))
    check("solve-issue.read.md", read_thread(Repo.open(str(tmp_path / "root")), ids["solve"]))
