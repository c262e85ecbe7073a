"""Run one agent command: its own process group, stderr streamed line by line,
stdout collected, a timeout and a cancel that kill the whole group.

The object that owns the child lives here, outside any UI: the CLI passes a
callback that writes lines to its stderr, the TUI one that posts them to a
log panel.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time

from ..encoding.records import record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import UwfError

if TYPE_CHECKING:
    from typing import Callable

STDERR_TAIL_CHARS = 2000
# An answer is read whole before it is parsed: past this, the agent is stopped rather than
# buffered (uwf reads at most 8,000,000 characters of an answer; UTF-8 takes up to 4 bytes each).
MAX_STDOUT_BYTES = 32_000_000
TERM_GRACE_SECONDS = 2.0
# Reads a pipe only this uwf process holds open: `+ PGID` when an agent starts, `- PGID` when uwf
# has dealt with it. End-of-file means uwf has exited, whether it finished or was SIGKILLed: the
# groups still listed then are orphans, and are killed.
WATCHDOG = '{ if ($1 == "+") live[$2] = 1; else delete live[$2] } END { for (g in live) system("kill -KILL -" g " 2>/dev/null") }'


@record(frozen=True)
class ProcessOutcome:
    exit_code: int | None  # negative: killed by that signal
    stdout: str
    stderr_tail: str
    timed_out: bool
    cancelled: bool
    duration_ms: int
    pid: int
    overflowed: bool = False  # stdout passed MAX_STDOUT_BYTES: the group was killed, the answer dropped


class Cancel:
    """A flag a UI sets to stop a running agent (checked several times a second)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group still runs. Zombies don't count: an orphaned
    child whose reaper is slow (or absent, in some containers) is already dead."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def kill_group(pgid: int, proc: subprocess.Popen | None = None, grace: float = TERM_GRACE_SECONDS) -> None:
    """SIGTERM the group, then SIGKILL whatever is left after a short grace.

    `proc`, the group leader when it is our child, is reaped while waiting.
    """
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc is not None:
            proc.poll()
        if not _group_alive(pgid):
            return
        time.sleep(0.05)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_process(
    argv: list[str],
    *,
    cwd: str | None,
    env: dict[str, str],
    stdin_text: str | None = None,
    timeout: float | None = None,
    on_output: Callable[[str], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    cancel: Cancel | None = None,
) -> ProcessOutcome:
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError:
        raise UwfError(f"agent command '{argv[0]}' not found") from None
    except PermissionError:
        raise UwfError(f"agent command '{argv[0]}' is not executable") from None
    except OSError as exc:
        raise UwfError(f"cannot start agent command '{argv[0]}': {exc.strerror}") from None
    WATCHDOG_PROCESS.guard(proc.pid)
    if on_start is not None:
        on_start(proc.pid)
    if stdin_text is not None:
        rest = _write_what_fits(proc.stdin, stdin_text.encode("utf-8"))
        if rest:  # the agent reads it as it goes: a thread feeds the rest while we supervise
            threading.Thread(target=_feed, args=(proc.stdin, rest), daemon=True).start()
    try:
        stdout, stderr_tail, timed_out, cancelled, overflowed = _supervise(proc, timeout, on_output, cancel, started)
    finally:
        if proc.poll() is None:
            kill_group(proc.pid, proc)
            proc.wait()
        WATCHDOG_PROCESS.release(proc.pid)
    return ProcessOutcome(
        exit_code=proc.returncode,
        stdout=stdout,
        stderr_tail=stderr_tail,
        timed_out=timed_out,
        cancelled=cancelled,
        duration_ms=int((time.monotonic() - started) * 1000),
        pid=proc.pid,
        overflowed=overflowed,
    )


class Watchdog:
    """One small process per uwf process (awk on a pipe, started with the first agent) that kills
    the process groups of the agents still running if uwf dies: a SIGKILLed `uwf thread step` or
    worker would otherwise leave its agent running beside the one the next step starts from the
    same head, two agents at work in one workspace. One for every agent a TUI or worker runs, so
    a step pays for no extra process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: subprocess.Popen | None = None
        self.live: set[int] = set()

    def guard(self, pgid: int) -> None:
        with self.lock:
            self.live.add(pgid)
            self._tell(f"+ {pgid}\n")

    def release(self, pgid: int) -> None:
        with self.lock:
            self.live.discard(pgid)
            self._tell(f"- {pgid}\n")

    def _tell(self, line: str) -> None:
        for _ in range(2):  # a watchdog that died (killed by hand) is started again, told every live group
            if self.process is None or self.process.poll() is not None:
                self.process = self._start()
                if self.process is None:
                    return  # no awk: steps run unguarded, as they would have anyway
                line = "".join(f"+ {pgid}\n" for pgid in self.live)  # the set as it is now, this change included
            try:
                self.process.stdin.write(line.encode())
                self.process.stdin.flush()
                return
            except OSError:
                self.process = None

    @staticmethod
    def _start() -> subprocess.Popen | None:
        try:
            return subprocess.Popen(
                ["awk", WATCHDOG],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's ctrl+c is uwf's to handle, not its
            )
        except OSError:
            return None


WATCHDOG_PROCESS = Watchdog()


def _write_what_fits(pipe, data: bytes) -> bytes:
    """Write what the pipe takes now without waiting (a prompt usually fits: no thread to start,
    ~1 ms saved), closing it when all went; returns the rest."""
    fd = pipe.fileno()
    os.set_blocking(fd, False)
    try:
        written = os.write(fd, data)
    except BlockingIOError:
        written = 0
    except OSError:  # the agent is gone already: its exit says why
        written = len(data)
    finally:
        os.set_blocking(fd, True)
    if written >= len(data):
        try:
            pipe.close()
        except OSError:
            pass
        return b""
    return data[written:]


def _feed(pipe, data: bytes) -> None:
    try:
        pipe.write(data)
        pipe.close()
    except (BrokenPipeError, OSError, ValueError):
        pass


def _supervise(proc, timeout, on_output, cancel, started):
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, "out")
    selector.register(proc.stderr, selectors.EVENT_READ, "err")
    out_chunks: list[bytes] = []
    out_bytes = 0
    err_tail = bytearray()
    partial = bytearray()
    timed_out = cancelled = overflowed = False
    exited_at = None
    while selector.get_map():
        for key, _ in selector.select(timeout=0.1):
            data = os.read(key.fileobj.fileno(), 65536)
            if not data:
                selector.unregister(key.fileobj)
                continue
            if key.data == "out":
                out_bytes += len(data)
                if out_bytes > MAX_STDOUT_BYTES:
                    if not overflowed:
                        overflowed = True
                        out_chunks.clear()
                        kill_group(proc.pid, proc)
                    continue  # drained, not kept, until the pipe closes
                out_chunks.append(data)
            else:
                err_tail += data
                del err_tail[: max(0, len(err_tail) - STDERR_TAIL_CHARS * 2)]
                partial += data
                *lines, rest = partial.split(b"\n")
                partial = bytearray(rest)
                for line in lines:
                    _emit(on_output, line)
        if proc.poll() is not None:
            if exited_at is None:
                exited_at = time.monotonic()
                kill_group(proc.pid, proc)  # leftovers of a finished agent would hold the pipes open
            elif time.monotonic() - exited_at > 1.0:
                break
            continue
        if cancel is not None and cancel.is_set() and not cancelled:
            cancelled = True
            kill_group(proc.pid, proc)
        elif timeout is not None and not timed_out and time.monotonic() - started > timeout:
            timed_out = True
            kill_group(proc.pid, proc)
    if partial:
        _emit(on_output, bytes(partial))
    for fileobj in (proc.stdout, proc.stderr):
        try:
            fileobj.close()
        except OSError:
            pass
    selector.close()
    proc.wait()
    tail = _tail(err_tail.decode("utf-8", "replace"), STDERR_TAIL_CHARS)
    return b"".join(out_chunks).decode("utf-8", "replace"), tail, timed_out, cancelled, overflowed


def _tail(text: str, limit: int) -> str:
    """The last `limit` characters, starting at a line (else a word) so no record begins mid-word."""
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    for boundary in ("\n", " "):
        at = cut.find(boundary)
        if 0 <= at < limit // 2:
            return cut[at + 1 :]
    return cut


def _emit(on_output, line: bytes) -> None:
    if on_output is not None:
        on_output(line.decode("utf-8", "replace").rstrip("\r"))
