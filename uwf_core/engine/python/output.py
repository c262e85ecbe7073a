"""What a Python agent's function writes, as the step's output: its prints, line by line as they
come (per thread, through sys.stdout and sys.stderr), and whatever reaches file descriptor 1 (a C
library, a program it runs), when the call ends — in the CLI, that descriptor is the JSON a
command prints."""

from __future__ import annotations

import os
import sys
import threading

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Callable


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


class thread_output:
    """While the block runs, this thread's prints go to `sink` (dropped when None); nothing else
    is rerouted (a function's own thread, when its caller holds the descriptor: call.py)."""

    def __init__(self, sink: Callable[[str], None] | None) -> None:
        self.sink = sink or (lambda line: None)

    def __enter__(self) -> None:
        for name in ("stdout", "stderr"):
            if not isinstance(getattr(sys, name), _Routed):
                setattr(sys, name, _Routed(getattr(sys, name)))
        _SINKS[threading.get_ident()] = self.sink

    def __exit__(self, *exc: object) -> None:
        ident = threading.get_ident()
        rest = _PARTIAL.pop(ident, "")
        sink = _SINKS.pop(ident, None)
        if rest and sink is not None:
            sink(rest)


def drop_output(ident: int) -> None:
    """What a thread given up on prints from now on goes nowhere (its step has ended)."""
    if ident in _SINKS:
        _SINKS[ident] = lambda line: None


class routed_output(thread_output):
    """While the block runs, this thread's prints go to `sink` (dropped when it is None), and so does
    what anything writes to file descriptor 1 — a C library, a subprocess the function runs —
    which in the CLI is the JSON a command prints (in uwf-tui, nowhere anyone sees)."""

    def __enter__(self) -> None:
        super().__enter__()
        _DESCRIPTOR.enter(self.sink)

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        _DESCRIPTOR.leave(self.sink)


class _Descriptor:
    """File descriptor 1 as a file of its own while any function runs in this process, read back
    when the last one ends: its lines go, after the call, to the sink of the call that ended last
    (worker lanes running functions at once share the one descriptor a process has). A file, not a
    pipe: no reader thread per call, and no writer blocked on a full pipe."""

    MAX_BYTES = 1 << 20  # what is shown of it, the end of it

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.saved: int | None = None
        self.file: int | None = None

    def enter(self, sink) -> None:
        with self.lock:
            self.active += 1
            if self.active > 1:
                return
            try:
                if self.file is None:
                    self.file = _scratch_file()
                sys.__stdout__ and sys.__stdout__.flush()
                self.saved = os.dup(1)
                os.dup2(self.file, 1)
            except (OSError, ValueError):
                self.saved = None

    def leave(self, sink) -> None:
        with self.lock:
            self.active -= 1
            if self.active or self.saved is None:
                return
            os.dup2(self.saved, 1)
            os.close(self.saved)
            self.saved = None
            size = os.fstat(self.file).st_size
            if not size:
                return
            start = max(0, size - self.MAX_BYTES)
            data = os.pread(self.file, size - start, start)
            os.ftruncate(self.file, 0)
        if start:
            sink(f"({start:,} bytes written to stdout before this are not shown)")
        for line in data.decode("utf-8", "replace").splitlines():
            sink(line)


def _scratch_file() -> int:
    """An unnamed file in the temp directory (nothing to clean up, however uwf ends)."""
    import tempfile

    directory = tempfile.gettempdir()
    try:
        return os.open(directory, os.O_TMPFILE | os.O_RDWR, 0o600)
    except (AttributeError, OSError):  # no O_TMPFILE here
        handle = tempfile.TemporaryFile()
        return os.dup(handle.fileno())


_DESCRIPTOR = _Descriptor()
