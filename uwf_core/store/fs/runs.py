"""runs.jsonl: one line per step attempt (ok, failed, timeout, killed), append-only."""

from __future__ import annotations

import json

from ...errors import UwfError
from ..files import append_line
from ..records import DamagedEntry, RunRecord
from .root import Root, load_jsonl


class FsRunLog:
    __slots__ = ("root",)

    def __init__(self, root: Root) -> None:
        self.root = root

    def append(self, record: RunRecord) -> None:
        with self.root.lock("runs"):
            # Not fsynced: the head and the nodes are what must survive a power cut; a lost last
            # attempt line costs nothing else (and readers skip a torn one).
            append_line(self.root.runs_file, record.to_json(), sync=False)

    def damaged(self) -> list[DamagedEntry]:
        return load_jsonl(self.root.runs_file, RunRecord.from_dict)[1]

    def read(self, thread: str | None = None) -> list[RunRecord]:
        """Attempts, oldest first; a torn last line (a crash mid-append) or a foreign line is skipped."""
        try:
            with open(self.root.runs_file, "rb") as handle:
                text = handle.read().decode("utf-8", "replace")  # a garbled line is skipped, not fatal
        except FileNotFoundError:
            text = ""
        except OSError as exc:
            raise UwfError(f"cannot read {self.root.runs_file}: {exc.strerror}") from None
        records = []
        for line in text.split("\n"):  # not splitlines(): U+2028 in an agent's stderr is inside a record
            if thread is not None and thread not in line:
                continue  # cheap pre-filter: the id is in the line of every record of the thread
            try:
                data = json.loads(line)
            except (ValueError, RecursionError):
                continue
            record = RunRecord.from_dict(data) if isinstance(data, dict) else None
            if record is not None and (thread is None or record.thread == thread):
                records.append(record)
        return records
