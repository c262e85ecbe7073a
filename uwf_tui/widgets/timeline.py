"""One thread's timeline as table rows: the prompt, each step (role, agent, when it started, how
long, a summary), failed attempts and forks after the step they came from, and the step running
now. "started" and "took" mean the same on every row: uwf's own clock around the attempt
(runs.jsonl), falling back to the StepNode's times for a step with no run on record (a fork's).

Row keys say what a row is: `start:HASH`, `step:HASH`, `attempt:HEAD:N`, `branch:THREAD`,
`more:` (earlier steps not shown yet) and `running:`."""

from __future__ import annotations

import asyncio
import time

from rich.text import Text
from textual.widgets import DataTable

from uwf_core.api import RunningStep, StepContext, Timeline

from ..formatting import (
    attempt_mark,
    clock,
    duration,
    elapsed,
    short,
    spinner,
    summary,
    took,
)
from .panes import RowTable

BATCH = 100  # rows added between two yields to the event loop
WINDOW = 500  # the newest steps shown at first; the `more:` row above them shows more on Enter


class TimelineTable(RowTable):
    def __init__(self, **kwargs) -> None:
        super().__init__(id="timeline", cursor_type="row", **kwargs)
        self.running_since: int | None = None  # ms: when the running step began

    def on_mount(self) -> None:
        self.columns_by_label = {
            label: self.add_column(label, width=width)
            for label, width in (("#", 3), ("role", 12), ("agent", 12), ("started", 8), ("took", 6), ("output", 64))
        }

    async def fill(self, timeline: Timeline, window: int, running: RunningStep | None, running_here: bool, still_wanted) -> str | None:
        """Rows in batches, yielding between them so keys are handled while a long thread loads.
        Returns the key of the newest row (None when `still_wanted()` turned false meanwhile)."""
        self.clear()
        context = timeline.context
        prompt_line = " ".join(context.start.prompt.split())
        self.add_row("", Text("prompt", style="bold magenta"), "", "", "", prompt_line[:64], key=f"start:{context.start_hash}")
        self._add_extras(timeline, context.start_hash)
        # A long thread shows its newest steps: rows (and the output nodes their summaries read)
        # stay bounded however long the chain.
        first = max(0, len(context.steps) - window)
        if first:
            more = f"{first:,} earlier step{'s' if first > 1 else ''}: enter shows {min(first, WINDOW):,} more"
            self.add_row("…", Text("earlier", style="dim"), "", "", "", Text(more, style="dim"), key="more:")
        for number, step in enumerate(context.steps[first:], first + 1):
            if number % BATCH == 0:
                await asyncio.sleep(0)
                if not still_wanted():
                    return None
            started, spent = step_times(timeline, step)
            self.add_row(
                str(number),
                Text(step.role, style="bold cyan"),
                Text(step.agent, style="green" if step.agent != "human" else "bold yellow"),
                clock(started),
                spent,
                summary(step.output, 64),
                key=f"step:{step.hash}",
            )
            self._add_extras(timeline, step.hash)
        self._add_running(running, running_here)
        return f"step:{context.steps[-1].hash}" if context.steps else f"start:{context.start_hash}"

    def _add_extras(self, timeline: Timeline, after: str) -> None:
        for index, attempt in enumerate(timeline.attempts.get(after, [])):
            error = attempt.error or attempt.status
            mark, style = attempt_mark(attempt.status)
            self.add_row(
                "",
                Text(f"{mark} {attempt.role or ''}", style=style),
                attempt.agent or "",
                clock(attempt.startedAt),
                duration(attempt.durationMs),
                Text(f"{attempt.status}: {error}"[:120], style=style.removeprefix("bold ")),
                key=f"attempt:{after}:{index}",
            )
        for branch in timeline.branches.get(after, []):
            state = "active" if branch.active else (branch.reason or "done")
            steps = f"{branch.own_steps} own step{'s' if branch.own_steps != 1 else ''}"
            self.add_row(
                "", Text("↳ fork", style="bold yellow"), short(branch.thread, 10), "", "",
                Text(f"thread {branch.thread} ({state}, {steps})", style="yellow"),
                key=f"branch:{branch.thread}",
            )

    def _add_running(self, running: RunningStep | None, here: bool) -> None:
        self.running_since = running.started_at if running is not None else None
        if running is None:
            return
        self.add_row(
            "▶",
            Text(running.role or "…", style="bold green"),
            running.agent or "",
            clock(running.started_at),
            elapsed(time.time() - running.started_at / 1000) if running.started_at else "",
            Text("running… (x cancels)" if here else f"running in another process ({running.describe()})", style="green"),
            key="running:",
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
