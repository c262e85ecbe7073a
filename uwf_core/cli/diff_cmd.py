"""`uwf diff A B`: two threads (or steps) side by side from their common ancestor.

Text for people (coloured on a terminal, through rich, imported only then), `--json` for scripts.
"""

from __future__ import annotations

import json
import sys

from .common import repo_of
from .output import emit_json

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from ..thread.diff import DiffStep, StepPair, ThreadDiff

COLUMN = 38  # width of each side's column in the side-by-side rows


def register(groups, common) -> None:
    parser = groups.add_parser(
        "diff",
        help="compare two threads or steps from their common ancestor",
        description="Compare two threads (or steps): their common ancestor in the fork tree, then each step after it "
        "side by side (role, agent, output key by key, body, routing, tokens, cost, time).",
        parents=[common],
    )
    parser.add_argument("a", metavar="A", help="a thread id, or a step (or StartNode) hash, or a unique prefix")
    parser.add_argument("b", metavar="B", help="the other one")
    parser.add_argument("--json", action="store_true", help="JSON instead of text")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour the text (default: on a terminal)")
    parser.set_defaults(handler=cmd_diff)


def cmd_diff(args) -> int:
    from ..thread.diff import diff_threads

    diff = diff_threads(repo_of(args), args.a, args.b)
    if args.json:
        emit_json(diff.to_json())
        return 0
    lines = diff_lines(diff)
    colour = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    if colour:
        from rich.console import Console
        from rich.text import Text

        console = Console(force_terminal=True, highlight=False, soft_wrap=True)
        for text, style in lines:
            console.print(Text(text, style=style or ""))
    else:
        sys.stdout.write("".join(text + "\n" for text, _ in lines))
    return 0


# -- the text, as (line, style) pairs: plain when written to a pipe --------------------------------


def diff_lines(diff: ThreadDiff) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for name, side in (("A", diff.a), ("B", diff.b)):
        what = f"thread {side.thread}" if side.thread else f"node {side.head}"
        out.append((f"{name}: {what} — {side.workflow_name}, head {side.head}, {side.steps} step{'s' if side.steps != 1 else ''}", "bold"))
    if diff.ancestor is None:
        out.append(("No common ancestor: the chains share no node; every step is compared from the first.", "yellow"))
    elif diff.ancestor_role:
        same = "step 1 is" if diff.shared == 1 else f"steps 1–{diff.shared} are"
        out.append((f"Common ancestor: step {diff.shared} ({diff.ancestor_role}) {diff.ancestor}; {same} the same on both sides.", None))
    else:
        out.append((f"Common ancestor: StartNode {diff.ancestor} ({diff.shared} step{'s' if diff.shared != 1 else ''} before it).", None))
    if diff.prompt:
        out.append(("", None))
        out.append(("Task prompt:", "bold"))
        out.extend(_unified(diff.prompt))
    if not diff.pairs:
        out.append(("", None))
        out.append(("No divergent steps: both end at the same node." if diff.a.head == diff.b.head else "No divergent steps.", None))
    for pair in diff.pairs:
        out.append(("", None))
        out.extend(_pair(pair))
    if diff.files is not None:
        out.append(("", None))
        count = len(diff.files)
        out.append((f"Files: {count} path{'s' if count != 1 else ''} differ" if count else "Files: the same", "bold"))
        out.extend(_unified(diff.files_text))
    return out


def _pair(pair: StepPair) -> list[tuple[str, str | None]]:
    a, b = pair.a, pair.b
    title = f"── step {pair.number} "
    out: list[tuple[str, str | None]] = [(title + "─" * max(0, 2 * COLUMN + 12 - len(title)), "bold cyan")]
    out.append((_row("", "A", "B"), "dim"))
    out.append(_fact("step", a and a.hash, b and b.hash))
    out.append(_fact("role", a and a.role, b and b.role))
    out.append(_fact("agent", a and a.agent, b and b.agent))
    out.append(_fact("routing", a and _routing(a), b and _routing(b)))
    out.append(_fact("why", a and (a.routing.reason or ""), b and (b.routing.reason or "")))
    out.append(_fact("tokens", a and _tokens(a), b and _tokens(b)))
    out.append(_fact("time", a and _seconds(a.duration_ms), b and _seconds(b.duration_ms)))
    if a is None or b is None:
        only, side = (a, "A") if b is None else (b, "B")
        out.append((f"  only in {side}: output {_compact(only.output, 200)}", "green" if side == "B" else "red"))
        return out
    if pair.output:
        out.append(("  output:", None))
        for change in pair.output:
            path = change.path or "(the whole output)"
            if change.kind == "added":
                out.append((f"    + {path}: {_compact(change.b)}", "green"))
            elif change.kind == "removed":
                out.append((f"    - {path}: {_compact(change.a)}", "red"))
            else:
                out.append((f"    ~ {path}: {_compact(change.a)} → {_compact(change.b)}", "yellow"))
    else:
        out.append(("  output: the same", "dim"))
    if pair.body:
        out.append(("  body:", None))
        out.extend((f"    {text}", style) for text, style in _unified(pair.body))
    else:
        out.append(("  body: the same", "dim"))
    return out


def _unified(lines: tuple[str, ...]) -> list[tuple[str, str | None]]:
    out = []
    for line in lines:
        if line.startswith(("+++", "---")):
            out.append((line, "bold"))
        elif line.startswith("@@"):
            out.append((line, "cyan"))
        elif line.startswith("+"):
            out.append((line, "green"))
        elif line.startswith("-"):
            out.append((line, "red"))
        else:
            out.append((line, None))
    return out


def _fact(name: str, left: str | None, right: str | None) -> tuple[str, str | None]:
    left_text = "—" if left is None else left
    right_text = "—" if right is None else right
    style = None if left_text == right_text else "yellow"
    return _row(name, left_text, right_text), style


def _row(name: str, left: str, right: str) -> str:
    return f"  {name:<8}  {_fit(left):<{COLUMN}}  {_fit(right)}"


def _fit(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= COLUMN else text[: COLUMN - 1] + "…"


def _routing(step: DiffStep) -> str:
    routing = step.routing
    if routing.error:
        return f"error: {routing.error}"
    if routing.end_reason:
        return f"→ {routing.to} ({routing.end_reason})"
    return f"→ {routing.to}"


def _tokens(step: DiffStep) -> str:
    cost = "?" if step.cost is None else f"{step.cost:.4f}"
    reused = ", reused" if step.reused_from else ""
    tokens = "?" if step.tokens is None else f"{step.tokens:,}"
    return f"{tokens} (cost {cost}{reused})"


def _seconds(ms: int | None) -> str:
    return "?" if ms is None else f"{ms / 1000:.1f}s"


def _compact(value: object, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
