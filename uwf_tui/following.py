"""Threads the workbench follows live (L): steps another process or host runs (`uwf thread run`,
a worker), their agents' lines in the thread's log as they come, through the same stream
`uwf thread live` reads (uwf_core.thread.live). A follower only reads; it ends with its thread,
on L again, or when the app closes."""

from __future__ import annotations

import threading
from typing import Callable

from textual.message import Message

from uwf_core.api import LiveEvent, Repo, UwfError, follow_thread

from .messages import AgentOutput


class Followers:
    def __init__(self, repo: Repo, post: Callable[[Message], object]) -> None:
        self.repo = repo
        self.post = post
        self.stops: dict[str, threading.Event] = {}

    def __contains__(self, thread: str) -> bool:
        return thread in self.stops

    def start(self, thread: str) -> None:
        stop = self.stops[thread] = threading.Event()
        threading.Thread(target=self._follow, args=(thread, stop), name=f"uwf-follow-{thread[:10]}", daemon=True).start()

    def stop(self, thread: str) -> None:
        stop = self.stops.pop(thread, None)
        if stop is not None:
            stop.set()

    def stop_all(self) -> None:
        for thread in list(self.stops):
            self.stop(thread)

    def _follow(self, thread: str, stop: threading.Event) -> None:
        def tell(event: LiveEvent) -> None:
            if not stop.is_set():
                self.post(AgentOutput(thread, _shown(event)))

        try:
            follow_thread(self.repo, thread, tell, stop=stop)
        except UwfError as exc:
            self.post(AgentOutput(thread, f"✗ no longer following: {exc.message}"))
        except Exception as exc:  # a bug: said in the log, the app goes on
            self.post(AgentOutput(thread, f"✗ no longer following: internal error: {type(exc).__name__}: {exc}"))
        finally:
            if self.stops.get(thread) is stop:
                del self.stops[thread]


def _shown(event: LiveEvent) -> str:
    if event.kind == "started":
        return f"▶ {event.role} ({event.agent}) is running (another process)"
    if event.kind == "step":
        return f"✓ {event.role} ({event.agent}) → {event.head}"
    if event.kind == "failed":
        return f"✗ {event.role} ({event.agent}) {event.text}"
    if event.kind in ("paused", "unpaused"):
        return "‖ paused: no step starts until it is unpaused (space)" if event.kind == "paused" else "▷ unpaused"
    if event.kind == "ended":
        return f"■ thread ended ({event.text}); no longer following"
    return event.text or ""
