"""A Python function as an agent: found by its entry point, known by what it is (the detail and
the reuse key name its module's version and source hash, so changed code is not replayed), and
called with the step's deadline and cancel flag, what it prints going to the step's output.

Nothing here imports asyncio, inspect or traceback until a function needs them: a synchronous
function that returns is a plain call.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from ..encoding.records import record
from ..errors import UwfError
from .attempt import StepError

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Callable

    from ..repo import Repo
    from .process import Cancel
    from .resolve import ResolvedAgent


@record(frozen=True)
class PythonFunction:
    """A function an agent entry names, with what identifies its code."""

    func: Callable
    target: str  # "module:qualname", or "/path/file.py:name"
    version: str | None = None  # its top-level package's __version__
    source: str | None = None  # the XXH64 of its module's source file

    @property
    def identity(self) -> str:
        """What the reuse key holds of it: a change of code is a different agent."""
        return f"{self.target}@{self.version or ''}#{self.source or ''}"

    def to_detail(self) -> dict:
        data: dict = {"function": self.target}
        if self.version:
            data["version"] = self.version
        if self.source:
            data["source"] = self.source
        return data


class FunctionFailed(Exception):
    """The function raised: its exception's type, message and traceback (kept for the record)."""

    def __init__(self, kind: str, message: str, trace: str) -> None:
        super().__init__(f"{kind}: {message}" if message else kind)
        self.kind = kind
        self.message = message
        self.trace = trace


class Overran(Exception):
    """An async function stopped at the deadline, or a call that came back after it."""


class Stopped(Exception):
    """An async function stopped because the step was cancelled (K, kill, a worker stopping)."""


def function_of(repo: Repo, resolved: ResolvedAgent) -> PythonFunction:
    """A python agent's function: the one registered under its name for this session
    (`repo.agents`), else imported from its entry point."""
    registered = repo.agents.functions.get(resolved.label)
    func = registered if registered is not None else load_function(resolved.python or "")
    return describe(func, resolved.python)


def load_function(target: str) -> Callable:
    """The callable an entry point names; one line saying why when it cannot be had."""
    place, _, name = target.rpartition(":")
    try:
        if place.endswith(".py") or os.sep in place:
            module = _module_from_file(os.path.expanduser(place))
        else:
            from importlib import import_module

            module = import_module(place)
        value = module
        for part in name.split("."):
            value = getattr(value, part)
    except UwfError:
        raise
    except AttributeError:
        raise UwfError(f"{place} has no {name!r}") from None
    except ModuleNotFoundError as exc:
        raise UwfError(f"cannot import {place}: {exc} (install it, or add its directory to PYTHONPATH)") from None
    except Exception as exc:  # SyntaxError, an error raised while the module ran
        raise UwfError(f"cannot import {place}: {type(exc).__name__}: {exc}") from None
    if not callable(value):
        raise UwfError(f"{target} is a {type(value).__name__}, not a function")
    return value


def _module_from_file(path: str):
    """A module loaded from a .py file, once per path (its name is derived from the path)."""
    from importlib.util import module_from_spec, spec_from_file_location

    from ..encoding.ids import xxh64_hash

    if not os.path.isfile(path):
        raise UwfError(f"there is no file {path}")
    key = "uwf_agent_" + xxh64_hash(os.path.abspath(path).encode()).lower()
    loaded = sys.modules.get(key)
    if loaded is not None:
        return loaded
    spec = spec_from_file_location(key, path)
    module = module_from_spec(spec)
    sys.modules[key] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[key]
        raise
    return module


_SOURCES: dict[tuple[str, int, int], str] = {}


def describe(func: Callable, target: str | None = None) -> PythonFunction:
    """The function with its code's identity: the module's __version__ (of its top-level package)
    and the hash of its source file (cached by path, size and mtime)."""
    from ..repo import entry_point

    target = target or entry_point(func)
    module = sys.modules.get(getattr(func, "__module__", None) or "")
    version = source = None
    if module is not None:
        top = sys.modules.get(module.__name__.partition(".")[0])
        version = getattr(top, "__version__", None)
        version = version if isinstance(version, str) else None
        source = _source_hash(getattr(module, "__file__", None))
    return PythonFunction(func, target, version, source)


def _source_hash(path: str | None) -> str | None:
    if not path:
        return None
    try:
        stat = os.stat(path)
        key = (path, stat.st_size, stat.st_mtime_ns)
        if key not in _SOURCES:
            from ..encoding.ids import xxh64_hash

            with open(path, "rb") as file:
                _SOURCES[key] = xxh64_hash(file.read())
        return _SOURCES[key]
    except OSError:
        return None


# -- calling -------------------------------------------------------------------------------------


def call_function(func: Callable, argument: object, *, deadline: float | None, cancel: Cancel | None, on_output: Callable[[str], None] | None) -> object:
    """`func(argument)`, awaited if it is async. What it prints on this thread goes to `on_output`
    line by line (never to uwf's stdout, which is the CLI's JSON). An async function is stopped
    at the deadline or on cancel (Overran, Stopped); a synchronous one cannot be and is told
    through its context; it raised: FunctionFailed."""
    with routed_output(on_output):
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
    return FunctionFailed(type(exc).__name__, str(exc), trace)


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
                raise Overran()
        done, _ = await asyncio.wait({task}, timeout=wait)
        if done:
            return task.result()
        if cancel is not None and cancel.is_set():
            task.cancel()
            raise Stopped()


# -- what the function prints ----------------------------------------------------------------------

_SINKS: dict[int, Callable[[str], None]] = {}
_PARTIAL: dict[int, str] = {}
_BUSY: set[int] = set()


class _Routed:
    """sys.stdout / sys.stderr while Python agents run: a thread calling one writes to its
    step's output; every other thread to the stream this replaced."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        ident = threading.get_ident()
        sink = _SINKS.get(ident)
        if sink is None or ident in _BUSY:  # the sink itself printing (the CLI's on_output does)
            return self.stream.write(text)
        lines = (_PARTIAL.pop(ident, "") + text).split("\n")
        if lines[-1]:
            _PARTIAL[ident] = lines[-1]
        _BUSY.add(ident)
        try:
            for line in lines[:-1]:
                sink(line)
        finally:
            _BUSY.discard(ident)
        return len(text)

    def flush(self) -> None:
        if threading.get_ident() not in _SINKS:
            self.stream.flush()

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


class routed_output:
    """While the block runs, this thread's prints go to `sink` (dropped when it is None)."""

    def __init__(self, sink: Callable[[str], None] | None) -> None:
        self.sink = sink or (lambda line: None)

    def __enter__(self) -> None:
        for name in ("stdout", "stderr"):
            if not isinstance(getattr(sys, name), _Routed):
                setattr(sys, name, _Routed(getattr(sys, name)))
        _SINKS[threading.get_ident()] = self.sink

    def __exit__(self, *exc) -> None:
        ident = threading.get_ident()
        rest = _PARTIAL.pop(ident, "")
        _SINKS.pop(ident, None)
        if rest:
            self.sink(rest)
