"""TUI benchmark (not a test): start-up to first paint, opening a thread with
1,000 steps and one with 10,000, and a CAS of 10,000+ nodes walked and browsed.

    .venv/bin/python tests/bench/tui.py

Prints wall times, and the interpreter's own start-up for scale. `live()` (switching to a long
thread, a commit's row, a resize) needs a root with an agent: `scripts/bench.py --only tui` runs it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "bench"))

from common import compile_sources  # noqa: E402
from step import WORKFLOW, build_chain  # noqa: E402

FIRST_PAINT = """
import asyncio, sys, time
start = time.perf_counter()
from uwf_tui.app import UwfApp
from uwf_core.api import Repo

class Measured(UwfApp):
    def on_ready(self):  # Textual's Ready: the first frame is on screen
        self.painted = time.perf_counter() - start

async def main():
    app = Measured(Repo.open(sys.argv[1]))
    async with app.run_test(size=(160, 48)) as pilot:
        while not hasattr(app, "painted"):
            await asyncio.sleep(0.005)
        print(app.painted)
asyncio.run(main())
"""


def median_runs(argv: list[str], runs: int) -> float:
    values = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        values.append(time.perf_counter() - start)
    return statistics.median(values)


def first_paint(root: str, runs: int) -> float:
    values = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", FIRST_PAINT, root], check=True, capture_output=True, text=True).stdout
        values.append(float(out.strip().splitlines()[-1]))
    return statistics.median(values)


async def open_thread(root: str, thread: str) -> tuple[float, float, float]:
    """Time until the timeline's newest step is on screen, the longest the UI's event loop was
    blocked meanwhile (a 10 ms timer's worst lateness: what a keypress would wait), and the
    process's peak RSS in MB."""
    import resource

    from uwf_core.api import Repo
    from uwf_tui.app import UwfApp

    app = UwfApp(Repo.open(root))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.5)
        await app.workers.wait_for_complete()
        await pilot.pause(0.5)
        ticks: list[float] = []
        app.set_interval(0.01, lambda: ticks.append(time.perf_counter()))
        await pilot.pause(0.1)
        table = app.query_one("#threads")
        head = app.threads_view.infos[thread].head
        start = time.perf_counter()
        table.move_cursor(row=table.get_row_index(thread))
        while True:
            await asyncio.sleep(0.005)
            view = app.threads_view
            if view.timeline is not None and view.timeline.info.thread == thread and f"step:{head}" in app.query_one("#timeline").rows:
                break
        elapsed = time.perf_counter() - start
        window = [t for t in ticks if t >= start]
        gaps = [b - a for a, b in zip(window, window[1:])]
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return elapsed, max(gaps) if gaps else elapsed, peak


async def _until(condition, limit: float = 30.0) -> None:
    started = time.perf_counter()
    while not condition():
        await asyncio.sleep(0.002)
        if time.perf_counter() - started > limit:
            raise TimeoutError("the TUI did not get there")


async def live(root: str, thread: str, rounds: int = 3) -> dict[str, float]:
    """Medians, on a long thread, of what a person waits for: switching to it in the list (its
    newest row on screen), a step committed by another process (`uwf thread step`: polled), one
    committed by the TUI's own `s` (from the commit to its row), and a resize across the width
    where the layout changes (until the timeline is drawn again for it) and one within a layout
    (Textual's own relayout and redraw of the screen, which any resize costs)."""

    import uwf_tui.workers as workers
    from textual import events

    from uwf_core.api import Repo
    from uwf_tui.app import UwfApp

    app = UwfApp(Repo.open(root))
    times: dict[str, list[float]] = {"switch": [], "cli": [], "own": [], "resize": [], "resize within": []}
    commits: list[float] = []
    step = workers.perform_step

    def timed_step(repo, stepped, options):
        landed = options.on_commit

        def on_commit(node) -> None:
            commits.append(time.perf_counter())
            landed(node)

        object.__setattr__(options, "on_commit", on_commit)  # a frozen record: the probe wraps its callback
        return step(repo, stepped, options)

    workers.perform_step = timed_step
    env = dict(os.environ, UWF_STORAGE_ROOT=root)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.5)
        await app.workers.wait_for_complete()
        view, table, timeline = app.threads_view, app.query_one("#threads"), app.query_one("#timeline")
        other = next(row.value for row in table.rows if row.value != thread)

        def shows_head() -> bool:
            head = Repo.open(root).threads.heads()[thread]
            return view.timeline is not None and view.timeline.info.thread == thread and f"step:{head}" in timeline.rows and not timeline.filling

        for _ in range(rounds):
            table.move_cursor(row=table.get_row_index(other))
            await pilot.pause(1.0)
            started = time.perf_counter()
            table.move_cursor(row=table.get_row_index(thread))
            await _until(shows_head)
            times["switch"].append(time.perf_counter() - started)
            await pilot.pause(1.5)  # the ledger is read behind the rows
        for _ in range(rounds):
            subprocess.run([sys.executable, "-m", "uwf_core.cli.main", "thread", "step", thread], check=True, capture_output=True, env=env)
            started = time.perf_counter()
            await _until(shows_head)
            times["cli"].append(time.perf_counter() - started)
            await pilot.pause(1.5)
        timeline.focus()
        for _ in range(rounds):
            commits.clear()
            app.post_message(events.Key("s", "s"))
            await _until(lambda: bool(commits))
            await _until(shows_head)
            times["own"].append(time.perf_counter() - commits[0])
            await pilot.pause(1.5)
        for name, sizes in (("resize", [(100, 30), (160, 48)]), ("resize within", [(120, 40), (160, 48)])):
            for size in sizes * rounds:
                started = time.perf_counter()
                await pilot.resize_terminal(*size)
                await pilot.pause(0)
                await _until(lambda: timeline.with_cost == timeline.wants_cost() and shows_head())
                await pilot.pause(0)  # and the frame after it
                times[name].append(time.perf_counter() - started)
                await pilot.pause(1.0)
    workers.perform_step = step
    return {name: statistics.median(values) for name, values in times.items()}


async def run_keys(root: str, thread: str, seconds: float = 12.0) -> dict[str, float]:
    """While the workbench's `r` steps a long thread (160x48): how late a 10 ms timer fires, p50
    and p95 (what any key waits before it is handled), a `?` and Escape round trip (the help on
    screen and gone: a key that changes the screen), the steps a second (first, with no key
    pressed), resizes across the layout's width until the panes are laid out for each, and after
    `x` how many steps began once it was handled (the one in flight ends) and whether the header
    cleared."""
    from textual import events
    from textual.events import Resize
    from textual.geometry import Size

    from uwf_core.api import Repo, step_counts
    from uwf_tui.app import UwfApp
    from uwf_tui.screens.modals import HelpScreen

    def steps() -> int:
        repo = Repo.open(root)
        head = repo.threads.heads()[thread]
        return step_counts(repo, [head])[head]

    app = UwfApp(Repo.open(root))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.5)
        view, table = app.threads_view, app.query_one("#threads")
        table.move_cursor(row=table.get_row_index(thread))
        await _until(lambda: view.timeline is not None and view.timeline.info.thread == thread and not app.query_one("#timeline").filling)
        await pilot.pause(1.0)
        app.post_message(events.Key("r", "r"))
        await _until(lambda: thread in app.runner)
        await pilot.pause(1.0)  # the run under way
        ticks: list[float] = []
        app.set_interval(0.01, lambda: ticks.append(time.perf_counter()))
        first, started = steps(), time.perf_counter()
        await asyncio.sleep(seconds / 2)  # the rate, with no key pressed
        rate = (steps() - first) / (time.perf_counter() - started)
        rounds: list[float] = []
        started = time.perf_counter()
        while time.perf_counter() - started < seconds / 2:
            for key, shown in (("question_mark", True), ("escape", False)):
                at = time.perf_counter()
                app.post_message(events.Key(key, "?" if shown else None))
                await _until(lambda: isinstance(app.screen, HelpScreen) is shown)
                rounds.append(time.perf_counter() - at)
            await asyncio.sleep(0.3)
        resizes: list[float] = []
        for size in ((80, 24), (160, 48), (80, 24), (160, 48)):  # across the layout's width: the panes stack, then not
            at = time.perf_counter()
            app._driver._size = Size(*size)  # what Pilot.resize_terminal does, without its wait for an idle app
            app.post_message(Resize(Size(*size), Size(*size)))
            await _until(lambda: _laid_out(app, size))
            resizes.append(time.perf_counter() - at)
        app.post_message(events.Key("x", "x"))
        await _until(lambda: app.runner.running[thread].is_set() if thread in app.runner else True)
        at_x = steps()
        await _until(lambda: thread not in app.runner)
        after_x = steps() - at_x
        await pilot.pause(0.1)
        cleared = "running" not in app.sub_title
    late = sorted(max(0.0, b - a - 0.01) for a, b in zip(ticks, ticks[1:]))
    rounds.sort()

    def p95(values: list[float]) -> float:
        return values[min(len(values) - 1, int(len(values) * 0.95))]

    return {
        "late p50": statistics.median(late), "late p95": p95(late), "key p50": statistics.median(rounds), "key p95": p95(rounds),
        "steps/s": rate, "after x": after_x, "cleared": float(cleared),
        "resize p50": statistics.median(resizes), "resize max": max(resizes),
    }


def _laid_out(app, size: tuple[int, int]) -> bool:
    """The panes in the layout of `size`: stacked below 110 columns, side by side above."""
    listed, timeline = app.query_one("#thread-list-pane").region, app.query_one("#timeline").region
    return tuple(app.size) == size and (listed.bottom <= timeline.y) == (size[0] < 110) and listed.right <= size[0]


async def expand_head(root: str, head: str) -> float:
    from uwf_core.api import Repo
    from uwf_tui.app import UwfApp

    app = UwfApp(Repo.open(root))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("3")
        await pilot.pause(0.3)
        tree = app.query_one("#cas-tree")
        node = next(child for child in tree.root.children[0].children if child.data == head)
        start = time.perf_counter()
        node.expand()
        while not node.children or str(node.children[0].label) == "loading…":
            await pilot.pause(0.01)
        return time.perf_counter() - start


def main() -> None:
    compile_sources()
    uwf = shutil.which("uwf", path=os.path.dirname(sys.executable))
    work = tempfile.mkdtemp(prefix="uwf-tui-bench-")
    Path(work, "loop.yaml").write_text(WORKFLOW)
    root = os.path.join(work, "root")
    subprocess.run([uwf, "--root", root, "workflow", "put", os.path.join(work, "loop.yaml")], check=True, capture_output=True)
    huge = build_chain(root, 10000)  # built first: the app opens on the newest thread, and these are timed cold
    thread = build_chain(root, 1000)
    big = build_chain(root, 3400)  # ~10,200 nodes: a step, its output and its detail each
    from uwf_core.api import Repo

    heads = Repo.open(root).threads.heads()
    nodes = len(os.listdir(os.path.join(root, "cas")))
    python = median_runs([sys.executable, "-c", "pass"], 10)
    paint = first_paint(root, 5)
    opened, worst_key, _ = asyncio.run(open_thread(root, thread))
    opened_huge, worst_huge, rss_huge = asyncio.run(open_thread(root, huge))
    walk_start = time.perf_counter()
    walked = subprocess.run([uwf, "--root", root, "cas", "walk", heads[big]], check=True, capture_output=True, text=True).stdout.count('"')
    walk = time.perf_counter() - walk_start
    expand = asyncio.run(expand_head(root, heads[big]))
    print(f"python -c pass                         {python * 1000:8.1f} ms")
    print(f"uwf-tui start-up to first paint        {paint * 1000:8.1f} ms  ({paint / python:.1f}x python -c pass)")
    print(f"open a thread with 1,000 steps         {opened * 1000:8.1f} ms  (UI blocked at most {worst_key * 1000:.0f} ms at a time)")
    print(f"open a thread with 10,000 steps        {opened_huge * 1000:8.1f} ms  (UI blocked at most {worst_huge * 1000:.0f} ms; peak RSS {rss_huge:.0f} MB)")
    print(f"uwf cas walk of {walked // 2:,} nodes (store: {nodes:,})  {walk * 1000:8.1f} ms")
    print(f"CAS tree: expand that head (lazy)      {expand * 1000:8.1f} ms")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
