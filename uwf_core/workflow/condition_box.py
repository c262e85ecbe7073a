"""A JSONata evaluation in a child process of its own, with a hard deadline and a memory cap.

jsonata-python checks its clock between the steps of an expression, not inside one built-in: an
80-character condition (`$replace($pad("", 1000000, "a"), "a", $pad("", 1000, "b"))`) held a step
for 40 s at 1 GB, and a workflow from a bundle can carry one. So the evaluation runs in a forked
child (the compiled expression and its functions come along, nothing is imported again) whose
address space is capped (RLIMIT_AS) and which is killed at the deadline; its value comes back
pickled through a pipe. A fork costs ~1-2 ms, and only conditions outside simple_condition's
subset come here.
"""

from __future__ import annotations

import os

from ..errors import UwfError

MEMORY_BYTES = 512 << 20  # what an evaluation may add to the process's address space
RESULT_BYTES = 64 << 20  # a value larger than this is no routing decision


def run_boxed(work, seconds: float, grace: float = 0.0, memory: int = MEMORY_BYTES, what: str = "the expression") -> object:
    """`work()`'s value, computed in a child; UwfError when it raises one, runs past `seconds`
    (killed `grace` seconds later, for its own clock to say so first), or needs more than
    `memory` bytes (`what` names it in the message)."""
    import select
    import signal
    import time

    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, send, leave without running anything of the parent's
        try:
            os.close(reader)
            _child(work, writer, memory)
        finally:
            os._exit(0)
    os.close(writer)
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + seconds + grace
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise UwfError(f"{what} ran longer than {seconds:g} s and was stopped")
            ready, _, _ = select.select([reader], [], [], left)
            if not ready:
                continue
            chunk = os.read(reader, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > RESULT_BYTES:
                raise UwfError(f"{what}: its value is larger than {RESULT_BYTES >> 20} MB")
            chunks.append(chunk)
    finally:
        os.close(reader)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    return _outcome(b"".join(chunks), memory, what)


def _child(work, writer: int, memory: int) -> None:
    import pickle
    import resource

    try:
        with open("/proc/self/statm", "rb") as handle:
            used = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (used + memory, used + memory))
    except (OSError, ValueError):
        pass  # no /proc, or a limit already lower: the deadline still holds
    try:
        data = b"v" + pickle.dumps(work())
    except MemoryError:
        data = b"m"
    except UwfError as exc:
        data = b"e" + exc.message.encode("utf-8", "replace")
    except RecursionError:
        data = b"e" + b"the expression recursed too deeply (more than Python's stack allows)"
    except Exception as exc:  # noqa: BLE001 - whatever it is, the parent says it in one line
        data = b"e" + f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")
    view = memoryview(data)
    while view:
        view = view[os.write(writer, view) :]


def _outcome(data: bytes, memory: int, what: str) -> object:
    import pickle

    kind, body = data[:1], data[1:]
    if kind == b"v":
        return pickle.loads(body)  # noqa: S301 - our own child's bytes
    if kind == b"e":
        raise UwfError(body.decode("utf-8", "replace"))
    if kind == b"m":
        raise UwfError(f"{what} needed more than {memory >> 20} MB and was stopped")
    raise UwfError(f"{what} ended without a value (its process was killed)")
