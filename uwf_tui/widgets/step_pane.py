"""What one timeline row holds, in five tabs: the structured output, the body (or stderr), the
prompt the agent got, the detail node made readable (what the step cost first), and the files the
step changed (a highlighted diff)."""

from __future__ import annotations

import json

from rich.syntax import Syntax
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane

from ..formatting import attempt_mark, attempt_word, clock, literal, money, took, when
from .panes import active_scroll


NO_FILES = "No snapshot of the files: the thread has no workspace, or snapshots are off (workspace.snapshot)."


class StepPane(TabbedContent):
    def __init__(self, **kwargs) -> None:
        super().__init__(id="step-tabs", **kwargs)
        for label, name in (("Output", "output"), ("Body", "body"), ("Prompt", "prompt"), ("Detail", "detail"), ("Files", "files")):
            # compose_add_child is how TabbedContent takes its panes (what `with TabPane` does in a compose)
            self.compose_add_child(TabPane(label, VerticalScroll(Static("", id=f"step-{name}")), id=f"tab-{name}"))

    @property
    def scroll(self):
        """The active tab's scrollable body (what h/l and Enter focus)."""
        return active_scroll(self)

    def show(self, output="", body="", prompt="", detail="", files="") -> None:
        for name, value in (("output", output), ("body", body), ("prompt", prompt), ("detail", detail), ("files", files)):
            self.query_one(f"#step-{name}", Static).update(literal(value))  # prompts and bodies are agents' text

    def show_step(self, details, body: str, cost=None, files: str | None = None) -> None:
        """`cost`: the step's StepCost from the ledger, when it is known; `files`: what it changed."""
        self.show(
            Syntax(yaml_text(details.output), "yaml", word_wrap=True),  # in the schema's field order
            body,
            details.prompt or _no_prompt(details),
            detail_view(details, cost),
            Syntax(files, "diff", word_wrap=True) if files else Text(NO_FILES, style="dim"),
        )

    def show_start(self, start, workflow_name: str, files: str | None = None) -> None:
        """The StartNode, its workflow named (a hash alone says nothing), the hash beside it, and
        the files the thread began with."""
        payload = {**start.to_payload(), "workflow": f"{workflow_name} ({start.workflow})"}
        listing = Syntax(files, "diff", word_wrap=True) if files else Text(NO_FILES, style="dim")
        self.show(Syntax(yaml_text(payload), "yaml", word_wrap=True), start.prompt, files=listing)

    def show_thread_row(self, output, thread: str, what: str) -> None:
        """A row for another thread (a fork, a map's child): its summary, and in every other tab
        where that tab's content is (blank tabs read as nothing there)."""
        elsewhere = Text(f"{what} is thread {thread}: its steps have their own body, prompt, detail and files. Enter opens it.", style="dim")
        self.show(output, elsewhere, elsewhere, elsewhere, elsewhere)

    def show_attempt(self, attempt) -> None:
        self.show(attempt_view(attempt), attempt.stderr or "(no stderr recorded)", detail=attempt_detail(attempt))


def child_text(thread: str, result: dict) -> Text:
    """A map step's child: which item, how it ended, its last output or why it failed."""
    text = Text()
    text.append(f"Child {int(result.get('index', 0)) + 1} of the map step: thread {thread}. Enter opens it.\n\n", style="bold")
    if result.get("status") == "done":
        text.append("done; its last output:\n", style="cyan")
        text.append(yaml_text(result.get("output")))
    else:
        text.append(f"failed: {result.get('error', '')}\n", style="red")
    return text


def _no_prompt(details) -> str:
    if isinstance(details.detail, dict) and details.detail.get("protocol") == "python":
        return "(a python agent: it did not read ctx.prompt, so no prompt was built or stored)"
    return "(the agent did not record its prompt)"


def attempt_detail(attempt) -> Text:
    """A failed attempt has no detail node (nothing was written): its record in runs.jsonl, whole
    — a python agent's exception and traceback are its error and stderr."""
    text = Text()
    text.append("attempt (runs.jsonl; no detail node: the head did not move)\n", style="dim")
    text.append("error: ", style="bold")
    text.append(f"{attempt.error or attempt.status}\n", style="red")
    if attempt.stderr:
        text.append("\n")
        text.append(attempt.stderr.rstrip(), style="grey70")
    return text


def attempt_view(attempt) -> Text:
    """A failed attempt from runs.jsonl as a person reads it: what, when, how long, why."""
    text = Text()
    mark, style = attempt_mark(attempt.status)
    text.append(f"{mark} {attempt_word(attempt.status)}", style=style)
    text.append(f"   {when(attempt.startedAt)} → {clock(attempt.completedAt)} ({took(attempt.startedAt, attempt.completedAt) or '—'})\n\n")
    for label, value in (("role", attempt.role), ("agent", attempt.agent), ("head", f"{attempt.head} (it did not move)")):
        text.append(f"{label:<7}", style="bold")
        text.append(f"{value or '—'}\n")
    if attempt.status == "asking":  # not a failure: a person's to answer (the Inbox, i)
        text.append("asking ", style="bold")
        text.append(f"{attempt.error or attempt.status}\n", style="yellow")
    else:
        text.append("error  ", style="bold")
        text.append(f"{attempt.error or attempt.status}\n", style="red")
    text.append_text(contained_view(attempt))
    if attempt.outside is not None and not attempt.outside.empty:
        text.append("\n".join(attempt.outside.lines()) + "\n", style="grey70")
    if attempt.stderr:
        text.append("\nstderr (whole, in the Body tab):\n", style="dim")
        text.append("\n".join(attempt.stderr.strip().splitlines()[-12:]), style="grey70")
    return text


def yaml_text(value: object) -> str:
    """YAML whose lines are as long as their values: the pane wraps them to its width (PyYAML's
    own 80-column folding broke strings in odd places on a wide pane)."""
    import yaml

    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=2**31 - 1)


def detail_view(details, cost=None) -> Text:
    """The detail node made readable: what the step cost, agent, extract layer, usage, then each turn."""
    payload = details.detail if isinstance(details.detail, dict) else {"value": details.detail}
    text = Text()
    if cost is not None:
        text.append_text(cost_view(cost))
    run = getattr(details, "run", None)
    if run is not None:
        text.append_text(contained_view(run))
    text.append(f"detail {details.detail_hash} ({details.detail_type or 'untyped'})\n", style="dim")
    for key in ("agent", "protocol", "function", "call", "deadline", "model", "extract", "corrections", "child", "childThread"):
        if key in payload:
            text.append(f"{key}: ", style="bold")
            text.append(f"{payload[key]}\n")
    usage = payload.get("usage")
    if isinstance(usage, dict):
        text.append("tokens: ", style="bold")
        text.append(f"{usage.get('totalTokens', 0):,} ({usage.get('promptTokens', 0):,} prompt, {usage.get('completionTokens', 0):,} completion, {usage.get('requests', 0)} requests)\n")
    for turn in payload.get("turns") or []:
        if isinstance(turn, dict):
            _turn(text, turn)
    rest = {k: v for k, v in payload.items() if k != "turns"}
    text.append("\n")
    text.append(json.dumps(rest, indent=2, ensure_ascii=False), style="grey70")
    return text


def contained_view(run) -> Text:
    """How the attempt's agent ran, and what it wrote outside its workspace (design §16)."""
    text = Text()
    if run.containment:
        text.append("contained: ", style="bold")
        text.append(f"{run.containment}\n", style="green" if run.containment == "bubblewrap" else "yellow")
    outside = run.outside
    if outside is not None and not outside.empty:
        text.append("outside the workspace (Files tab): ", style="bold")
        counts = [f"{len(getattr(outside, name))} {label}" for name, label in
                  (("state", "in state copies"), ("writable", "in writable places"), ("git", "in .git's copy"),
                   ("refused", "refused"), ("warnings", "to review")) if getattr(outside, name)]
        text.append(", ".join(counts) + "\n", style="red" if outside.refused or outside.warnings else "")
    return text


def cost_view(cost) -> Text:
    """A step's line of the ledger: its tokens and cost, per model, or why they are unknown or 0."""
    text = Text()
    text.append("cost: ", style="bold")
    spend = cost.spend
    if cost.reused_from:
        text.append(f"0 tokens, reused the output of step {cost.reused_from} (no agent ran)\n", style="green")
        return text
    if not cost.recorded:
        text.append("? (its agent recorded no token usage)\n", style="dim")
        return text
    usage = spend.usage
    text.append(f"{spend.tokens:,} tokens ({usage.prompt_tokens:,} prompt, {usage.completion_tokens:,} completion), cost {money(spend.cost)}\n")
    for part in cost.parts:
        price = "no price in config.yaml" if part.cost is None else money(part.cost)
        text.append(f"  {part.model}: {part.usage.total_tokens or part.usage.prompt_tokens + part.usage.completion_tokens:,} tokens, {price}\n", style="dim")
    return text


def _turn(text: Text, turn: dict) -> None:
    if turn.get("role") == "tool":
        mark = "✓" if turn.get("ok") else "✗"
        text.append(f"  {mark} {turn.get('name')}: ", style="green" if turn.get("ok") else "red")
        text.append(f"{' '.join(str(turn.get('result', '')).split())[:200]}\n", style="dim")
        return
    for call in turn.get("toolCalls") or []:
        text.append(f"→ {call.get('name')}({str(call.get('arguments'))[:160]})\n", style="yellow")
    content = " ".join(str(turn.get("content") or "").split())
    if content:
        text.append(f"{turn.get('role')}: {content[:300]}\n")
