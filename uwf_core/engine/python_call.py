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

    func: Callable | None  # None: an isolated function, imported only in its own process
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
    (`repo.agents`), else imported from its entry point — but an isolated one only found, not
    imported: its module's code runs in its own process, never in uwf's."""
    registered = repo.agents.functions.get(resolved.label)
    if registered is not None:
        return describe(registered, resolved.python)
    if resolved.isolate:
        return PythonFunction(None, resolved.python or "", None, _read_code(locate(resolved.python or ""))[1])
    return describe(load_function(resolved.python or ""), resolved.python)


def locate(target: str) -> str:
    """The source file of an entry point's module, looked up on sys.path as the import system
    would find it, without running any of it (not even its packages' __init__)."""
    place = target.rpartition(":")[0]
    if place.endswith(".py") or os.sep in place:
        path = os.path.expanduser(place)
        if not os.path.isfile(path):
            raise UwfError(f"there is no file {path}")
        return path
    *packages, module = place.split(".")
    places = [entry or os.getcwd() for entry in sys.path if isinstance(entry, str)]
    for package in packages:
        found = [os.path.join(where, package) for where in places if os.path.isdir(os.path.join(where, package))]
        regular = [where for where in found if os.path.isfile(os.path.join(where, "__init__.py"))]
        places = regular[:1] or found  # a regular package is the first one found; a namespace package is all of them
    for where in places:
        for candidate in (os.path.join(where, f"{module}.py"), os.path.join(where, module, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
    raise UwfError(f"cannot find module {place} (install it, or add its directory to PYTHONPATH)")


def load_function(target: str) -> Callable:
    """The callable an entry point names; one line saying why when it cannot be had. A module
    whose file changed since this process imported it is imported again (a worker or uwf-tui
    that lives on runs the code on disk, and records that code's hash)."""
    place, _, name = target.rpartition(":")
    try:
        with _LOADING:
            if place.endswith(".py") or os.sep in place:
                module = _module_from_file(os.path.expanduser(place))
            else:
                from importlib import import_module

                module = _fresh(import_module(place))
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


_LOADING = threading.Lock()  # worker lanes may load the same module at once
_CODE: dict[str, tuple[object, str | None]] = {}  # module name -> (its file's stat when loaded, the file's hash then)


def _fresh(module):
    """The module, imported again if its file changed since it was loaded here."""
    from importlib import reload

    then = _code_of(module)[0]
    if then is not None and then != _stat(getattr(module, "__file__", None)):
        module = reload(module)
        _CODE[module.__name__] = _read_code(getattr(module, "__file__", None))
    return module


def _module_from_file(path: str):
    """A module loaded from a .py file (its name derived from the path); again when the file changed."""
    from importlib.util import module_from_spec, spec_from_file_location

    from ..encoding.ids import xxh64_hash

    if not os.path.isfile(path):
        raise UwfError(f"there is no file {path}")
    key = "uwf_agent_" + xxh64_hash(os.path.abspath(path).encode()).lower()
    loaded = sys.modules.get(key)
    if loaded is not None and _code_of(loaded)[0] == _stat(path):
        return loaded
    spec = spec_from_file_location(key, path)
    module = module_from_spec(spec)
    code = _read_code(path)
    sys.modules[key] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if loaded is not None:
            sys.modules[key] = loaded
        else:
            del sys.modules[key]
        raise
    _CODE[key] = code
    return module


def describe(func: Callable, target: str | None = None) -> PythonFunction:
    """The function with its code's identity: the module's __version__ (of its top-level package)
    and the hash of its source file as it was when the module was loaded here."""
    from ..repo import entry_point

    target = target or entry_point(func)
    module = sys.modules.get(getattr(func, "__module__", None) or "")
    version = source = None
    if module is not None:
        top = sys.modules.get(module.__name__.partition(".")[0])
        version = getattr(top, "__version__", None)
        version = version if isinstance(version, str) else None
        source = _code_of(module)[1]
    return PythonFunction(func, target, version, source)


def _code_of(module) -> tuple[object, str | None]:
    """(stat, hash) of a module's file when this process first saw the module."""
    name = module.__name__
    if name not in _CODE:
        _CODE[name] = _read_code(getattr(module, "__file__", None))
    return _CODE[name]


def _stat(path: str | None) -> object:
    try:
        stat = os.stat(path) if path else None
    except OSError:
        return None
    return None if stat is None else (stat.st_size, stat.st_mtime_ns, stat.st_ino)


def _read_code(path: str | None) -> tuple[object, str | None]:
    from ..encoding.ids import xxh64_hash

    stat = _stat(path)
    if stat is None:
        return None, None
    try:
        with open(path, "rb") as file:
            return stat, xxh64_hash(file.read())
    except OSError:
        return None, None


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
    """While the block runs, this thread's prints go to `sink` (dropped when it is None), and so does
    what anything writes to file descriptor 1 — a C library, a subprocess the function runs —
    which in the CLI is the JSON a command prints (in uwf-tui, nowhere anyone sees)."""

    def __init__(self, sink: Callable[[str], None] | None) -> None:
        self.sink = sink or (lambda line: None)

    def __enter__(self) -> None:
        for name in ("stdout", "stderr"):
            if not isinstance(getattr(sys, name), _Routed):
                setattr(sys, name, _Routed(getattr(sys, name)))
        _SINKS[threading.get_ident()] = self.sink
        _DESCRIPTOR.enter(self.sink)

    def __exit__(self, *exc) -> None:
        ident = threading.get_ident()
        rest = _PARTIAL.pop(ident, "")
        _SINKS.pop(ident, None)
        if rest:
            self.sink(rest)
        _DESCRIPTOR.leave(self.sink)


class _Descriptor:
    """File descriptor 1 as a pipe while any function runs in this process; its lines go to the
    sink of the call that began last (worker lanes running functions at once share the one
    descriptor a process has)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sinks: list = []
        self.saved: int | None = None
        self.reader: threading.Thread | None = None

    def enter(self, sink) -> None:
        with self.lock:
            self.sinks.append(sink)
            if self.saved is not None:
                return
            try:
                sys.__stdout__ and sys.__stdout__.flush()
                read_end, write_end = os.pipe()
                self.saved = os.dup(1)
                os.dup2(write_end, 1)
                os.close(write_end)
            except (OSError, ValueError):
                self.saved = None
                return
            self.reader = threading.Thread(target=self._read, args=(read_end,), name="uwf-fd1", daemon=True)
            self.reader.start()

    def leave(self, sink) -> None:
        reader = None
        with self.lock:
            if self.sinks == [sink] and self.saved is not None:
                os.dup2(self.saved, 1)  # the pipe's write end closes with it: the reader sees the end
                os.close(self.saved)
                self.saved = None
                reader, self.reader = self.reader, None
        if reader is not None:
            reader.join(timeout=1.0)  # what is still in the pipe reaches this sink (a child the function left running may hold it open)
        with self.lock:
            if sink in self.sinks:
                self.sinks.remove(sink)

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as pipe:
            for raw in pipe:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                sinks = self.sinks
                if sinks:
                    sinks[-1](line)


_DESCRIPTOR = _Descriptor()
