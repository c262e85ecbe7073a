"""A step (or a run of steps) from an MCP tool call: off the event loop, its agent's output lines
sent as progress notifications as they come, and a cancelled call a cancelled step (the agent
stopped, the attempt recorded, the head where it was)."""

from __future__ import annotations

import threading
from typing import Any, Callable

import anyio
import anyio.from_thread
import anyio.to_thread

CANCELLED = "cancelled by the MCP client"
MAX_MESSAGE = 500  # characters of an output line in one progress notification
_RUNNING: dict[int, tuple] = {}  # the steps in flight: id -> (Cancel, done Event)


def stop_all(reason: str, wait: float) -> None:
    """Cancel every step in flight and wait (at most `wait` seconds) for each to record it."""
    import time

    running = list(_RUNNING.values())
    for cancel, _ in running:
        cancel.set(reason)
    deadline = time.monotonic() + wait
    for _, done in running:
        done.wait(max(0.0, deadline - time.monotonic()))


async def run_blocking(ctx: Any, work: Callable[[Any], Any]) -> Any:
    """`work(options)` in a worker thread, with StepOptions whose agent output reaches the client
    as progress (when it asked for progress) and whose cancel is set when the call is cancelled."""
    from ..engine.attempt import StepOptions
    from ..engine.contain.process import Cancel

    cancel = Cancel()
    done = threading.Event()
    _RUNNING[id(done)] = (cancel, done)
    send, receive = anyio.create_memory_object_stream[str](max_buffer_size=1000)

    def on_output(line: str) -> None:
        try:
            send.send_nowait(line)
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # a client that reads no progress fast enough misses lines, the step goes on

    def in_thread() -> Any:
        try:
            return work(StepOptions(on_output=lambda line: anyio.from_thread.run_sync(on_output, line), cancel=cancel))
        finally:
            done.set()
            _RUNNING.pop(id(done), None)
            try:
                anyio.from_thread.run_sync(send.close)
            except RuntimeError:
                pass  # the server is ending: nobody reads the progress any more

    async def report() -> None:
        count = 0
        async with receive:
            async for line in receive:
                count += 1
                try:
                    await ctx.report_progress(count, None, line[:MAX_MESSAGE])
                except Exception:  # noqa: BLE001 — a progress the transport cannot send is only progress
                    pass

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(report)
            return await anyio.to_thread.run_sync(in_thread, abandon_on_cancel=True)
    except BaseExceptionGroup as grouped:  # the step's own error (a StepError), not the task group's wrapping of it
        if len(grouped.exceptions) == 1 and isinstance(grouped.exceptions[0], Exception):
            raise grouped.exceptions[0] from None
        raise
    except anyio.get_cancelled_exc_class():
        cancel.set(CANCELLED)
        with anyio.CancelScope(shield=True):
            while not done.is_set():  # the agent stopped and the attempt written before the call ends
                await anyio.sleep(0.05)
        raise
