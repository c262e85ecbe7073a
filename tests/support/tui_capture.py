"""Drive uwf-tui on the fixed demo root and capture each view as SVG.

Shared by the snapshot tests and scripts/screenshots.py, so the docs'
screenshots are exactly what the tests check.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path
from unittest import mock

from fixed_root import FROZEN_MS, build_fixed_root

SIZE = (160, 48)
SMALL = (80, 24)


async def workers_settled(app) -> None:
    """Every worker ended. A load the app cancelled for a newer one (an exclusive group) is not
    a failure: wait for the newer one instead (on a loaded machine the race is common)."""
    from textual.worker import WorkerCancelled

    for _ in range(50):
        try:
            await app.workers.wait_for_complete()
            return
        except WorkerCancelled:
            continue
VIEWED_AT = FROZEN_MS / 1000 + 3600  # "now" for ages: an hour after the fixed root was written


def frozen_clock(now: float):
    """Stands in for the `time` module inside uwf_tui.formatting: ages and dates as seen at `now`."""

    class Clock:
        localtime = staticmethod(time.gmtime)
        strftime = staticmethod(time.strftime)

        @staticmethod
        def time() -> float:
            return now

    return Clock


_Clock = frozen_clock(VIEWED_AT)


async def _steady(app, pilot, title: str) -> str:
    """The screen once it has stopped changing: on a loaded machine a layout (a scrollbar sized
    for the graph shown before) can lag the content by more than any fixed pause."""
    shot = normalize(app.export_screenshot(title=title))
    for _ in range(40):
        await pilot.pause(0.15)
        again = normalize(app.export_screenshot(title=title))
        if again == shot:
            break
        shot = again
    return app.export_screenshot(title=title)


async def _capture(root_path: str, ids: dict, views: list[str], slow_agent: str | None, size: tuple[int, int]) -> dict[str, str]:
    from uwf_core.api import Repo
    from uwf_tui.app import UwfApp

    shots: dict[str, str] = {}
    app = UwfApp(Repo.open(root_path), poll_seconds=0.2)
    async with app.run_test(size=size) as pilot:
        app.sub_title = "fixed demo root"
        await pilot.pause(0.5)
        await workers_settled(app)

        async def select(thread: str) -> None:
            table = app.query_one("#threads")
            table.move_cursor(row=table.get_row_index(thread))
            await pilot.pause(0.3)
            await workers_settled(app)
            await pilot.pause(0.3)

        if "threads" in views:
            await select(ids["solve"])
            timeline = app.query_one("#timeline")
            timeline.move_cursor(row=timeline.get_row_index(f"step:{ids['solve_steps'][2]}"))
            await pilot.pause(0.3)
            shots["threads"] = await _steady(app, pilot, "uwf-tui: a thread's timeline, with a fork")
        if "attempt" in views:
            await select(ids["triage"])
            shots["attempt"] = await _steady(app, pilot, "uwf-tui: a failed attempt in the timeline")
        if "workflows" in views:
            await pilot.press("1")
            await pilot.pause(0.2)
            table = app.query_one("#workflows")
            table.move_cursor(row=table.get_row_index("solve-issue"))
            await pilot.pause(0.4)
            shots["workflows"] = await _steady(app, pilot, "uwf-tui: the solve-issue workflow graph")
        if "cas" in views:
            await pilot.press("3")
            await pilot.pause(0.2)
            tree = app.query_one("#cas-tree")
            from uwf_core.api import thread_info

            head = thread_info(Repo.open(root_path), ids["solve"]).head
            node = next(child for child in tree.root.children[0].children if child.data == head)
            node.expand()
            await pilot.pause(0.3)
            await workers_settled(app)
            await pilot.pause(0.3)
            first = next((child for child in node.children if child.data), None)
            if first is not None:
                first.expand()
                await pilot.pause(0.3)
                await workers_settled(app)
                await pilot.pause(0.3)
            tree.move_cursor(node)
            app.query_one("#cas-view").show_node(head)
            await pilot.pause(0.3)
            shots["cas"] = await _steady(app, pilot, "uwf-tui: the CAS tree")
        if "help" in views:
            await pilot.press("2")
            await select(ids["solve"])
            await pilot.press("question_mark")
            await pilot.pause(0.3)
            shots["help"] = await _steady(app, pilot, "uwf-tui: every key on one screen (?)")
            await pilot.press("escape")
            await pilot.pause(0.2)
        if "diff" in views:
            await pilot.press("2")
            await select(ids["solve"])
            timeline = app.query_one("#timeline")
            timeline.move_cursor(row=timeline.get_row_index(f"step:{ids['solve_steps'][-1]}"))
            await pilot.pause(0.3)
            await pilot.press("m")  # the newest step of solve-issue (the approving review)
            await select(ids["fork"])
            await pilot.press("D")
            await _report(app, pilot)
            shots["diff"] = await _steady(app, pilot, "uwf-tui: a fork diffed with the thread it left (m, then D)")
            await pilot.press("escape")
            app.threads_view.set_mark(None)
            await pilot.pause(0.2)
        if "preview" in views:
            await pilot.press("2")
            await select(ids["triage"])
            await pilot.press("p")
            await _report(app, pilot)
            shots["preview"] = await _steady(app, pilot, "uwf-tui: the preview of a thread's next step (p)")
            await pilot.press("escape")
            await pilot.pause(0.2)
        if "running" in views and slow_agent:
            await pilot.press("2")
            await select(ids["analyze"])
            await pilot.press("s")
            for _ in range(60):
                await pilot.pause(0.1)
                if "checking" in "\n".join(str(line.text) for line in app.query_one("#log").lines):
                    break
            await pilot.pause(0.6)
            shots["running"] = app.export_screenshot(title="uwf-tui: a step running, its agent's stderr in the log")
            await workers_settled(app)
    return shots


async def _report(app, pilot) -> None:
    """Wait until the diff or preview just opened shows its report."""
    for _ in range(200):
        if getattr(app.screen, "report", None) is not None or getattr(app.screen, "error", None) is not None:
            break
        await pilot.pause(0.05)
    await workers_settled(app)
    await pilot.pause(0.3)


def capture(views: list[str], workdir: str, *, slow_agent: bool = False, size: tuple[int, int] = SIZE) -> dict[str, str]:
    """Build the fixed root under `workdir` and capture the named views at `size`."""
    root_path = os.path.join(workdir, "root")
    ids = build_fixed_root(root_path)
    agent = None
    if slow_agent:
        agent = os.path.join(workdir, "slow-agent.sh")
        Path(agent).write_text(
            "#!/bin/sh\n"
            "echo 'reading the topic…' >&2; sleep 0.4\n"
            "echo 'checking three sources…' >&2; sleep 0.4\n"
            "echo 'drafting the analysis…' >&2; sleep 3\n"
            'exec uwf-script --script-dir "$UWF_EXAMPLES_DIR" "$@"\n'
        )
        os.chmod(agent, 0o755)
        from uwf_core.api import Repo, SetupRequest, apply_setup

        apply_setup(Repo.open(root_path), SetupRequest(agents={"researcher": agent}, default_agent="researcher"))
        os.environ["UWF_EXAMPLES_DIR"] = str(Path(__file__).resolve().parents[2] / "examples")
    with mock.patch("uwf_tui.formatting.time", _Clock):
        return asyncio.run(_capture(root_path, ids, views, agent, size))


def normalize(svg: str) -> str:
    """What may differ between two runs of the same screen: Rich's generated ids."""
    return re.sub(r"terminal-\d+", "terminal-X", svg)
