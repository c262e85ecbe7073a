"""One thread's timeline as table rows: the prompt, each step (role, agent, when it started, how
long, its tokens and cost, a summary), failed attempts and forks after the step they came from
(a fork with its subtree's total), and the step running now. "started" and "took" mean the same
on every row: uwf's own clock around the attempt (runs.jsonl), falling back to the StepNode's
times for a step with no run on record (a fork's). The tokens and cost column is there when the
terminal is wide (WIDE); below that a step's cost is in its Detail tab. The node marked with `m`
(to diff against) shows a ◆ before its role.

Row keys say what a row is: `start:HASH`, `step:HASH`, `attempt:HEAD:N`, `branch:THREAD`,
`child:THREAD` (a map step's child), `more:` (earlier steps not shown yet) and `running:`."""

from __future__ import annotations

import asyncio
import time

from rich.text import Text
from textual.widgets import DataTable

from uwf_core.api import MAP_AGENT, RunningStep, StepContext, Timeline, check_line, is_check_role

from ..formatting import (
    attempt_mark, attempt_word,
    tag,
    clock,
    cost_cell,
    duration,
    elapsed,
    money,
    spend_text,
    spinner,
    summary,
    tokens_short,
    took,
)
from .panes import RowTable

BATCH = 250  # rows added between two yields to the event loop (a whole window at once: one frame, not three)
WINDOW = 200  # the newest steps shown at first; the `more:` row above them shows more on Enter
WIDE = 110  # terminal columns from which the timeline has a tokens-and-cost column (the app's NARROW_COLUMNS)
# Then the output, as wide as the rest leaves; role and agent are as wide as their names (NAME at most).
COLUMNS = (("#", 3), ("role", None), ("agent", None), ("started", 8), ("took", 6), ("tokens cost", 11))
NAME = 12
LINE = 240  # the characters a one-line output or prompt keeps: more than the widest column shows
MARK = "◆ "


class TimelineTable(RowTable):
    """A thread's steps. Until the rows shown are those of the thread under the list's cursor
    (`shows_current`, which the view sets), no redraw is under way and its forks are known (their
    rows are drawn after the others), the keys that act on rows wait, in order, and act once the
    rows are there: in a burst like `j j enter k enter` the `k`
    moves up from the new thread's newest step, not in the rows of the thread shown before."""

    def __init__(self, **kwargs) -> None:
        super().__init__(id="timeline", cursor_type="row", **kwargs)
        self.filling = False
        self.forks_pending = False  # the rows are drawn, the fork rows among them not yet known
        self.shows_current = lambda: True
        self.waiting: list = []  # actions typed before the rows were there, oldest first
        self.running_since: int | None = None  # ms: when the running step began
        self.with_cost: bool | None = None  # whether the tokens-and-cost column is there (None: no columns yet)
        self.digits = 3  # the width of the `#` column
        self.roles: dict[str, Text] = {}  # row key -> its role cell unmarked (m redraws it)
        self.nodes: dict[str, str] = {}  # row key -> the node (or thread, for a fork) a mark names
        self.map_children: dict[str, dict] = {}  # a map step's child thread -> its result (index, status, output | error)
        self.mark: str | None = None
        self.drawn: Timeline | None = None  # the timeline whose rows are all on screen (None while they are drawn)
        self.filled_from = 0  # the first step shown when the rows were last drawn whole (extend adds below)
        self.forked_from: str | None = None  # the thread the shown one was forked from, when its row is shown
        self.lineages: dict = {}  # thread -> Lineage, as the thread list read them: whose fork a fork row is

    def on_mount(self) -> None:
        self._columns(self.wants_cost())

    def is_ready(self) -> bool:
        return not self.filling and not self.forks_pending and self.shows_current()

    def when_ready(self, action) -> None:
        """Run `action` now, or once the rows of the thread the keys are about are there."""
        if self.waiting or not self.is_ready():
            self.waiting.append(action)
        else:
            action()

    def after_keys(self, action) -> None:
        """Run `action` now, or after the keys still waiting for rows: a key that acts on the
        selection (s, r, x, K, q, D, p) acts on it as the burst's earlier keys leave it, jumps to
        another thread (Enter on a fork row) included."""
        if self.waiting:
            self.waiting.append(action)
        else:
            action()

    def ready(self, replay: bool = True) -> None:
        """Rows were drawn (or, with `replay` false, will not come): run what waited, in order,
        while they are the current thread's; an action that moves on to another thread (Enter
        on a fork row) holds the rest again."""
        if not replay:
            self.waiting.clear()
        while self.waiting and self.is_ready():
            self.waiting.pop(0)()

    def action_cursor_down(self) -> None:
        self.when_ready(super().action_cursor_down)

    def action_cursor_up(self) -> None:
        self.when_ready(super().action_cursor_up)

    def action_page_down(self) -> None:
        self.when_ready(super().action_page_down)

    def action_page_up(self) -> None:
        self.when_ready(super().action_page_up)

    def action_scroll_home(self) -> None:
        self.when_ready(super().action_scroll_home)

    def action_scroll_end(self) -> None:
        self.when_ready(super().action_scroll_end)

    def action_select_cursor(self) -> None:
        self.when_ready(super().action_select_cursor)

    def wants_cost(self) -> bool:
        return self.app.size.width >= WIDE

    def _columns(self, with_cost: bool, digits: int = 3) -> None:
        """The columns, with the cost column where the width allows and a `#` as wide as the
        thread's largest step number (10,000 does not show as 100)."""
        if (with_cost, digits) == (self.with_cost, self.digits):
            return
        self.clear(columns=True)
        self.with_cost, self.digits = with_cost, digits
        self.columns_by_label = {
            label: self.add_column(label, width=digits if label == "#" else width)
            for label, width in COLUMNS
            if with_cost or label != "tokens cost"
        }
        self.columns_by_label["output"] = self.add_flex_column("output")

    def _row(self, key: str, number: str, role: Text, agent, started: str, spent: str, cost, output, node: str | None = None) -> None:
        """One row; the cost cell only where the column is, the role marked when the row's node is."""
        self.roles[key] = role
        if node is not None:
            self.nodes[key] = node
        role_cell = self._marked(role) if node is not None and node == self.mark else role
        cells = [number, role_cell, agent, started, spent, *([cost] if self.with_cost else []), output]
        self.add_row(*cells, key=key)

    def _marked(self, role: Text) -> Text:
        return Text.assemble((MARK, "bold magenta"), role)

    def set_mark(self, node: str | None) -> None:
        """Show the ◆ on the rows of `node` (a step, a start, or a fork's thread) and on no other."""
        self.mark = node
        for key, marked in self.nodes.items():
            if key in self.rows:
                self.update_cell(key, self.columns_by_label["role"], self._marked(self.roles[key]) if marked == node else self.roles[key])

    async def fill(
        self, timeline: Timeline, running: RunningStep | None, running_here: bool, still_wanted, costs: dict | None = None
    ) -> str | None:
        """Rows in batches, yielding between them so keys are handled while a long thread loads.
        `costs`: step hash -> StepCost, for the rows shown. Returns the key of the newest row (None
        when `still_wanted()` turned false meanwhile)."""
        self.clear()
        self.drawn = None
        self._columns(self.wants_cost(), max(3, len(str(timeline.step_count))))
        self.roles, self.nodes, self.map_children = {}, {}, {}
        self.forked_from = parent_of(timeline)
        costs = costs or {}
        context = timeline.context
        prompt_line = " ".join(context.start.prompt.split())
        start_key = f"start:{context.start_hash}"
        self._row(start_key, "", Text("prompt", style="bold magenta"), "", "", "", "", prompt_line[:LINE], node=context.start_hash)
        self._add_extras(timeline, context.start_hash)
        # A long thread shows its newest steps (the timeline's window): rows (and the output nodes
        # their summaries read) stay bounded however long the chain.
        first = self.filled_from = timeline.first_shown
        if first:
            self._row("more:", "…", Text("earlier", style="dim"), "", "", "", "", more_text(first))
        for index, (number, step) in enumerate(timeline.numbered(), first + 1):
            if index % BATCH == 0:
                await asyncio.sleep(0)
                if not still_wanted():
                    return None
            self._step_row(timeline, number, step, costs)
            self._add_extras(timeline, step.hash, step)
        self._add_running(running, running_here)
        self.drawn = timeline
        return f"step:{context.steps[-1].hash}" if context.steps else f"start:{context.start_hash}"

    def extend(self, timeline: Timeline, running: RunningStep | None, running_here: bool, costs: dict) -> str | None:
        """The rows drawn are `drawn`'s, and `timeline` is the same thread a few steps on (or the
        same head, a step started, ended or failed): add what is new at the end instead of drawing
        every row again, so a commit on a 10,000-step thread is on screen at once. Returns the key
        of the newest row, or None when `timeline` is not such an extension (then fill)."""
        old = self.drawn
        if old is None or old.info.thread != timeline.info.thread or old.branches != timeline.branches:
            return None
        if timeline.first_shown < old.first_shown:
            return None  # more of the older steps are wanted: they go above the rows drawn
        if timeline.first_shown - self.filled_from > WINDOW:
            return None  # a long run: the rows drawn fall out of the window; drawn again, they stay bounded
        if self.with_cost != self.wants_cost() or self.digits != max(3, len(str(timeline.step_count))):
            return None
        numbered = timeline.numbered()
        hashes = [step.hash for _, step in numbered]
        head = old.info.head
        if head == timeline.info.head:
            added = []
        elif head in hashes:
            added = numbered[hashes.index(head) + 1 :]
        elif head == timeline.context.start_hash and head == old.context.start_hash:
            added = numbered
        else:
            return None
        shown_attempts = len(old.attempts.get(head, []))
        if len(added) > BATCH or (old.branches.get(head) and len(timeline.attempts.get(head, [])) > shown_attempts):
            return None  # many rows, or an attempt that belongs above a fork row: draw them all
        if "running:" in self.rows:
            self.remove_row("running:")
        self._add_attempts(timeline, head, shown_attempts)
        for number, step in added:
            self._step_row(timeline, number, step, costs)
            self._add_extras(timeline, step.hash, step)
        self._add_running(running, running_here)
        if "more:" in self.rows:
            self.update_cell("more:", self.columns_by_label["output"], more_text(timeline.first_shown))
        self.drawn = timeline
        return f"step:{hashes[-1]}" if hashes else f"start:{timeline.context.start_hash}"

    def _step_row(self, timeline: Timeline, number: int, step: StepContext, costs: dict) -> None:
        started, spent = step_times(timeline, step)
        cost = costs.get(step.hash)
        self._row(
            f"step:{step.hash}",
            "·" if is_check_role(step.role) else str(number),  # uwf's checks are not numbered steps
            Text(name(step.role), style="bold magenta" if is_check_role(step.role) else "bold cyan"),
            Text(name(step.agent), style="green" if step.agent != "human" else "bold yellow"),
            clock(started),
            spent,
            Text(*cost_cell(cost)) if cost is not None else "",
            _cut(check_line(step.role, step.output)) or summary(step.output, LINE),
            node=step.hash,
        )

    def _add_extras(self, timeline: Timeline, after: str, step: StepContext | None = None) -> None:
        self._add_attempts(timeline, after)
        if step is not None and step.agent == MAP_AGENT and isinstance(step.output, dict):
            self._add_children(step.output.get("results"))
        for branch in timeline.branches.get(after, []):
            kin = self.kin(timeline, branch)
            self._row(
                f"branch:{branch.thread}", "", Text(KIN_LABELS[kin], style="bold yellow"),
                name(branch.agent), Text(tag(branch.thread), style="yellow"),  # its tag where a step's time is: no column widens for it
                duration(branch.took_ms) if branch.took_ms is not None else "", "", branch_text(branch, kin=kin, of=self._fork_parent(branch)),
                node=branch.thread,
            )

    def kin(self, timeline: Timeline, branch) -> str:
        """What a thread that shares this one's history is to it: its parent, a fork of it, or a
        fork of another thread (a sibling, forked from the same parent, or further off), as the
        thread list's lineage says; a fork of it until that is read."""
        if branch.thread == self.forked_from:
            return "parent"
        parent = self._fork_parent(branch)
        if parent is None or parent == timeline.info.thread:
            return "fork"
        return "sibling" if parent == self.forked_from else "related"

    def _fork_parent(self, branch) -> str | None:
        lineage = self.lineages.get(branch.thread)
        return lineage.parent if lineage is not None else None

    def _add_children(self, results: object) -> None:
        """A map step's children, one row each (Enter opens the child's thread, as a fork's row does)."""
        for result in results if isinstance(results, list) else ():
            if not isinstance(result, dict) or not isinstance(result.get("thread"), str):
                continue
            done = result.get("status") == "done"
            line = summary(result.get("output"), LINE) if done else f"failed: {result.get('error', '')}"
            self.map_children[result["thread"]] = result
            self._row(
                f"child:{result['thread']}", "", Text(f"↳ child {int(result.get('index', 0)) + 1}", style="bold blue"),
                "", Text(tag(result["thread"]), style="blue"), "", "", Text(line[:LINE], style="" if done else "red"), node=result["thread"],
            )

    def _add_attempts(self, timeline: Timeline, after: str, first: int = 0) -> None:
        """The failed attempts from `after`, from its `first` on (those before are drawn)."""
        attempts = timeline.attempts.get(after, [])
        for index in range(first, len(attempts)):
            attempt = attempts[index]
            error = attempt.error or attempt.status
            mark, style = attempt_mark(attempt.status)
            self._row(
                f"attempt:{after}:{index}",
                "",
                Text(f"{mark} {name(attempt.role)}", style=style),
                name(attempt.agent),
                clock(attempt.startedAt),
                duration(attempt.durationMs),
                "",
                Text(f"{attempt_word(attempt.status)}: {error}"[:120], style=style.removeprefix("bold ")),
            )

    def show_subtree(self, branch, total) -> None:
        """A fork row's subtree total (`total`: a Spend), once the ledger has added it up."""
        key = f"branch:{branch.thread}"
        if key not in self.rows:
            return
        if self.with_cost:
            self.update_cell(key, self.columns_by_label["tokens cost"], Text(f"Σ{tokens_short(total.tokens)} {money(total.cost)}", style="yellow"))
        drawn = self.drawn
        kin = self.kin(drawn, branch) if drawn is not None else "fork"
        self.update_cell(key, self.columns_by_label["output"], branch_text(branch, total, kin=kin, of=self._fork_parent(branch)))

    def _add_running(self, running: RunningStep | None, here: bool) -> None:
        self.running_since = running.started_at if running is not None else None
        if running is None:
            return
        self._row(
            "running:",
            "▶",
            Text(name(running.role) or "…", style="bold green"),
            name(running.agent),
            clock(running.started_at),
            elapsed(time.time() - running.started_at / 1000) if running.started_at else "",
            "",
            Text(
                (f"running… {running.waiting} (x cancels)" if running.waiting else "running… (x cancels)") if here
                else f"running in another process: {running.describe()}", style="green",
            ),
        )

    def tick(self, tick: int) -> None:
        """Once a second: the running row's spinner and elapsed time, so a long step looks alive."""
        if "running:" not in self.rows:
            return
        self.update_cell("running:", self.columns_by_label["#"], Text(spinner(tick), style="bold green"))
        if self.running_since:
            self.update_cell("running:", self.columns_by_label["took"], elapsed(time.time() - self.running_since / 1000))

    def key_at_cursor(self) -> str | None:
        return row_at_cursor(self)


def name(text: str | None) -> str:
    """A role or agent name, cut to NAME characters (its column is as wide as the longest)."""
    text = text or ""
    return text if len(text) <= NAME else text[: NAME - 1] + "…"


def more_text(first: int) -> Text:
    return Text(f"{first:,} earlier step{'s' if first > 1 else ''}: enter shows {min(first, WINDOW):,} more", style="dim")


KIN_LABELS = {"parent": "↰ parent", "fork": "↳ fork", "sibling": "↔ sibling", "related": "↔ related"}


def branch_text(branch, total=None, *, kin: str = "fork", of: str | None = None) -> Text:
    """A fork row's text: its subtree's total first (what the fork and its own forks spent, each
    step once; `total` is a Spend, None until the ledger has it), then its state and whose it is:
    the thread this one was forked from, a fork of it, or a fork of another (`of`)."""
    state = "active" if branch.active else (branch.reason or "done")
    steps = f"{branch.own_steps} own step{'s' if branch.own_steps != 1 else ''}"
    subtree = f"subtree {spend_text(total)} · " if total is not None else ""
    said = f"{summary(branch.output, LINE)} · " if branch.output is not None else ""  # its first step's output: candidates compare at a glance
    whose = {"parent": f"forked from thread {branch.thread}", "fork": f"thread {branch.thread}"}.get(kin, f"thread {branch.thread}, a fork of {of}")
    return Text(f"{said}{subtree}{state}, {steps} · {whose}", style="yellow")


def parent_of(timeline: Timeline) -> str | None:
    """The thread this one was forked from, among the forks shown: of the older threads (ULIDs
    sort by creation) it shares history with, the oldest at the last node it shares with one (the
    ledger's rule). A fork point older than the steps shown is not in the window, nor its row."""
    me = timeline.info.thread
    if not timeline.branches:
        return None
    # Steps only: a thread that shares just the StartNode was started with the same workflow and
    # prompt (nodes are content-addressed), not forked from this one: never its parent.
    order = {step.hash: index for index, (_, step) in enumerate(timeline.numbered())}
    older = [(order[at], branch.thread) for at, found in timeline.branches.items() if at in order for branch in found if branch.thread < me]
    if not older:
        return None
    deepest = max(index for index, _ in older)
    return min(thread for index, thread in older if index == deepest)


def step_times(timeline: Timeline, step: StepContext) -> tuple[int | None, str]:
    """When a step started and how long it took, by uwf's clock when runs.jsonl has its attempt:
    a step-protocol agent's StepNode times are its own inner call's (0.0s for a slow wrapper)."""
    run = timeline.step_runs.get(step.hash)
    if run is not None:
        return run.startedAt, duration(run.durationMs)
    return step.started_at, took(step.started_at, step.completed_at)


def row_at_cursor(table: DataTable) -> str | None:
    """The key of the row under the cursor now (not the last highlight event handled)."""
    if not table.row_count:
        return None
    try:
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
    except Exception:  # the cursor is past the rows while the table refills
        return None
    return str(key) if key is not None else None


def _cut(text: str | None, limit: int = LINE) -> Text | None:
    """A check's line, one line and cut like a step's summary, as literal text (a model wrote it)."""
    if not text:
        return None
    text = " ".join(text.split())
    return Text(text if len(text) <= limit else text[: limit - 1] + "…")
