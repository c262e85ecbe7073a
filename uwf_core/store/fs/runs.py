"""runs.jsonl: one line per step attempt (ok, failed, timeout, killed), append-only."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from .files import Root, append_line, read_text


@dataclass(frozen=True)
class RunRecord:
    thread: str
    workflow: str | None
    role: str | None
    agent: str | None
    status: str  # ok, failed, timeout or killed
    head: str | None  # the head the attempt started from (unchanged unless status is ok)
    step: str | None  # the new head when status is ok
    startedAt: int
    completedAt: int
    durationMs: int
    error: str | None = None
    stderr: str | None = None  # the agent's stderr tail, on failure

    def to_json(self) -> str:
        data = {key: value for key, value in asdict(self).items() if value is not None or key in ("step", "head")}
        return json.dumps(data, ensure_ascii=False)


def append_run(root: Root, record: RunRecord) -> None:
    with root.lock("runs"):
        append_line(root.runs_file, record.to_json())


def read_runs(root: Root, thread: str | None = None) -> list[dict]:
    """Attempts, oldest first; a torn last line (a crash mid-append) is skipped."""
    text = read_text(root.runs_file) or ""
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and (thread is None or record.get("thread") == thread):
            records.append(record)
    return records
