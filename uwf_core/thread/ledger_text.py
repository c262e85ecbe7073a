"""A ledger as text a person reads: `uwf thread cost` prints it (`--json` gives scripts the same
data) and the workbench shows it (`$`)."""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from .model import is_check_role

if TYPE_CHECKING:
    from .ledger import ThreadCost, TreeCost
    from .spend import Spend


def money(value: float | None) -> str:
    """A cost as a plain number (the currency is whatever config.yaml's prices are in); "?" when unknown."""
    if value is None:
        return "?"
    return f"{value:.4f}" if value < 100 else f"{value:,.2f}"


def spend_line(spend: Spend) -> str:
    """`1,234 tokens (1,000 prompt, 234 completion), cost 0.0123` and what is unpriced."""
    usage = spend.usage
    text = f"{spend.tokens:,} tokens ({usage.prompt_tokens:,} prompt, {usage.completion_tokens:,} completion), cost {money(spend.cost)}"
    if spend.unpriced_tokens:
        text += (
            f" — {spend.unpriced_tokens:,} tokens of {', '.join(spend.unpriced_models)} have no price in config.yaml "
            f"(priced part: {money(spend.priced_cost)})"
        )
    if spend.unrecorded:
        text += f"; {spend.unrecorded} step{'s' if spend.unrecorded != 1 else ''} recorded no token usage (not counted)"
    if spend.reused:
        text += f"; {spend.reused} reused step{'s' if spend.reused != 1 else ''}"
    return text


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def _rollup(title: str, items: dict[str, Spend]) -> list[str]:
    if not items:
        return []
    rows = [["", "steps", "tokens", "cost"]]
    for name, spend in sorted(items.items(), key=lambda item: (-item[1].tokens, item[0])):
        rows.append([name, str(spend.steps), f"{spend.tokens:,}", money(spend.cost)])
    return ["", f"By {title}:", *_table(rows, {1, 2, 3})]


def _shared(count: int) -> str:
    return "its first step is shared history" if count == 1 else f"its first {count} steps are shared history"


def _seconds(ms: int | None) -> str:
    return "" if ms is None else f"{ms / 1000:.1f}s"


def thread_cost_text(ledger: ThreadCost) -> str:
    """`uwf thread cost` as text: one renderer, so the CLI and the workbench show the same table."""
    status = "active" if ledger.active else f"archived: {ledger.reason}"
    checks = sum(1 for step in ledger.steps if is_check_role(step.role))
    count = len(ledger.steps) - checks
    also = f" and {checks} check{'s' if checks != 1 else ''}" if checks else ""
    lines = [f"Thread {ledger.thread} — {ledger.workflow_name} ({status}), {count} step{'s' if count != 1 else ''}{also}"]
    if ledger.parent:
        lines.append(f"forked from {ledger.parent}: {_shared(ledger.inherited)}")
    if ledger.steps:
        rows = [["#", "role", "agent", "tokens", "cost", "time", ""]]
        for position, step in enumerate(ledger.steps, 1):
            mark = f"reused {step.reused_from}" if step.reused_from else ("(shared)" if position <= ledger.inherited else "")
            tokens = f"{step.spend.tokens:,}" if step.recorded else "?"
            number = "·" if is_check_role(step.role) else str(step.number)  # uwf's checks are not numbered steps
            rows.append([number, step.role, step.agent, tokens, money(step.spend.cost), _seconds(step.duration_ms), mark])
        lines += ["", *_table(rows, {0, 3, 4, 5})]
    lines += ["", f"Total: {spend_line(ledger.total)}"]
    if ledger.inherited:
        lines.append(f"Own steps: {spend_line(ledger.own)}")
    lines += _rollup("agent", ledger.by_agent)
    lines += _rollup("model", ledger.by_model)
    lines += _rollup("role", ledger.by_role)
    budget = ledger.budget
    if budget is not None:
        limits = ", ".join(
            part for part in (
                f"maxTokens {budget.max_tokens:,}" if budget.max_tokens is not None else "",
                f"maxCost {budget.max_cost:g}" if budget.max_cost is not None else "",
            ) if part
        )
        lines += ["", f"Budget ({budget.source}): {limits}; since the current start: {spend_line(budget.used)}"]
        if budget.exceeded:
            lines.append(f"  used up: {budget.exceeded}")
        elif budget.unpriced:
            lines.append(f"  cannot be checked: {budget.unpriced}")
        if budget.unrecorded:
            lines.append(f"  note: {budget.unrecorded}")
    if ledger.failed_attempts:
        lines += ["", f"Failed attempts: {ledger.failed_attempts} (their tokens are not recorded, so none are counted above)"]
    return "\n".join(lines) + "\n"


def tree_cost_text(tree: TreeCost) -> str:
    """`uwf thread cost --tree` as text: each fork's own steps, so shared history is counted once."""
    lines = [f"Fork subtree of {tree.root}: {len(tree.threads)} thread{'s' if len(tree.threads) != 1 else ''}, each step counted once", ""]
    rows = [["thread", "forked from", "at", "own steps", "tokens", "cost", ""]]
    for item in tree.threads:
        state = "active" if item.active else (item.reason or "done")
        rows.append([item.thread, item.parent or "-", item.fork_at or "-", str(item.own_steps), f"{item.own.tokens:,}", money(item.own.cost), state])
    lines += _table(rows, {3, 4, 5})
    lines += ["", f"Subtree total: {spend_line(tree.total)}"]
    if tree.inherited.steps:
        lines.append(f"History it was forked from ({tree.inherited.steps} steps, not in the total): {spend_line(tree.inherited)}")
    lines += _rollup("agent", tree.by_agent)
    lines += _rollup("model", tree.by_model)
    return "\n".join(lines) + "\n"
