"""runs.jsonl kept parsed by a process that reads it again and again (the workbench): each read
parses only what was appended since, and says exactly what a fresh read of the file says."""

from __future__ import annotations

import os

from uwf_core.store.fs.root import Root, load_jsonl
from uwf_core.store.fs.runs import FsRunLog
from uwf_core.store.records import RunRecord

T1 = "01K5N00001ABCDEFGHJKMNPQRS"
T2 = "01K5N00002ABCDEFGHJKMNPQRS"


def attempt(thread: str, number: int, status: str = "ok") -> RunRecord:
    return RunRecord(thread, None, "r", "a", status, None, None, number, number + 1, 1)


def fresh(root: Root) -> list[RunRecord]:
    return load_jsonl(root.runs_file, RunRecord.from_dict)[0]


def test_a_kept_log_reads_what_a_fresh_read_does_as_it_grows(tmp_path):
    root = Root(str(tmp_path))
    log = FsRunLog(root)
    assert log.read() == []
    for number in range(5):
        log.append(attempt(T1 if number % 2 else T2, number))
        assert log.read() == fresh(root)
    assert log._parsed is not None and log._parsed.lines == 5
    assert [record.startedAt for record in log.read(T1)] == [1, 3]
    assert [record.startedAt for record in log.read(T2)] == [0, 2, 4]


def test_a_line_being_written_is_not_kept_and_a_cut_one_is_dropped(tmp_path):
    root = Root(str(tmp_path))
    log = FsRunLog(root)
    log.append(attempt(T1, 1))
    log.read()
    whole = attempt(T1, 2).to_json()
    with open(root.runs_file, "a") as handle:
        handle.write(whole[:20])  # a write going on now
    assert [record.startedAt for record in log.read()] == [1]
    with open(root.runs_file, "a") as handle:
        handle.write(whole[20:])  # whole but its newline not yet written: a record, not yet kept
    assert [record.startedAt for record in log.read()] == [1, 2] == [record.startedAt for record in fresh(root)]
    assert log._parsed.lines == 1
    with open(root.runs_file, "r+") as handle:  # that write cut short, then an append cuts it off
        handle.truncate(os.path.getsize(root.runs_file) - 5)
    log.append(attempt(T1, 3))
    assert [record.startedAt for record in log.read()] == [1, 3] == [record.startedAt for record in fresh(root)]


def test_a_log_rewritten_or_cut_is_read_again_whole(tmp_path):
    root = Root(str(tmp_path))
    log = FsRunLog(root)
    for number in range(3):
        log.append(attempt(T1, number))
    log.read()
    with open(root.runs_file, "a") as handle:
        handle.write("not json\n")
    log.append(attempt(T1, 3))
    assert [record.startedAt for record in log.read()] == [0, 1, 2, 3]
    assert log.mend("20261129T000000Z")  # `cas fsck --repair`: the file rewritten without the line
    log.append(attempt(T2, 4))
    assert log.read() == fresh(root) and len(log.read()) == 5
    os.truncate(root.runs_file, 0)  # emptied in place
    log.append(attempt(T2, 5))
    assert [record.startedAt for record in log.read()] == [5]
    os.remove(root.runs_file)
    assert log.read() == []


def test_one_threads_lines_are_parsed_alone_until_a_second_read(tmp_path):
    """A one-shot command that reads one thread's attempts parses only its lines."""
    root = Root(str(tmp_path))
    log = FsRunLog(root)
    log.append(attempt(T1, 1))
    log.append(attempt(T2, 2))
    assert [record.startedAt for record in log.read(T2)] == [2]
    assert log._parsed is None
    assert [record.startedAt for record in log.of_step("none")] == []
    assert log._parsed is not None
    log.append(attempt(T2, 3))
    assert [record.startedAt for record in log.read(T2)] == [2, 3]


def test_a_log_replaced_by_one_as_long_is_read_again(tmp_path):
    """Another file in its place (as `cas fsck --repair` writes one) with the old inode number, or
    bytes rewritten in place: what was parsed is not trusted."""
    root = Root(str(tmp_path))
    log = FsRunLog(root)
    log.append(attempt(T1, 1))
    log.read()
    with open(root.runs_file, "r+") as handle:  # the same length, another attempt
        handle.write(attempt(T2, 7).to_json() + "\n")
    assert [(record.thread, record.startedAt) for record in log.read()] == [(T2, 7)]
