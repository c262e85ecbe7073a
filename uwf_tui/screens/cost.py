"""The cost view (`$`): a thread's ledger as `uwf thread cost` prints it (each step's tokens,
cost and time, the totals, the roll-ups by agent, model and role, its budget), then its fork
subtree as `uwf thread cost --tree` does (every thread forked from it, each step counted once)."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

from uwf_core.api import Repo, thread_cost, thread_cost_text, tree_cost, tree_cost_text

from .report import ReportScreen


def ledgers(repo: Repo, thread: str) -> tuple:
    """Both reads in the report's worker: a long thread's ledger is a second of work."""
    return thread_cost(repo, thread), tree_cost(repo, thread)


class CostScreen(ReportScreen):
    def __init__(self, repo: Repo, thread: str, label: str) -> None:
        heading = Text.assemble(("Cost  ", "bold"), (f"{label}   ", "bold"), ("(esc back)", "dim"))
        super().__init__(repo, ledgers, (thread,), heading)

    def render_report(self, report) -> list[Widget]:
        ledger, tree = report
        # Literal text: role, agent and model names come from workflows and config files.
        return [Static(Text(thread_cost_text(ledger)), classes="cost-thread"), Static(Text(tree_cost_text(tree)), classes="diff-body")]
