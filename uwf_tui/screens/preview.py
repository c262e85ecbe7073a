"""The preview of a thread's next step (`p`), from `dry_run`: the role the moderator picks and why,
the agent and the rule that chose it, whether an earlier output would be reused or the budget
would stop the thread, and the prompt exactly as the agent would get it. Nothing is run and
nothing is written."""

from __future__ import annotations

import shlex

from rich.table import Table
from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

from uwf_core.api import Repo, dry_run

from ..formatting import budget_text
from .report import ReportScreen

LABEL = 9  # width of the fact labels


class PreviewScreen(ReportScreen):
    def __init__(self, repo: Repo, thread: str, label: str) -> None:
        heading = Text.assemble(("Preview ", "bold"), "the next step of ", (f"{label} ", "bold"), ("— nothing is run or written   (esc back)", "dim"))
        super().__init__(repo, dry_run, (thread,), heading)

    def render_report(self, run) -> list[Widget]:
        widgets: list[Widget] = [Static(summary_text(run), classes="preview-summary")]
        if run.prompt is not None:
            lines = run.prompt.count("\n") + 1
            widgets.append(Static(Text(f"── the prompt, exactly as the agent gets it ({lines} lines) ──", style="bold cyan"), classes="preview-rule"))
            widgets.append(Static(Text(run.prompt), id="preview-prompt"))  # a Text: the prompt's brackets are not markup
        return widgets


def summary_text(run) -> Table:
    """The decisions `uwf thread step` would make, a fact a row (a grid: long values wrap in place)."""
    table = Table.grid(padding=(0, 1))
    table.add_column(width=LABEL - 1, style="bold")
    table.add_column(ratio=1, overflow="fold")

    def fact(label: str, value: str, style: str = "") -> None:
        table.add_row(label, Text(value, style=style))

    decision = run.decision
    fact("thread", f"{run.thread} ({run.workflow_name}) · {run.steps} step{'s' if run.steps != 1 else ''} · head {run.head}")
    if run.outcome == "end":
        fact("next", f"the thread would end ({run.end_reason}): no agent runs", "bold yellow")
    elif run.outcome == "stop":
        fact("next", f"{decision.role}, but the thread would stop first ({run.end_reason})", "bold red")
    else:
        fact("role", decision.role, "bold cyan")
    why = decision.reason or "—"
    if run.forced:
        why = f"chosen here (--role), not by the moderator; {why}"
    elif decision.matched:
        why = f"{why} (matched: {decision.matched})"
    fact("why", f"from {decision.source}: {why}")
    if decision.instruction:
        fact("asked", decision.instruction)
    if run.agent is not None:
        agent = run.agent
        fact("agent", agent.label, "bold green")
        fact("chosen", agent.source)
        timeout = f", timeout {agent.timeout:g}s" if agent.timeout else ""
        fact("runs", f"{shlex.join(agent.argv)}  ({agent.protocol} protocol{timeout})")
        if run.outcome == "reuse":
            fact("reuse", f"on: the output of step {run.reuse_from} would be reused, no agent runs", "green")
        else:
            fact("reuse", "on, but no earlier step has the same inputs" if agent.reuse else "off")
    if run.agent_error:
        fact("problem" if run.agent is not None else "agent", run.agent_error, "bold red")
    if run.budget is not None:
        fact("budget", f"{budget_text(run.budget).removeprefix('budget ')} ({run.budget.source})", "bold red" if run.budget.exceeded else "")
    if run.running is not None:
        fact("running", f"a step is running now: {run.running.describe()}", "yellow")
    if run.note:
        fact("note", run.note, "yellow")
    return table
