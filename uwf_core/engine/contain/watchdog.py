"""The watchdog: one small awk process per uwf process, on a pipe only that uwf holds open.

uwf tells it what must not outlive uwf — `+ PGID` / `- PGID` for an agent's process group,
`p PID` / `q PID` for a process the fallback containment found (engine/contain/orphans.py), `f PATH` /
`r PATH` for a prompt file or a staging directory on disk — and end-of-file means uwf has exited, whether it finished
or was SIGKILLed: what is still listed then is killed or removed. A SIGKILLed `uwf thread step`
or worker would otherwise leave its agent running beside the one the next step starts from the
same head, two agents at work in one workspace. One for every agent a TUI or worker runs.
"""

from __future__ import annotations

import subprocess
import threading

# Everything is stopped before anything is killed: killed one by one, a parent whose child was
# killed first would go on to its next command (`sleep 9; touch late`: the touch) before its turn.
# (dash's kill takes no `--`: a group is a negative number right after the signal.)
PROGRAM = (
    '{ arg = substr($0, 3) } '
    '$1 == "+" { groups[arg] = 1 } $1 == "-" { delete groups[arg] } '
    '$1 == "p" { pids[arg] = 1 } $1 == "q" { delete pids[arg] } '
    '$1 == "f" { files[arg] = 1 } $1 == "r" { delete files[arg] } '
    'END { targets = ""; for (g in groups) targets = targets " -" g; for (p in pids) targets = targets " " p; '
    'if (targets != "") system("kill -STOP" targets " 2>/dev/null; kill -KILL" targets " 2>/dev/null"); '
    "for (f in files) system(\"rm -rf -- '\" f \"'\") }"
)


class Watchdog:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: subprocess.Popen | None = None
        self.live: dict[str, None] = {}  # every line still in force, in order

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def guard(self, pgid: int) -> None:
        self._set(f"+ {pgid}", f"- {pgid}")

    def release(self, pgid: int) -> None:
        self._unset(f"+ {pgid}", f"- {pgid}")

    def guard_pid(self, pid: int) -> None:
        self._set(f"p {pid}", f"q {pid}")

    def release_pid(self, pid: int) -> None:
        self._unset(f"p {pid}", f"q {pid}")

    def guard_file(self, path: str) -> None:
        if "'" not in path and "\n" not in path:  # uwf's own temp names; anything else is not ours to rm
            self._set(f"f {path}", f"r {path}")

    def release_file(self, path: str) -> None:
        self._unset(f"f {path}", f"r {path}")

    def _set(self, line: str, undo: str) -> None:
        with self.lock:
            self.live[line] = None
            self._tell(line + "\n")

    def _unset(self, line: str, undo: str) -> None:
        with self.lock:
            self.live.pop(line, None)
            self._tell(undo + "\n")

    def _tell(self, line: str) -> None:
        for _ in range(2):  # a watchdog that died (killed by hand) is started again, told everything live
            if self.process is None or self.process.poll() is not None:
                self.process = self._start()
                if self.process is None:
                    return  # no awk: steps run unguarded, as they would have anyway
                line = "".join(f"{entry}\n" for entry in self.live)  # the set as it is now, this change included
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
                ["awk", PROGRAM],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's ctrl+c is uwf's to handle, not its
            )
        except OSError:
            return None


WATCHDOG = Watchdog()
