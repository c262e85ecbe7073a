"""A Python agent's function called: awaited if it is async, stopped at the deadline or on
cancel when it can be, what it raised kept with its traceback. Nothing here imports asyncio or
traceback until a function needs them: a synchronous function that returns is a plain call."""

from __future__ import annotations

import threading
import time

from ..attempt import StepError
from .output import drop_output, routed_output, thread_output

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Callable

    from ..contain.process import Cancel


class FunctionFailed(Exception):
    """The function raised: its exception (the step's error is chained to it), its type, message
    and traceback (kept for the record)."""

    def __init__(self, error: BaseException, kind: str, message: str, trace: str) -> None:
        super().__init__(f"{kind}: {message}" if message else kind)
        self.error = error
        self.kind = kind
        self.message = message
        self.trace = trace


class Overran(Exception):
    """An async function stopped at the deadline, or a call that came back after it."""


class Stopped(Exception):
    """An async function stopped because the step was cancelled (K, kill, a worker stopping)."""


def call_function(func: Callable, argument: object, *, deadline: float | None, cancel: Cancel | None, on_output: Callable[[str], None] | None) -> object:
    """`func(argument)`, awaited if it is async. What it prints goes to `on_output` line by line
    (never to uwf's stdout, which is the CLI's JSON). An async function is stopped at the deadline
    or on cancel (Overran, Stopped); with a deadline a synchronous one runs on a thread of its own
    that the step stops waiting for at the deadline or on cancel — Python cannot stop a thread, so
    it goes on until it returns, and what it returns then is dropped; it raised: FunctionFailed."""
    if deadline is None:
        with routed_output(on_output):
            return _call(func, argument, deadline, cancel, on_output)
    box: list = []

    def runner() -> None:
        try:
            with thread_output(on_output):  # the descriptor is the caller's to hold and give back
                box.append((True, _call(func, argument, deadline, cancel, on_output)))
        except BaseException as exc:  # noqa: BLE001  (handed back to the calling thread)
            box.append((False, exc))

    thread = threading.Thread(target=runner, name="uwf-python-agent", daemon=True)  # daemon: never keeps uwf alive
    with routed_output(on_output):  # file descriptor 1 is the step's until the caller stops waiting, not the thread's end
        thread.start()
        while thread.is_alive():
            thread.join(0.05)
            if not thread.is_alive():
                break
            if cancel is not None and cancel.is_set():
                drop_output(thread.ident)
                raise Stopped()
            if time.monotonic() > deadline + GRACE:  # an async one is cancelled at the deadline itself: it says so first
                drop_output(thread.ident)
                raise Overran("uwf stopped waiting for the function at the deadline (Python cannot stop a thread: it runs on "
                              "until it returns, and what it returns is dropped)")
    ok, value = box[0]
    if not ok:
        raise value
    return value


GRACE = 0.2  # seconds past the deadline before a function's thread is given up on


def _call(func: Callable, argument: object, deadline: float | None, cancel: Cancel | None, on_output: Callable[[str], None] | None) -> object:
    """The call itself, its output already routed by the caller."""
    try:
        result = func(argument)
        if hasattr(result, "__await__"):
            result = _await(result, deadline, cancel, on_output)
    except (Overran, Stopped, StepError, KeyboardInterrupt):
        raise  # StepError: the context's check(), the step's own stop
    except BaseException as exc:
        raise _failed(exc) from None
    return result


def _failed(exc: BaseException) -> FunctionFailed:
    import traceback

    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return FunctionFailed(exc, type(exc).__name__, str(exc), trace)


def _await(awaitable, deadline: float | None, cancel: Cancel | None, on_output: Callable[[str], None] | None) -> object:
    """Run a coroutine to its end on a loop of its own (on a thread of its own when this thread
    already runs a loop: a caller inside async code)."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_guarded(awaitable, deadline, cancel))
    box: list = []

    def runner() -> None:
        try:
            with routed_output(on_output):
                box.append((True, asyncio.run(_guarded(awaitable, deadline, cancel))))
        except BaseException as exc:  # noqa: BLE001  (handed back to the calling thread)
            box.append((False, exc))

    thread = threading.Thread(target=runner, name="uwf-python-agent")
    thread.start()
    thread.join()
    ok, value = box[0]
    if not ok:
        raise value
    return value


async def _guarded(awaitable, deadline: float | None, cancel: Cancel | None):
    import asyncio

    task = asyncio.ensure_future(awaitable)
    while True:
        wait = 0.05 if cancel is not None else None
        if deadline is not None:
            left = deadline - time.monotonic()
            wait = left if wait is None else min(wait, left)
            if left <= 0:
                task.cancel()
                raise Overran("the async function was cancelled at the deadline")
        done, _ = await asyncio.wait({task}, timeout=wait)
        if done:
            return task.result()
        if cancel is not None and cancel.is_set():
            task.cancel()
            raise Stopped()
