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


def test_each_thread_s_newest_attempt_is_found_behind_another_thread_s_many(root):
    """The log is read newest first and only until every active thread has its last attempt (a
    100,000-step thread's is the last line): an older thread's, behind thousands of another's,
    is still found, and one with none says waiting."""
    put_workflow(root, str(EXAMPLES / "analyze-topic.yaml"))
    old, busy, idle = (start_thread(root, "analyze-topic", prompt) for prompt in ("old", "busy", "idle"))
    root.runs.append(RunRecord(old.thread, old.workflow, "analyst", "a", "failed", old.head, None, 1, 2, 1, error="no"))
    for index in range(2000):
        root.runs.append(RunRecord(busy.thread, busy.workflow, "analyst", "a", "failed" if index % 2 else "killed", busy.head, None, 3, 4, 1, error="x"))
    statuses = thread_statuses(root, list_threads(root))
    assert (statuses[old.thread], statuses[busy.thread], statuses[idle.thread]) == ("failed", "failed", "waiting")
