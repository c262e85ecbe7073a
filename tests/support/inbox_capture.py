"""The Inbox view on the fixed demo root, captured as SVG: for its snapshot test and for
scripts/screenshots.py (the other views' are tui_capture.py's; this one needs a root of its own).

Two threads wait for a person: analyze-topic's, whose analyst is made a person's (agentOverrides),
not queued; and triage-bug's, queued, whose triager a worker ("build-1:4242") found a person's and
left asking three minutes before the screen is taken. The clock is frozen at two hours after the
analyze-topic thread started (the fixed root's ids carry their own time)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from unittest import mock

from fixed_root import build_fixed_root
from tui_capture import _steady, frozen_clock, workers_settled  # noqa: E402

OVERRIDES = 'agentOverrides:\n  "analyze-topic":\n    analyst: "human"\n  "triage-bug":\n    triager: "human"\n'
WORKER = "build-1:4242"


def build_inbox_root(path: str) -> tuple[dict, float]:
    """The fixed root with its two threads waiting for a person; returns its ids and "now" (s)."""
    from uwf_core.api import Repo, queue_thread, thread_info, ulid_timestamp_ms
    from uwf_core.store.records import RunRecord

    ids = build_fixed_root(path)
    root = Repo.open(path)
    config = Path(path, "config.yaml")
    config.write_text(config.read_text() + OVERRIDES)
    root.reload_config()
    now = ulid_timestamp_ms(ids["analyze"]) / 1000 + 7200
    asked = int((now - 180) * 1000)
    triage = thread_info(root, ids["triage"])
    queue_thread(root, ids["triage"])
    root.backend.queue.ask(ids["triage"], triage.head)
    root.runs.append(RunRecord(
        thread=ids["triage"], workflow=triage.workflow, role="triager", agent="human", status="asking", head=triage.head, step=None,
        startedAt=asked, completedAt=asked, durationMs=0, worker=WORKER,
        error=f"role 'triager' waits for a person: answer it with `uwf thread answer {ids['triage']}` on any host, in uwf-tui's inbox",
    ))
    return ids, now


def capture_inbox(workdir: str, size: tuple[int, int]) -> str:
    """Build the root under `workdir`, open the Inbox (i) and capture it at `size`."""
    root_path = os.path.join(workdir, "root")
    _, now = build_inbox_root(root_path)
    with mock.patch("uwf_tui.formatting.time", frozen_clock(now)):
        return asyncio.run(_capture(root_path, size))


async def _capture(root_path: str, size: tuple[int, int]) -> str:
    from uwf_core.api import Repo
    from uwf_tui.app import UwfApp

    app = UwfApp(Repo.open(root_path), poll_seconds=0.2)
    async with app.run_test(size=size) as pilot:
        app.sub_title = "fixed demo root"
        await pilot.pause(0.5)
        await workers_settled(app)
        await pilot.press("i")
        for _ in range(200):
            if app.query_one("#inbox").row_count == 2:
                break
            await pilot.pause(0.05)
        await pilot.pause(0.3)
        return await _steady(app, pilot, "uwf-tui: the Inbox, threads waiting for a person (i)")
