"""thread_statuses: what a list of threads says each one is doing or waiting after."""

from __future__ import annotations

import pytest
from conftest import EXAMPLES

from uwf_core.store.records import RunRecord
from uwf_core.thread.details import thread_statuses
from uwf_core.thread.ops import list_threads, start_thread
from uwf_core.workflow.ops import put_workflow


@pytest.mark.parametrize(
    ("status", "from_head", "shown"),
    [
        ("killed", True, "cancelled"),  # x, a declined human form, Ctrl-C: stopped, not failed
        ("failed", True, "failed"),
        ("timeout", True, "failed"),
        ("killed", False, "waiting"),  # an attempt from an older head says nothing of this one
        (None, True, "waiting"),
    ],
)
def test_the_last_attempt_from_the_head_decides_failed_or_cancelled(root, status, from_head, shown):
    put_workflow(root, str(EXAMPLES / "analyze-topic.yaml"))
    info = start_thread(root, "analyze-topic", "x")
    if status:
        head = info.head if from_head else "0" * 13
        root.runs.append(RunRecord(info.thread, info.workflow, "analyst", "a", status, head, None, 1, 2, 1, error="stopped"))
    assert thread_statuses(root, list_threads(root))[info.thread] == shown
