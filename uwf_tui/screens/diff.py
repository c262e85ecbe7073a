"""The diff view (`m` marks a step, `D` compares the selected one with it): the two sides, their
common ancestor, then each pair of divergent steps side by side — role, agent, the routing taken
after it and why, tokens and cost, time, the structured output key by key — and the body as a
unified diff under the pair. Side by side, a pair is one grid whose rows hold both sides, so a row
is as tall as its taller side and the rows stay level whatever wraps; below 110 columns the CSS
shows the stacked form instead (A above B). Both forms are drawn, so a resize needs no redraw."""

from __future__ import annotations

import json
from itertools import zip_longest

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from uwf_core.api import Repo, diff_threads

from ..formatting import money
from .report import ReportScreen

FACT = 8  # width of a side's fact labels (role, agent, …)


class DiffScreen(ReportScreen):
    def __init__(self, repo: Repo, a: str, b: str, a_label: str, b_label: str) -> None:
        # No segment starts with a space: SVG viewers drop a leading one (the screenshots).
        heading = Text.assemble(("Diff  ", "bold"), "A: ", (f"{a_label}  ", "bold"), "↔  B: ", (f"{b_label}   ", "bold"), ("(esc back)", "dim"))
        super().__init__(repo, diff_threads, (a, b), heading)

    def render_report(self, diff) -> list[Widget]:
        widgets: list[Widget] = [Static(sides_text(diff), classes="diff-ancestor")]
        if diff.prompt:
            widgets.append(Static(unified(diff.prompt, "task prompt"), classes="diff-body"))
        if not diff.pairs:
            same = "both end at the same node" if diff.a.head == diff.b.head else "one side is the other's history"
            widgets.append(Static(Text(f"No divergent steps: {same}.", style="dim"), classes="diff-body"))
        for pair in diff.pairs:
            widgets.append(Static(pair_title(pair), classes="diff-pair-title"))
            widgets.append(Static(pair_table(pair), classes="diff-pair"))
            widgets.append(
                Vertical(
                    Static(side_text(pair, "A"), classes="diff-side diff-a"),
                    Static(side_text(pair, "B"), classes="diff-side diff-b"),
                    classes="diff-sides",
                )
            )
            if pair.body:
                widgets.append(Static(unified(pair.body, "body"), classes="diff-body"))
            elif pair.a is not None and pair.b is not None:
                widgets.append(Static(Text("body: the same", style="dim"), classes="diff-body"))
        if diff.files is not None:
            count = len(diff.files)
            title = f"files: {count} path{'s' if count != 1 else ''} differ" if count else "files: the same"
            widgets.append(Static(unified(diff.files_text, title) if count else Text(title, style="dim"), classes="diff-body"))
        return widgets


def sides_text(diff) -> Text:
    """What each side is, and where they part."""
    text = Text()
    for name, side in (("A", diff.a), ("B", diff.b)):
        steps = f"{side.steps} step{'s' if side.steps != 1 else ''}"
        what = f"thread {side.thread} — {side.workflow_name}, {steps}, head {side.head}" if side.thread else f"node {side.head} — {side.workflow_name}, {steps} up to it"
        text.append(f"{name}  ", style="bold magenta")
        text.append(f"{what}\n")
    if diff.ancestor is None:
        text.append("No common ancestor: the chains share no node; every step is compared from the first.", style="yellow")
    elif diff.ancestor_role:
        same = "step 1 is" if diff.shared == 1 else f"steps 1–{diff.shared} are"
        text.append("Common ancestor: ", style="bold")
        text.append(f"step {diff.shared} ({diff.ancestor_role}) {diff.ancestor}; {same} the same on both sides.")
    else:
        text.append("Common ancestor: ", style="bold")
        text.append(f"the StartNode {diff.ancestor} ({diff.shared} step{'s' if diff.shared != 1 else ''} before it).")
    return text


def pair_title(pair) -> Text:
    if pair.a is None or pair.b is None:
        only = "A" if pair.b is None else "B"
        what = f"only in {only}"
    elif pair.identical:
        what = "the same on both sides"
    else:
        what = "differs"
    return Text.assemble((f"── step {pair.number} ", "bold cyan"), (f"({what}) ", "cyan"), ("─" * 40, "cyan"))


def facts(step) -> list[tuple[str, str]]:
    """A side's facts, in the order both sides show them."""
    routing = step.routing
    if routing.error:
        goes = f"error: {routing.error}"
    else:
        goes = f"→ {routing.to}" + (f" ({routing.end_reason})" if routing.end_reason else "")
    tokens = "?" if step.tokens is None else f"{step.tokens:,}"
    spent = f"{tokens} · cost {money(step.cost)}" + (f" · reused {step.reused_from}" if step.reused_from else "")
    time = "?" if step.duration_ms is None else f"{step.duration_ms / 1000:.1f}s"
    return [
        ("step", f"{step.number} · {step.hash}"),
        ("role", step.role),
        ("agent", step.agent),
        ("routing", goes),
        ("why", routing.reason or ""),
        ("tokens", spent),
        ("time", time),
    ]


def pair_table(pair) -> Table:
    """Both sides of a pair side by side in one grid, a row per fact and per output key: a row is
    as tall as its taller side, so a `why` or a value that wraps on one side keeps the rows below
    it level with the other side's."""
    table = Table.grid(padding=(0, 1), expand=True)  # a blank column between: a side may fill its half
    table.add_column(ratio=1)
    table.add_column(ratio=1)
    for mine, theirs in zip_longest(side_rows(pair, "A"), side_rows(pair, "B"), fillvalue=Text()):
        table.add_row(mine, theirs)
    return table


def side_text(pair, name: str) -> Group:
    """One side of a pair on its own (the stacked form)."""
    return Group(*side_rows(pair, name))


def side_rows(pair, name: str) -> list[RenderableType]:
    """One side of a pair, a row each: its facts (yellow where the other side's differ), then its
    output, key by key against the other side's (`~` changed, `-` only in A, `+` only in B). Both
    sides have the same rows in the same order, so row n of A faces row n of B."""
    step, other = (pair.a, pair.b) if name == "A" else (pair.b, pair.a)
    if step is None:
        return [Text.assemble((f"{name} ", "bold magenta"), (f"has no step {pair.number}: its chain ends before it.", "dim"))]
    theirs = dict(facts(other)) if other is not None else {}
    rows = []
    for index, (label, value) in enumerate(facts(step)):
        differs = other is not None and label != "step" and theirs.get(label) != value
        rows.append(_fact_row(Text(name if not index else "", style="bold magenta"), label, Text(value, style="yellow" if differs else "")))
    if other is None:
        rows.append(_fact_row(Text(), "output", Text(f"(only in {name})", style="dim")))
        return rows + [_key_row("", key, value, "red" if name == "A" else "green") for key, value in _items(step.output)]
    if not pair.output:
        return rows + [_fact_row(Text(), "output", Text("the same", style="dim"))]
    rows.append(_fact_row(Text(), "output", Text()))
    return rows + [_key_row(*_change(change, name)) for change in pair.output]


def _fact_row(mark: Text, label: str, value: Text) -> Table:
    """A fact: the side's name (on its first), the label, the value (folded in its own column)."""
    table = Table.grid(padding=(0, 1))
    table.add_column(width=1)
    table.add_column(width=FACT - 1)
    table.add_column(ratio=1, overflow="fold")
    table.add_row(mark, Text(label, style="bold"), value)
    return table


def _key_row(mark: str, path: str, value: object, colour: str) -> Table:
    """An output key: its mark, its path and its value (or ABSENT), folded under the path."""
    table = Table.grid(padding=(0, 1))
    table.add_column(width=3)
    table.add_column(width=1)
    table.add_column(ratio=1, overflow="fold")
    shown = Text("(absent)", style="dim") if value is ABSENT else Text(compact(value), style=colour)
    table.add_row(Text(), Text(mark, style=f"bold {colour}"), Text.assemble((f"{path}: ", "bold"), shown))
    return table


ABSENT = object()


def _change(change, name: str) -> tuple[str, str, object, str]:
    path = change.path or "(the whole output)"
    mine_missing = (change.kind == "added" and name == "A") or (change.kind == "removed" and name == "B")
    mark, colour = {"changed": ("~", "yellow"), "added": ("+", "green"), "removed": ("-", "red")}[change.kind]
    value = ABSENT if mine_missing else (change.a if name == "A" else change.b)
    return mark, path, value, "red" if name == "A" else "green"


def compact(value: object, limit: int = 400) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _items(output: object) -> list[tuple[str, object]]:
    if isinstance(output, dict):
        return [(str(key), value) for key, value in output.items()]
    return [("(the whole output)", output)]


def unified(lines: tuple[str, ...], what: str) -> Text:
    """A unified diff (of the bodies, of the task prompts) coloured line by line."""
    text = Text()
    text.append(f"{what}:\n", style="bold")
    for line in lines:
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        text.append(f"{line}\n", style=style)
    text.rstrip()
    return text
