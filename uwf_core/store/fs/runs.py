"""runs.jsonl: one line per step attempt (ok, failed, timeout, killed), append-only."""

from __future__ import annotations

from ..files import append_line
from ..records import DamagedEntry, RunRecord
from .root import Root, load_jsonl, without_lines


class FsRunLog:
    __slots__ = ("root",)

    def __init__(self, root: Root) -> None:
        self.root = root

    def append(self, record: RunRecord) -> None:
        with self.root.lock("runs"):
            # Not fsynced: the head and the nodes are what must survive a power cut; a lost last
            # attempt line costs nothing else (and readers skip a torn one).
            append_line(self.root.runs_file, record.to_json(), sync=False)

    def mend(self, stamp: str) -> list[str]:
        """Set aside the lines that cannot be read (`cas fsck --repair`)."""
        with self.root.lock("runs"):
            return without_lines(self.root.runs_file, self.damaged(), stamp)

    def damaged(self) -> list[DamagedEntry]:
        return load_jsonl(self.root.runs_file, RunRecord.from_dict)[1]

    def read(self, thread: str | None = None) -> list[RunRecord]:
        """Attempts, oldest first; a torn or foreign line is skipped (`damaged` lists them). A
        thread's records are found by its id in the line before any is parsed."""
        if thread is None:
            return load_jsonl(self.root.runs_file, RunRecord.from_dict)[0]
        records = load_jsonl(self.root.runs_file, RunRecord.from_dict, wanted=lambda line: thread in line)[0]
        return [record for record in records if record.thread == thread]

    def of_step(self, step: str) -> list[RunRecord]:
        records = load_jsonl(self.root.runs_file, RunRecord.from_dict, wanted=lambda line: step in line)[0]
        return [record for record in records if record.step == step]
