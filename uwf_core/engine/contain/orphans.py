"""Fallback containment, where bubblewrap cannot start: uwf is its agents' child subreaper
(PR_SET_CHILD_SUBREAPER), so a process an agent leaves behind — even one that moved to a session
of its own with setsid — is re-parented to uwf instead of to init. While the agent runs, its
descendants are looked up a few times a second; when its step ends, every one still alive is
stopped and killed, and the watchdog is told of each, so a SIGKILLed uwf takes them along too.

It is best effort, as a PID namespace is not: a process orphaned between two looks is known
only as a child of uwf that no agent claimed, and is killed when the last agent running in this
uwf ends (a TUI or worker runs several; one's end never kills another's processes).
"""

from __future__ import annotations

import os
import signal
import threading

from .watchdog import WATCHDOG

PR_SET_CHILD_SUBREAPER = 36
LEADERS: set[int] = set()  # every agent this uwf runs now (sandboxed too): its children that are no orphans
SPAWN_LOCK = threading.Lock()  # held while an agent starts: a look meanwhile would take it for an orphan
_SUBREAPER: list[bool] = []


def become_subreaper() -> bool:
    """Once per process; False where the kernel (or a non-Linux system) does not offer it."""
    if not _SUBREAPER:
        ok = False
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            ok = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            pass
        _SUBREAPER.append(ok)
    return _SUBREAPER[0]


def reap_strays() -> None:
    """Reap the ended processes re-parented to this uwf that no one waits for: once uwf is a
    subreaper (an agent ran without bubblewrap), a sandbox's inner bubblewrap whose outer one was
    killed first comes here when it ends, and a TUI or worker would gather them by the thousand.
    Never an agent (a leader: its Popen waits for it), the watchdog, or a child of uwf's session."""
    if not (_SUBREAPER and _SUBREAPER[0]):
        return
    me, my_session = os.getpid(), os.getsid(0)
    with SPAWN_LOCK:
        table = process_table()
        for pid, (ppid, _, state, _, session) in table.items():
            if ppid == me and state == b"Z" and pid not in LEADERS and pid != WATCHDOG.pid and session != my_session:
                Orphans._reap(pid)


def process_table() -> dict[int, tuple[int, int, bytes, int, int]]:
    """pid -> (ppid, process group, state, start time, session) of every process, from /proc."""
    table = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 19:
            table[int(entry)] = (int(fields[1]), int(fields[2]), fields[0], int(fields[19]), int(fields[3]))
    return table


class Orphans:
    """The processes one agent started, for the fallback containment."""

    def __init__(self, leader: int) -> None:
        """Call with SPAWN_LOCK held, right after the agent started (run_process registers it as a leader)."""
        self.leader = leader
        self.seen: dict[int, int] = {}  # pid -> start time (a reused pid is another process)

    def look(self, *, alone: bool = False) -> None:
        """Note every live descendant of the agent; `alone` (no other agent runs here), also every
        unclaimed orphan re-parented to uwf. Reap what ended among them."""
        me, my_session = os.getpid(), os.getsid(0)
        with SPAWN_LOCK:
            table = process_table()
            others = set(LEADERS)
        children: dict[int, list[int]] = {}
        for pid, (ppid, *_) in table.items():
            children.setdefault(ppid, []).append(pid)
        # uwf's own children that no agent runs: not one it started itself in its session (an editor)
        strays = [pid for pid in children.get(me, []) if pid not in others and pid != WATCHDOG.pid and table[pid][4] != my_session]
        stack = [*children.get(self.leader, []), *(pid for pid in strays if pid in self.seen or alone)]
        while stack:
            pid = stack.pop()
            ppid, _, state, started, _ = table[pid]
            stack.extend(children.get(pid, []))
            if state == b"Z":
                if ppid == me:  # an orphan that ended: uwf, its new parent, must reap it
                    self._reap(pid)
            elif self.seen.get(pid) != started:
                self.seen[pid] = started
                WATCHDOG.guard_pid(pid)
        for pid in [pid for pid in self.seen if pid not in table]:
            self._forget(pid)

    def end(self) -> None:
        """Stop and kill every process the agent left, and reap those that were re-parented to uwf."""
        import time

        for _ in range(40):  # a killed parent's children come to uwf in turn: look until none is left
            with SPAWN_LOCK:
                alone = not (LEADERS - {self.leader})
            self.look(alone=alone)
            table = process_table()
            alive = [pid for pid, started in self.seen.items() if pid in table and table[pid][3] == started and table[pid][2] != b"Z"]
            if not alive:
                break
            for sig in (signal.SIGSTOP, signal.SIGKILL):  # all stopped first: no parent runs on when its child dies
                for pid in alive:
                    try:
                        os.kill(pid, sig)
                    except (ProcessLookupError, PermissionError):
                        pass
            time.sleep(0.05)
        for pid in list(self.seen):
            self._forget(pid)

    def _forget(self, pid: int) -> None:
        self.seen.pop(pid, None)
        WATCHDOG.release_pid(pid)

    @staticmethod
    def _reap(pid: int) -> None:
        try:
            os.waitpid(pid, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass
