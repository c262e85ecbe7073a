"""uwf-tui over a PostgreSQL root: it opens the URL, shows queued threads, queues one with `d`,
and follows a change made by another process at once (LISTEN/NOTIFY), not at its next poll."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess

from conftest import EXAMPLES, REPO, _uwf_command

from uwf_core.api import Repo


def test_the_workbench_over_postgresql_queues_and_follows_other_hosts(pg_url, tmp_path):
    from uwf_tui.app import UwfApp

    env = dict(os.environ, UWF_STORAGE_ROOT=pg_url, UWF_ENV_FILE=str(tmp_path / "host.env"))

    def uwf(*args):
        done = subprocess.run([*_uwf_command(), *args], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=60)
        assert done.returncode == 0, done.stderr
        return done

    uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml"))
    first = json.loads(uwf("thread", "start", "analyze-topic", "-p", "one").stdout)["thread"]

    async def session():
        app = UwfApp(Repo.open(pg_url), poll_seconds=60)  # a poll too slow to matter: NOTIFY must do it
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(50):
                await pilot.pause(0.1)
                if first in app.threads_view.infos:
                    break
            await pilot.press("d")  # queue the selected thread for workers
            for _ in range(50):
                await pilot.pause(0.1)
                if app.threads_view.statuses.get(first) == "queued":
                    break
            queued = app.threads_view.statuses.get(first)
            started = await asyncio.to_thread(uwf, "thread", "start", "analyze-topic", "-p", "from another host")
            second = json.loads(started.stdout)["thread"]
            for _ in range(50):
                await pilot.pause(0.1)
                if second in app.threads_view.infos:
                    break
            seen = second in app.threads_view.infos
            return queued, seen, app.sub_title

    queued, seen, title = asyncio.run(session())
    assert queued == "queued"
    assert seen  # within 5 s, with a 60 s poll: notified
    assert "postgresql://" in title
    listed = {item["thread"]: item for item in json.loads(uwf("thread", "list").stdout)}
    assert listed[first].get("queued") is True
