"""The workflow graph drawing: no crossing a layered layout can avoid, and every label beside a
line of its own edge (counted on the drawing itself, for every example and a crowded graph)."""

from __future__ import annotations

import pytest
from fixed_root import EXAMPLES  # noqa: E402

from uwf_core.api import Repo, load_workflow, put_workflow
from uwf_tui.widgets.graph_layout import layout

EXAMPLE_NAMES = sorted(path.stem for path in EXAMPLES.glob("*.yaml") if not path.name.endswith(".script.yaml"))


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    root = Repo.open(str(tmp_path_factory.mktemp("graphs") / "root"))
    for name in EXAMPLE_NAMES:
        put_workflow(root, str(EXAMPLES / f"{name}.yaml"))
    return root


def crossings(canvas) -> int:
    """Cells where lines go through each other: a ┼, or a line of one edge meeting another's."""
    drawn = canvas.render()
    return drawn.count("┼") + canvas.conflicts


def label_distances(canvas) -> list[tuple[str, int, int]]:
    """For each label: how far its nearest cell of its own edge's lines is, and the nearest of
    any other edge's (a label reads with the line next to it)."""
    lines: dict[int, set[tuple[int, int]]] = {}
    labels: dict[int, list[tuple[int, int]]] = {}
    for cell, owner in canvas.owners.items():
        if cell in canvas.lines and canvas.kinds.get(cell) != "label":
            lines.setdefault(owner, set()).add(cell)
        elif canvas.kinds.get(cell) == "label":
            labels.setdefault(owner, []).append(cell)

    def distance(cells, targets) -> int:
        return min((abs(x - tx) + 2 * abs(y - ty) for x, y in cells for tx, ty in targets), default=999)

    found = []
    for owner, cells in labels.items():
        text = "".join(canvas.text[cell] for cell in sorted(cells, key=lambda cell: (cell[1], cell[0])))
        others = set().union(*(cells_ for number, cells_ in lines.items() if number != owner))
        found.append((text, distance(cells, lines.get(owner, set())), distance(cells, others)))
    return found


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_the_examples_are_drawn_without_crossings(examples, name):
    canvas = layout(load_workflow(examples, name))
    assert crossings(canvas) == 0, canvas.render()


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_each_label_sits_on_its_own_edge(examples, name):
    canvas = layout(load_workflow(examples, name))
    for label, own, other in label_distances(canvas):
        assert own <= 2, f"{label!r} is {own} cells from its edge:\n{canvas.render()}"
        assert own <= other, f"{label!r} is nearer another edge than its own:\n{canvas.render()}"


def test_triage_bug_has_every_status_on_its_edge(examples):
    labels = label_distances(layout(load_workflow(examples, "triage-bug")))
    assert sorted(label for label, _, _ in labels) == sorted(["new | resume", "confirmed", "needs-info", "not-a-bug", "answered", "fixed", "blocked"])


def test_a_crowded_graph_still_labels_every_edge_beside_it(tmp_path):
    """Six roles fanning out of a hub and looping back: crossings cannot all go, labels stay put."""
    roles = "abcdef"
    meta = '{type: object, properties: {"$status": {type: string, enum: [%s]}}, required: ["$status"]}'
    lines = ["name: fan", "description: a hub and six roles", "roles:"]
    for name, statuses in [*((role, "x, y") for role in roles), ("hub", ", ".join(roles))]:
        lines += [f"  {name}:", f"    description: {name}", "    goal: g", "    procedure: p", "    output: o", f"    meta: {meta % statuses}"]
    lines += ["graph:", "  $START: {new: hub, resume: hub}", "  hub: {" + ", ".join(f"{r}: {r}" for r in roles) + "}"]
    lines += [f"  {role}: {{x: $END, y: hub}}" for role in roles]
    path = tmp_path / "fan.yaml"
    path.write_text("\n".join(lines) + "\n")
    root = Repo.open(str(tmp_path / "root"))
    put_workflow(root, str(path))
    canvas = layout(load_workflow(root, "fan"))
    labels = label_distances(canvas)
    assert len(labels) == 1 + 6 * 3 and all(own <= 2 for _, own, _ in labels), canvas.render()
