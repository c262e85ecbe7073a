"""Records that cross the storage interface: archived threads, step attempts, running steps."""

from __future__ import annotations

import json
import os

from ..encoding.records import asdict, field, record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any, Callable

# A step's live output (StepLease.say, `uwf thread live`): bounded, so an agent that floods its
# stderr fills neither the root's disk nor a follower's memory; the step itself goes on.
LIVE_MAX_BYTES = 16 * 1024 * 1024  # of one step's lines; past it, one line says they were cut
LIVE_MAX_LINE = 16 * 1024  # characters of one line (the rest cut)
LIVE_CUT = "uwf: the live view of this step stops here: its output passed 16 MB (the step goes on; `uwf thread runs` keeps its stderr's tail)"


def live_line(line: str) -> str:
    """A line as the live view carries it: cut at LIVE_MAX_LINE, no NUL (a PostgreSQL payload ends at one)."""
    line = line if len(line) <= LIVE_MAX_LINE else line[: LIVE_MAX_LINE - 3] + "..."
    return line.replace("\x00", "\ufffd")


@record(frozen=True)
class ArchivedThread:
    """One line of the archive: a thread that ended (done, killed, max-steps)."""

    thread: str
    workflow: str | None
    head: str
    reason: str
    completed_at: int | None = None
    summary: str | None = None  # the summarizer's account of a finished run, or why the supervisor killed it

    def to_json(self) -> dict[str, Any]:
        data = {"thread": self.thread, "workflow": self.workflow, "head": self.head, "reason": self.reason, "completedAt": self.completed_at}
        if self.summary is not None:
            data["summary"] = self.summary
        return data


@record(frozen=True)
class DamagedEntry:
    """A line of a state file or log that uwf cannot read: that entry alone is hidden, kept in
    the file as it was, and reported where it is (`thread list`, `cas fsck`, the workbench)."""

    file: str
    line: int
    text: str
    problem: str
    hides: bool = True  # False: nothing is hidden by it (a torn archive record of a thread still active)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def detail(self) -> str:
        if not self.hides:
            return f"{self.problem}; its thread is active, so nothing is hidden (delete the line)"
        return f"{self.problem}; the entry is hidden until the line is fixed or deleted"

    @property
    def message(self) -> str:
        return f"{self.where}: {self.detail}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "text": self.text, "problem": self.problem, "hides": self.hides}


@record(frozen=True)
class OutsideWrites:
    """What one step attempt's agent wrote outside its workspace, and what uwf did with it
    (design §16): the paths as a person reads them, each list at most LISTED long (`more` counts
    the rest)."""

    state: tuple[str, ...] = ()  # in its state directories' private copies: thrown away
    writable: tuple[str, ...] = ()  # in the places its entry makes writable: kept, as they are
    git: tuple[str, ...] = ()  # in its private copy of .git: taken with `git: commit`, else thrown away
    refused: tuple[str, ...] = ()  # git settings in that copy (never taken); repositories it made (renamed aside)
    warnings: tuple[str, ...] = ()  # what it changed that a later session of yours trusts
    notes: tuple[str, ...] = ()  # what uwf could not carry back (a login, a branch)
    more: int = 0  # paths past LISTED, left out of the lists
    git_taken: bool = False  # its entry's `git: commit`: what it wrote in .git's objects, refs and index was taken

    LISTS = ("state", "writable", "git", "refused", "warnings", "notes")
    LISTED = 50

    @property
    def empty(self) -> bool:
        return not any(getattr(self, name) for name in self.LISTS)

    def merged(self, other: OutsideWrites) -> OutsideWrites:
        """Two runs of one attempt (an answer and its correction) as one record; a list past
        LISTED is told by directory (`dir/ (N paths)`), so no path is lost among many others."""
        values, more = {}, self.more + other.more
        for name in self.LISTS:
            joined = list(dict.fromkeys([*getattr(self, name), *getattr(other, name)]))
            if len(joined) > self.LISTED and name in ("state", "writable", "git"):
                joined = _by_directory(joined, self.LISTED)
            more += max(0, len(joined) - self.LISTED)
            values[name] = tuple(joined[: self.LISTED])
        return OutsideWrites(**values, more=more, git_taken=self.git_taken or other.git_taken)

    def mapped(self, change: Callable[[str], str]) -> OutsideWrites:
        """Every text of the record passed through `change` (the redaction of every key)."""
        values = {name: tuple(change(item) for item in getattr(self, name)) for name in self.LISTS}
        return OutsideWrites(**values, more=self.more, git_taken=self.git_taken)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {name: list(getattr(self, name)) for name in self.LISTS if getattr(self, name)}
        if self.more:
            data["more"] = self.more
        if self.git_taken and self.git:
            data["gitTaken"] = True
        return data

    def lines(self) -> list[str]:
        """The record as a person reads it, a heading per list (`thread files`, the workbench)."""
        titles = (
            ("state", "in its private copy of its state directories (thrown away)"),
            ("writable", "in the places its entry makes writable (kept)"),
            ("git", "in its private copy of .git (" + ("its commits taken: git: commit" if self.git_taken else "thrown away") + ")"),
            ("refused", "refused"), ("warnings", "to review: a later session trusts it"), ("notes", "notes"),
        )
        lines = []
        for name, title in titles:
            items = getattr(self, name)
            if items:
                lines.append(f"{title}:")
                lines.extend(f"  {item}" for item in items)
        if self.more:
            lines.append(f"(and {self.more} more paths)")
        return lines

    @classmethod
    def from_dict(cls, data: object) -> OutsideWrites | None:
        if not isinstance(data, dict):
            return None
        values = {name: tuple(str(item) for item in data.get(name) or () if isinstance(item, str)) for name in cls.LISTS if isinstance(data.get(name), list)}
        more = data.get("more")
        return cls(**values, more=more if isinstance(more, int) and not isinstance(more, bool) else 0, git_taken=data.get("gitTaken") is True)


def _by_directory(paths: list[str], limit: int) -> list[str]:
    """Paths folded into their directories, the fullest first, until at most `limit` remain."""
    counted = {path: 1 for path in paths}  # a path, or a folded directory ("dir/"), -> the paths it stands for
    while len(counted) > limit:
        parents: dict[str, int] = {}
        for shown, count in counted.items():
            parent = _parent(shown)
            if parent:
                parents[parent] = parents.get(parent, 0) + count
        fullest = max(parents, key=lambda parent: parents[parent], default=None)
        inside = [shown for shown in counted if _parent(shown) == fullest]
        if fullest is None or len(inside) < 2:
            break
        for shown in inside:
            del counted[shown]
        counted[fullest] = counted.get(fullest, 0) + parents[fullest]
    return sorted(f"{shown} ({count} paths)" if shown.endswith("/") else shown for shown, count in counted.items())


def _parent(path: str) -> str:
    trimmed = path.rstrip("/")
    return trimmed.rsplit("/", 1)[0] + "/" if "/" in trimmed else ""


@record(frozen=True)
class RunRecord:
    """One step attempt: ok, failed, timeout, killed, or budget (its budget refused it; no agent ran)."""

    thread: str
    workflow: str | None
    role: str | None
    agent: str | None
    status: str
    head: str | None  # the head the attempt started from (unchanged unless status is ok)
    step: str | None  # the new head when status is ok
    startedAt: int
    completedAt: int
    durationMs: int
    error: str | None = None
    stderr: str | None = None  # the agent's stderr tail, on failure
    candidateOf: str | None = None  # the thread this fork's step was a candidate for (agents side by side)
    worker: str | None = None  # the `uwf worker` that ran the attempt
    containment: str | None = None  # how its agent ran: bubblewrap, process-group (why), none, in uwf's process
    outside: OutsideWrites | None = None  # what its agent wrote outside the workspace

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        data = {key: value for key, value in asdict(self).items() if (value is not None or key in ("step", "head")) and key != "outside"}
        if self.outside is not None and not self.outside.empty:
            data["outside"] = self.outside.to_dict()
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord | None:
        """A record from a stored line; None when the line is not one (hand-edited, truncated)."""
        if not isinstance(data.get("thread"), str) or not isinstance(data.get("status"), str):
            return None

        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        def number(key: str) -> int:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        return cls(
            data["thread"], text("workflow"), text("role"), text("agent"), data["status"], text("head"), text("step"),
            number("startedAt"), number("completedAt"), number("durationMs"), text("error"), text("stderr"),
            text("candidateOf"), text("worker"), text("containment"), OutsideWrites.from_dict(data.get("outside")),
        )


@record(frozen=True)
class RunningStep:
    """What a held step lock says about the step in progress."""

    pid: int
    pgid: int | None
    role: str | None
    agent: str | None
    started_at: int | None
    host: str | None = None  # where it runs (a PostgreSQL root is stepped from many hosts)
    worker: str | None = None  # the `uwf worker` running it, if one is
    waiting: str | None = None  # a map step: how many of its children are done
    lost: str | None = None  # why its holder lost the lock alive (the database restarted, its lease lapsed)

    def describe(self) -> str:
        what = f"pid {self.pid}" + (f" on {self.host}" if self.host and self.host != this_host() else "")
        if self.worker:
            what = f"worker {self.worker}, {what}"
        if self.role:
            what += f" (role {self.role}, agent {self.agent})"
        if self.waiting:
            what += f", waiting: {self.waiting}"
        return what

    @property
    def here(self) -> bool:
        """Whether its process group can be signalled from this host."""
        return self.host is None or self.host == this_host()


@record(frozen=True)
class QueuedThread:
    """A thread waiting for (or being stepped by) a `uwf worker`."""

    thread: str
    queued_at: int  # ms
    worker: str | None = None  # the worker holding it now, if one does
    asking: str | None = None  # the head at which it waits for a person (`uwf inbox`); claimed again once the head moves


def this_host() -> str:
    """The host's name, as `socket.gethostname()` gives it (without importing socket: ~5 ms of
    every `uwf` start that takes a lock)."""
    return os.uname().nodename


def process_alive(pid: int) -> bool:
    """Whether a process of this host runs: a zombie (killed, not yet reaped by its parent) has
    died, and the lock it held is free (its flock, its database session)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError, ValueError):
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] != b"Z"
    except OSError:
        return True  # no /proc: alive as far as kill says


SET_ASIDE = ".damaged-"  # in the name a repaired node file is kept under (store/fs/repair.py)


@record
class RepairReport:
    damaged: bool
    problem: str | None = None
    recovered: int = 0  # verified nodes in the rebuilt file
    rejected: int = 0  # rows shaped like nodes whose bytes did not verify (torn or stale copies)
    set_aside: list[str] = field(default_factory=list)  # the damaged file(s), renamed beside the new one
    lost: dict[str, list[str]] = field(default_factory=dict)  # hash -> what needs it
    state_set_aside: list[str] = field(default_factory=list)  # `file:line -> aside`: state file lines taken out

    def to_dict(self) -> dict[str, Any]:
        return {
            "damaged": self.damaged,
            "problem": self.problem,
            "recovered": self.recovered,
            "rejected": self.rejected,
            "setAside": self.set_aside,
            "lost": [{"hash": hash_, "neededBy": needed} for hash_, needed in self.lost.items()],
            "stateSetAside": self.state_set_aside,
        }
