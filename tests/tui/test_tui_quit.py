"""Quitting while timers tick and workers still post: the app's views are removed one by one
before its timers stop, so a tick, a poll or a worker's late message can land when nothing is left
to draw on. Each must then do nothing, never raise (issue: `NoMatches: No nodes match
'InboxView'` from `app.tick` on a loaded machine)."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

import pytest


def _late_calls(app, thread: str):
    """What a timer or a worker thread may deliver after the views went, each handler called as
    Textual would; and the Future a person's question waits on."""
    from uwf_tui.messages import (
        AgentChecked,
        AgentOutput,
        FsckDone,
        HumanAnswerRequested,
        InboxAnswered,
        InboxLoaded,
        KillDone,
        StepDone,
    )

    answer: Future = Future()
    return answer, [
        ("tick", app.tick),
        ("poll", app.poll_state),
        ("reload", app.reload_views),
        ("forced refresh", app._force_refresh),
        ("note", lambda: app.notify("a late notice")),
        ("agent output", lambda: app.on_agent_output(AgentOutput(thread, "a late line"))),
        ("step done", lambda: app.on_step_done(StepDone(thread, "done"))),
        ("step failed", lambda: app.on_step_done(StepDone(thread, "", "boom"))),
        ("kill done", lambda: app.on_kill_done(KillDone(thread))),
        ("inbox loaded", lambda: app.on_inbox_loaded(InboxLoaded([]))),
        ("inbox answered", lambda: app.on_inbox_answered(InboxAnswered(None, "an answer", error="late"))),
        ("agent checked", lambda: app.on_agent_checked(AgentChecked(None))),
        ("fsck done", lambda: app.on_fsck_done(FsckDone("late"))),
        ("still cancelling", lambda: app._still_cancelling(thread)),
        ("human asked", lambda: app.on_human_answer_requested(HumanAnswerRequested(thread, _request(), answer))),
    ]


def _request():
    from uwf_core.api import HumanRequest

    return HumanRequest(thread="T", workflow="w", role="reviewer", prompt="?", schema={}, template="", instruction=None)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_late_ticks_polls_and_messages_while_quitting_draw_nothing_and_raise_nothing(fixed, size):
    from uwf_tui.app import UwfApp
    from uwf_tui.widgets.inbox_view import InboxView
    from uwf_tui.widgets.threads_view import ThreadsView

    root, ids = fixed
    thread = ids["solve"]
    seen: dict = {}

    class Probe(UwfApp):
        async def _close_all(self) -> None:
            await super()._close_all()
            # every screen and widget is gone; the loop goes on, and so could a timer or a worker
            seen["views left"] = len(self.default_screen.query(ThreadsView)) + len(self.default_screen.query(InboxView))
            answer, calls = _late_calls(self, thread)
            seen["errors"] = []
            for name, call in calls:
                try:
                    call()
                except Exception as exc:  # noqa: BLE001 - the point: nothing may escape
                    seen["errors"].append(f"{name}: {type(exc).__name__}: {exc}")
            seen["answer"] = answer.result(timeout=0) if answer.done() else "unanswered"

    async def main():
        app = Probe(root, poll_seconds=0.05)
        async with app.run_test(size=size) as pilot:
            await pilot.pause(0.3)
            await pilot.press("j", "j", "q")  # a burst that ends in q
            await pilot.pause(0.3)
        return app

    app = asyncio.run(main())
    assert seen["views left"] == 0  # the probe did run with the views gone
    assert seen["errors"] == []
    assert seen["answer"] is None  # a person's question asked while quitting is declined, not left waiting
    assert not app.is_running
