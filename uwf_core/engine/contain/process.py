"""Run one agent command: contained (in a bubblewrap sandbox, engine/contain/sandbox.py, or else in a
process group of its own under uwf as subreaper, engine/contain/orphans.py), stderr streamed line by
line, stdout collected, a timeout and a cancel that end everything it started.

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

from ...encoding.records import record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ...errors import UwfError
from .watchdog import WATCHDOG

if TYPE_CHECKING:
    from typing import IO, Callable

    from .orphans import Orphans
    from .sandbox import Policy

STDERR_TAIL_CHARS = 2000
# An answer is read whole before it is parsed: past this, the agent is stopped rather than
# buffered (uwf reads at most 8,000,000 characters of an answer; UTF-8 takes up to 4 bytes each).
MAX_STDOUT_BYTES = 32_000_000
TERM_GRACE_SECONDS = 2.0
LOOK_EVERY_SECONDS = 0.2  # the fallback containment's look at the agent's descendants


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
    raw_exit_code: int | None = None  # as the process uwf started ended (bubblewrap's own, in a sandbox)


class Cancel:
    """A flag a UI sets to stop a running agent (checked several times a second)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: str | None = None  # why, when the canceller says (recorded with the attempt)

    def set(self, reason: str | None = None) -> None:
        if not self._event.is_set():
            self.reason = reason
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def why(self) -> str:
        """" (the reason)" for a message, or nothing."""
        return f" ({self.reason})" if self.reason else ""


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group still runs. Zombies don't count: an orphaned
    child whose reaper is slow (or absent, in some containers) is already dead."""
    from .orphans import process_table

    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    table = process_table()
    if not table:
        return True  # no /proc to look in: the group answered the signal
    return any(group == pgid and state != b"Z" for _, group, state, *_ in table.values())


def kill_group(pgid: int, proc: subprocess.Popen[bytes] | None = None, grace: float = TERM_GRACE_SECONDS) -> None:
    """SIGTERM the group, then SIGKILL whatever is left after a short grace.

    `proc`, the group leader when it is our child, is reaped while waiting. A sandbox's leader is
    bubblewrap, which dies at once on SIGTERM and takes the sandbox with it: the agent inside,
    in a session of its own, is sent the SIGTERM instead, so it can stop its own children first.
    """
    try:
        for target in _sandboxed_sessions(pgid) or [pgid]:
            os.killpg(target, signal.SIGTERM)
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


def _sandboxed_sessions(pgid: int) -> list[int]:
    """The sessions of the agents a bubblewrap leader `pgid` runs (its children), else none."""
    try:
        with open(f"/proc/{pgid}/comm", "rb") as handle:
            if handle.read().strip() != b"bwrap":
                return []
        with open(f"/proc/{pgid}/task/{pgid}/children", "rb") as handle:
            return [int(pid) for pid in handle.read().split()]
    except (OSError, ValueError):
        return []


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
    policy: Policy | None = None,
    prompt_data: bytes | None = None,
    pass_fds: tuple[int, ...] = (),
    redact: Callable[[str], str] | None = None,
) -> ProcessOutcome:
    """Run `argv` to its end. With a `policy`, contained: in the sandbox it describes (where
    `prompt_data` becomes its /tmp/uwf-prompt.md), or else under uwf as subreaper. `redact`: the
    stderr kept is redacted before it is cut to its tail, so the cut never leaves half a key."""
    from .orphans import LEADERS, SPAWN_LOCK, Orphans, become_subreaper, reap_strays
    from .sandbox import BUBBLEWRAP, bwrap_argv, containment, empty_document

    started = time.monotonic()
    command, fds, orphans, own_fds = argv, tuple(pass_fds), None, []
    box = containment() if policy is not None and policy.sandbox else None
    boxed = box is not None and box.kind == BUBBLEWRAP
    if boxed:
        assert box is not None and box.bwrap is not None and policy is not None  # boxed: bubblewrap was found for the policy
        argv = [_check_command(argv[0], cwd, env), *argv[1:]]  # inside, bubblewrap would only say "execvp"
        prompt_fd = _memory_file(prompt_data) if prompt_data is not None else None
        empty_fds = tuple(_memory_file(empty_document(path)) for path in policy.hidden_files)
        own_fds = [*empty_fds, *([prompt_fd] if prompt_fd is not None else [])]
        command = bwrap_argv(box.bwrap, policy, argv, prompt_fd, empty_fds)
        fds += tuple(own_fds)
    elif policy is not None:
        become_subreaper()
    try:
        scope = None
        if boxed:
            from .landlock import scoped

            assert box is not None and box.bwrap is not None  # boxed, as above
            scope = scoped(box.bwrap)  # no abstract socket or signal beyond its own sandbox
        with SPAWN_LOCK:
            proc = _spawn(command, argv[0], cwd, env, stdin_text is not None, fds, scope)
            if policy is not None:
                LEADERS.add(proc.pid)  # no other agent's fallback containment takes it for an orphan
                orphans = None if boxed else Orphans(proc.pid)
    finally:
        for fd in own_fds:
            os.close(fd)
    WATCHDOG.guard(proc.pid)
    if stdin_text is not None:
        assert proc.stdin is not None  # a pipe: _spawn opens one when there is stdin_text
        rest = _write_what_fits(proc.stdin, stdin_text.encode("utf-8"))
        if rest:  # the agent reads it as it goes: a thread feeds the rest while we supervise
            threading.Thread(target=_feed, args=(proc.stdin, rest), daemon=True).start()
    if on_start is not None:  # after its prompt: a database write here would hold the agent up
        on_start(proc.pid)
    try:
        stdout, stderr_tail, timed_out, cancelled, overflowed = _supervise(proc, timeout, on_output, cancel, started, orphans, redact)
    finally:
        if proc.poll() is None:
            kill_group(proc.pid, proc)
            proc.wait()
        if orphans is not None:
            orphans.end()  # after the leader is reaped: its pid is no orphan's to take
        with SPAWN_LOCK:
            LEADERS.discard(proc.pid)
        WATCHDOG.release(proc.pid)
        if boxed:
            reap_strays()
    exit_code = _inner_exit(proc.returncode) if boxed else proc.returncode
    return ProcessOutcome(
        exit_code=exit_code,
        stdout=stdout,
        stderr_tail=stderr_tail,
        timed_out=timed_out,
        cancelled=cancelled,
        duration_ms=int((time.monotonic() - started) * 1000),
        pid=proc.pid,
        overflowed=overflowed,
        raw_exit_code=proc.returncode,
    )


def _spawn(
    command: list[str], name: str, cwd: str | None, env: dict[str, str], stdin: bool, fds: tuple[int, ...],
    scope: Callable[[], object] | None = None,
) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=fds,
            preexec_fn=scope,
        )
    except FileNotFoundError:
        raise UwfError(f"agent command '{name}' not found") from None
    except PermissionError:
        raise UwfError(f"agent command '{name}' is not executable") from None
    except OSError as exc:
        raise UwfError(f"cannot start agent command '{name}': {exc.strerror}") from None


def _inner_exit(code: int | None) -> int | None:
    """The agent's own exit as bubblewrap passes it on: 128+N when a signal N ended it."""
    if code is not None and 128 < code < 128 + 65:
        return -(code - 128)
    return code


def _check_command(name: str, cwd: str | None, env: dict[str, str]) -> str:
    """The command to run in a sandbox: a path's directory is resolved (a link kept in the caller's
    /tmp is not in the sandbox's), its name kept (a venv's python is a link that must stay one);
    a bare name is looked up on PATH there, as here."""
    from .which import which

    if os.sep in name:
        path = os.path.join(cwd or os.getcwd(), name)
        if not os.path.exists(path):
            raise UwfError(f"agent command '{name}' not found")
        if not os.access(path, os.X_OK) or os.path.isdir(path):
            raise UwfError(f"agent command '{name}' is not executable")
        return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    if which(name, path=env.get("PATH")) is None:
        raise UwfError(f"agent command '{name}' not found")
    return name


def _memory_file(data: bytes) -> int:
    """A file that lives only in memory, for bubblewrap to copy into the sandbox's /tmp."""
    fd = os.memfd_create("uwf-prompt")
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd



def _write_what_fits(pipe: IO[bytes], data: bytes) -> bytes:
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


def _feed(pipe: IO[bytes], data: bytes) -> None:
    try:
        pipe.write(data)
        pipe.close()
    except (BrokenPipeError, OSError, ValueError):
        pass


def _supervise(
    proc: subprocess.Popen[bytes],
    timeout: float | None,
    on_output: Callable[[str], None] | None,
    cancel: Cancel | None,
    started: float,
    orphans: Orphans | None = None,
    redact: Callable[[str], str] | None = None,
) -> tuple[str, str, bool, bool, bool]:
    assert proc.stdout is not None and proc.stderr is not None  # _spawn always pipes both
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, "out")
    selector.register(proc.stderr, selectors.EVENT_READ, "err")
    out_chunks: list[bytes] = []
    out_bytes = 0
    err_tail = bytearray()
    partial = bytearray()
    overflowed = False
    watch = _Watch(proc, timeout, cancel, started, orphans)
    exited_at = None
    while selector.get_map():
        watch.look()
        for key, _ in selector.select(timeout=0.1):
            data = os.read(key.fd, 65536)  # the fileobj's fileno(), as registered
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
        watch.stop_if_due()
    if partial:
        _emit(on_output, bytes(partial))
    for fileobj in (proc.stdout, proc.stderr):
        try:
            fileobj.close()
        except OSError:
            pass
    selector.close()
    while proc.poll() is None:  # both pipes closed (`exec >/dev/null 2>&1`), the agent still runs
        watch.look()
        watch.stop_if_due()
        try:
            proc.wait(timeout=0.1)
        except subprocess.TimeoutExpired:
            pass
    kept = err_tail.decode("utf-8", "replace")
    tail = _tail(redact(kept) if redact is not None else kept, STDERR_TAIL_CHARS)
    return b"".join(out_chunks).decode("utf-8", "replace"), tail, watch.timed_out, watch.cancelled, overflowed


class _Watch:
    """The step's timeout and cancel over one agent run, checked while its pipes are read and,
    once it has closed them, while it is waited for: an agent that closes its output keeps
    running under the same deadline. Its processes are looked up every LOOK_EVERY_SECONDS."""

    def __init__(
        self, proc: subprocess.Popen[bytes], timeout: float | None, cancel: Cancel | None, started: float, orphans: Orphans | None
    ) -> None:
        self.proc, self.timeout, self.cancel, self.started, self.orphans = proc, timeout, cancel, started, orphans
        self.timed_out = self.cancelled = False
        self.next_look = started + LOOK_EVERY_SECONDS  # a quick agent's processes are looked up at its end

    def look(self) -> None:
        if self.orphans is not None and time.monotonic() >= self.next_look:
            self.orphans.look()
            self.next_look = time.monotonic() + LOOK_EVERY_SECONDS

    def stop_if_due(self) -> None:
        if self.cancel is not None and self.cancel.is_set() and not self.cancelled:
            self.cancelled = True
            kill_group(self.proc.pid, self.proc)
        elif self.timeout is not None and not self.timed_out and time.monotonic() - self.started > self.timeout:
            self.timed_out = True
            kill_group(self.proc.pid, self.proc)


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


def _emit(on_output: Callable[[str], None] | None, line: bytes | bytearray) -> None:
    if on_output is not None:
        on_output(line.decode("utf-8", "replace").rstrip("\r"))
