"""The diff view (`m` marks a step, `D` compares the selected one with it): the two sides, their
common ancestor, then each pair of divergent steps side by side — role, agent, the routing taken
after it and why, tokens and cost, time, the structured output key by key — and the body as a
unified diff under the pair. Below 110 columns the sides stack (A above B)."""

from __future__ import annotations

import json

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.containers import Horizontal
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
            widgets.append(
                Horizontal(
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


def side_text(pair, name: str) -> Group:
    """One side of a pair: its facts (yellow where the other side's differ), then its output,
    key by key against the other side's (`~` changed, `-` only in A, `+` only in B). Grids, so a
    long value wraps in its own column."""
    step, other = (pair.a, pair.b) if name == "A" else (pair.b, pair.a)
    if step is None:
        return Group(Text.assemble((f"{name} ", "bold magenta"), (f"has no step {pair.number}: its chain ends before it.", "dim")))
    theirs = dict(facts(other)) if other is not None else {}
    table = _grid()
    for index, (label, value) in enumerate(facts(step)):
        differs = other is not None and label != "step" and theirs.get(label) != value
        table.add_row(Text(name if not index else "", style="bold magenta"), Text(label, style="bold"), Text(value, style="yellow" if differs else ""))
    if other is None:
        table.add_row("", Text("output", style="bold"), Text(f"(only in {name})", style="dim"))
        return Group(table, _output_grid([("", key, value, "red" if name == "A" else "green") for key, value in _items(step.output)]))
    if not pair.output:
        table.add_row("", Text("output", style="bold"), Text("the same", style="dim"))
        return Group(table)
    table.add_row("", Text("output", style="bold"), "")
    return Group(table, _output_grid([_change(change, name) for change in pair.output]))


def _grid() -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(width=1)
    table.add_column(width=FACT - 1)
    table.add_column(ratio=1, overflow="fold")
    return table


def _output_grid(rows: list[tuple[str, str, object, str]]) -> Table:
    """Output keys, one a row: (mark, path, value or ABSENT, colour)."""
    table = Table.grid(padding=(0, 1))
    table.add_column(width=3)
    table.add_column(width=1)
    table.add_column(ratio=1, overflow="fold")
    for mark, path, value, colour in rows:
        shown = Text("(absent)", style="dim") if value is ABSENT else Text(compact(value), style=colour)
        table.add_row("", Text(mark, style=f"bold {colour}"), Text.assemble((f"{path}: ", "bold"), shown))
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
