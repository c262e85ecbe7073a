"""What a Python agent's function writes, as the step's output: its prints (per thread, through
sys.stdout and sys.stderr) and whatever reaches file descriptor 1 (a C library, a program it
runs) — in the CLI, that descriptor is the JSON a command prints."""

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
