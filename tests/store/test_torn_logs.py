"""Append-only logs and flat state files survive a torn tail and a bad line: a record is written
whole or not at all, the next append never glues onto a torn one, and one bad line hides only
its own entry (kept in the file, reported with its line)."""

from __future__ import annotations

import errno
import json
import os

import pytest
from conftest import EXAMPLES

from uwf_core.errors import UwfError
from uwf_core.store import files as store_files
from uwf_core.store.files import append_line
from uwf_core.store.fs.root import load_flat_state, load_jsonl

AGENT = f"uwf-script --script {EXAMPLES / 'solve-issue.script.yaml'}"


def _parse(data):
    return data if "n" in data else None


def test_an_append_after_a_torn_tail_cuts_the_tail_off_first(tmp_path):
    """A tail torn by a crash was never acknowledged: the next append moves it to `.torn` and
    cuts it off, so no half record is left in the middle of the log (where it would be a
    damaged line for good, and gc would refuse to run)."""
    log = tmp_path / "log.jsonl"
    log.write_text('{"n": 1}\n{"n": 2, "cut sh')
    append_line(str(log), json.dumps({"n": 3}))
    records, damaged = load_jsonl(str(log), _parse)
    assert [r["n"] for r in records] == [1, 3] and damaged == []
    assert log.read_text() == '{"n": 1}\n{"n": 3}\n'
    assert (tmp_path / "log.jsonl.torn").read_text() == '{"n": 2, "cut sh\n'


def test_a_torn_last_line_is_never_written(tmp_path):
    """Read while a crash left it (or while a writer is midway): skipped, and nothing hides."""
    log = tmp_path / "log.jsonl"
    log.write_text('{"n": 1}\n{"n": 2')
    records, damaged = load_jsonl(str(log), _parse)
    assert [r["n"] for r in records] == [1] and damaged == []


def test_an_append_cut_short_by_a_full_disk_is_cut_back_off(tmp_path, monkeypatch):
    log = tmp_path / "log.jsonl"
    log.write_text('{"n": 1}\n')
    real_write = os.write
    calls = []

    def short_then_full(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[:5]))  # a short write, as a disk filling up gives
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_files.os, "write", short_then_full)
    with pytest.raises(UwfError, match="No space left on device"):
        append_line(str(log), json.dumps({"n": 2}))
    monkeypatch.undo()
    assert log.read_text() == '{"n": 1}\n'  # nothing of the record is left
    append_line(str(log), json.dumps({"n": 3}))
    assert [r["n"] for r in load_jsonl(str(log), _parse)[0]] == [1, 3]


def test_a_failed_fsync_takes_the_record_back(tmp_path, monkeypatch):
    """A record that is not durable is not there: the archive must never be half-believed."""
    log = tmp_path / "log.jsonl"
    log.write_text('{"n": 1}\n')
    calls = []

    def failing_fsync(fd):
        calls.append(fd)
        if len(calls) == 1:
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(store_files.os, "fsync", failing_fsync)
    with pytest.raises(UwfError, match="Input/output error"):
        append_line(str(log), json.dumps({"n": 2}))
    assert log.read_text() == '{"n": 1}\n'


def test_one_bad_line_of_a_flat_state_file_hides_only_itself(tmp_path):
    path = tmp_path / "threads.yaml"
    path.write_text('# header\n"A": "1"\nB: [oops\n"C": "x"\n"A": "2"\n"D": "4"\n')
    entries, damaged = load_flat_state(str(path), lambda key, value: None if value.isdigit() else f"{value!r} is no number")
    assert entries == {"A": "1", "D": "4"}
    assert [(d.line, d.text) for d in damaged] == [(3, "B: [oops"), (4, '"C": "x"'), (5, '"A": "2"')]
    assert "listed twice" in damaged[2].problem


def _thread_ids(uwf, *args):
    return [item["thread"] for item in uwf("thread", "list", *args).json()]


def test_a_bad_threads_yaml_entry_hides_that_thread_only(uwf, root_dir):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    threads = [uwf("thread", "start", "solve-issue", "-p", f"t{i}").json()["thread"] for i in range(3)]
    head = uwf("thread", "show", threads[1]).json()["head"]
    state = root_dir / "threads.yaml"
    lines = state.read_text().splitlines()
    bad = next(index for index, line in enumerate(lines) if threads[1] in line)
    lines[bad] = f'"{threads[1]}": "not a hash"'
    state.write_text("\n".join(lines) + "\n")

    listed = uwf("thread", "list")
    assert listed.code == 0
    assert sorted(item["thread"] for item in listed.json()) == sorted([threads[0], threads[2]])
    assert f"threads.yaml:{bad + 1}:" in listed.err and "is not a node hash" in listed.err
    shown = uwf("thread", "show", threads[1])
    assert shown.code == 1 and "cannot be read" in shown.err and "Traceback" not in shown.err
    checked = uwf("cas", "fsck")
    assert checked.code == 1 and f"threads.yaml:{bad + 1}" in checked.err
    assert any(problem["target"].endswith(f"threads.yaml:{bad + 1}") for problem in checked.json()["problems"])

    # Writing the file again (a new thread, a step) keeps the bad line for the user to fix.
    fourth = uwf("thread", "start", "solve-issue", "-p", "t3").json()["thread"]
    assert uwf("thread", "step", threads[0], "--agent", AGENT).code == 0
    assert f'"{threads[1]}": "not a hash"' in state.read_text()
    assert set(_thread_ids(uwf)) == {threads[0], threads[2], fourth}

    # Fixed by hand, the thread is back, head and all.
    fixed = state.read_text().replace(f'"{threads[1]}": "not a hash"', f'"{threads[1]}": "{head}"')
    state.write_text(fixed)
    assert threads[1] in _thread_ids(uwf)
    assert uwf("thread", "list").err == ""


def test_a_torn_archive_line_hides_only_its_thread_and_gc_keeps_its_nodes(uwf, root_dir):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    threads = [uwf("thread", "start", "solve-issue", "-p", f"t{i}").json()["thread"] for i in range(3)]
    heads = {}
    for thread in threads:
        heads[thread] = uwf("thread", "show", thread).json()["head"]
        assert uwf("thread", "kill", thread).code == 0
    history = root_dir / "history.jsonl"
    lines = history.read_text().splitlines()
    lines_tail = {1: lines[1][-12:]}
    lines[1] = lines[1][:-12]  # the middle record torn (its head still in it)
    history.write_text("\n".join(lines) + "\n")

    listed = uwf("thread", "list", "--all")
    assert listed.code == 0
    assert set(_thread_ids(uwf, "--all")) == {threads[0], threads[2]}
    assert "history.jsonl:2:" in listed.err
    # gc deletes nothing while the line may hide a head; fixed, the thread is back whole.
    refused = uwf("cas", "gc", "--grace", "0")
    assert refused.code == 1 and "history.jsonl:2" in refused.err and "Traceback" not in refused.err
    assert uwf("cas", "get", heads[threads[1]]).code == 0
    assert uwf("root", "copy", str(root_dir), str(root_dir.parent / "copy")).code == 1
    for command in (("thread", "show", threads[0]), ("cas", "fsck"), ("thread", "list", "--all")):
        result = uwf(*command)
        assert "Traceback" not in result.err
        assert result.code in (0, 1) and (result.code == 0 or command[:2] == ("cas", "fsck"))
    history.write_text("\n".join([lines[0], lines[1] + lines_tail[1], lines[2]]) + "\n")
    assert set(_thread_ids(uwf, "--all")) == set(threads)
    assert uwf("cas", "gc", "--grace", "0").code == 0
    assert uwf("thread", "show", threads[1]).json()["head"] == heads[threads[1]]


def test_gc_refuses_while_a_hand_edit_hides_a_head(uwf, root_dir):
    """A head one character short names no node: gc, seeing nothing to keep, would delete the chain."""
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "cut").json()["thread"]
    assert uwf("thread", "step", thread, "--agent", AGENT).code == 0
    head = uwf("thread", "show", thread).json()["head"]
    state = root_dir / "threads.yaml"
    state.write_text(state.read_text().replace(head, head[:-1]))
    refused = uwf("cas", "gc", "--grace", "0")
    assert refused.code == 1 and "threads.yaml:2" in refused.err
    assert uwf("cas", "gc", "--dry-run", "--grace", "0").code == 1  # it would list the chain as garbage
    state.write_text(state.read_text().replace(head[:-1], head))
    assert uwf("cas", "gc", "--grace", "0").code == 0
    assert uwf("thread", "show", thread).json()["head"] == head


def test_a_thread_listed_twice_keeps_its_first_head_on_every_path(uwf, root_dir):
    """YAML lets the last of two keys win; uwf takes the first, also after a rewrite kept the
    second line and an unrelated bad line was fixed (else a stale head would come back)."""
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "dup").json()["thread"]
    other = uwf("thread", "start", "solve-issue", "-p", "other").json()["thread"]
    first = uwf("thread", "show", thread).json()["head"]
    assert uwf("thread", "step", other, "--agent", AGENT).code == 0
    stale = uwf("thread", "show", other).json()["head"]
    state = root_dir / "threads.yaml"
    state.write_text(state.read_text() + f'"{thread}": "{stale}"\n')
    listed = uwf("thread", "list")
    assert "listed twice" in listed.err
    assert uwf("thread", "show", thread).json()["head"] == first
    state.write_text(state.read_text() + "garbage line\n")
    assert uwf("thread", "step", thread, "--agent", AGENT).code == 0
    moved = uwf("thread", "show", thread).json()["head"]
    state.write_text(state.read_text().replace("garbage line\n", ""))  # the user fixes the other line
    assert uwf("thread", "show", thread).json()["head"] == moved


def test_an_archive_record_torn_before_its_thread_left_the_index_hides_nothing(uwf, root_dir):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "active").json()["thread"]
    history = root_dir / "history.jsonl"
    history.write_text(json.dumps({"thread": thread, "workflow": None, "head": "0"})[:45] + "\n")
    checked = uwf("cas", "fsck")
    assert checked.code == 0 and "nothing is hidden" in checked.out
    assert uwf("cas", "gc", "--grace", "0").code == 0


def test_odd_lines_in_the_logs_are_damaged_lines_not_tracebacks(uwf, root_dir):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "odd").json()["thread"]
    assert uwf("thread", "kill", thread).code == 0
    history = root_dir / "history.jsonl"
    history.write_text("[" * 100_000 + "\n" + history.read_text())
    listed = uwf("thread", "list", "--all")
    assert listed.code == 0 and "Traceback" not in listed.err and "history.jsonl:1" in listed.err
    assert thread in [item["thread"] for item in listed.json()]


def test_a_runs_record_holding_a_line_separator_stays_one_record(root):
    from uwf_core.store.records import RunRecord

    record = RunRecord("01K5N00001ABCDEFGHJKMNPQRS", None, "r", "a", "failed", None, None, 1, 2, 1, error="x\u2028y\u0085z")
    root.backend.runs.append(record)
    assert [r.error for r in root.backend.runs.read()] == ["x\u2028y\u0085z"]
    assert root.backend.runs.damaged() == []


def test_a_torn_runs_line_loses_nothing_after_it(uwf, root_dir):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "runs").json()["thread"]
    assert uwf("thread", "step", thread, "--agent", AGENT).code == 0
    runs = root_dir / "runs.jsonl"
    text = runs.read_text()
    runs.write_text(text[: len(text) - 40])  # the last record torn, no newline
    assert uwf("thread", "step", thread, "--agent", AGENT).code == 0
    assert uwf("thread", "step", thread, "--agent", AGENT).code == 0
    runs_listed = uwf("thread", "runs", thread)
    records = runs_listed.json()
    assert len(records) == 2  # the torn one is gone; the two after it are whole
    assert runs_listed.err == "" and (root_dir / "runs.jsonl.torn").read_text().strip()  # cut off, kept aside
    assert all(record["status"] == "ok" for record in records)


def test_repair_sets_unreadable_state_lines_aside_and_gc_works_again(uwf, root_dir):
    """No command mended a damaged line: gc refused for good and the user edited files by hand.
    `cas fsck --repair` moves each into `<file>.damaged-<UTC>` with its line number."""
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    threads = [uwf("thread", "start", "solve-issue", "-p", f"r{i}").json()["thread"] for i in range(3)]
    assert uwf("thread", "step", threads[0], "--agent", AGENT).code == 0
    assert uwf("thread", "kill", threads[1]).code == 0
    assert uwf("thread", "kill", threads[2]).code == 0
    assert uwf("thread", "run", threads[0], "--detach").code == 0
    history = root_dir / "history.jsonl"
    lines = history.read_text().splitlines()
    history.write_text(lines[0][:-9] + "\n" + lines[1] + "\n")  # the first record torn mid-file
    for name in ("threads.yaml", "queue.yaml"):
        (root_dir / name).write_text((root_dir / name).read_text() + "garbage: [\n")
    runs = root_dir / "runs.jsonl"
    runs.write_text("{not json\n" + runs.read_text())
    assert uwf("cas", "gc", "--grace", "0").code == 1
    repaired = uwf("cas", "fsck", "--repair")
    assert repaired.code == 0, repaired.err
    assert "set aside 4 unreadable line(s)" in repaired.err and "Traceback" not in repaired.err
    assert len(repaired.json()["stateSetAside"]) == 4
    aside = sorted(path.name for path in root_dir.iterdir() if ".damaged-" in path.name)
    assert [name.split(".damaged-")[0] for name in aside] == ["history.jsonl", "queue.yaml", "runs.jsonl", "threads.yaml"]
    kept = next(root_dir.glob("history.jsonl.damaged-*")).read_text()
    assert kept.startswith("line 1 (") and lines[0][:-9] in kept
    listed = uwf("thread", "list", "--all")
    assert listed.code == 0 and listed.err == ""
    assert {item["thread"] for item in listed.json()} == {threads[0], threads[2]}  # the torn record's thread is set aside with it
    assert uwf("cas", "gc", "--grace", "0").code == 0
    head = json.loads(lines[0])["head"]
    assert head in kept  # its nodes are kept: a hand (or a fork) can put it back
    forked = uwf("thread", "fork", head)
    assert forked.code == 0 and uwf("thread", "read", forked.json()["thread"]).code == 0
    assert uwf("cas", "fsck").code == 0
    assert uwf("cas", "fsck", "--repair").err.strip().endswith("not damaged: nothing was changed")


def test_a_bad_queue_entry_hides_only_itself(uwf, root_dir):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    threads = [uwf("thread", "start", "solve-issue", "-p", f"q{i}").json()["thread"] for i in range(2)]
    for thread in threads:
        assert uwf("thread", "run", thread, "--detach").code == 0
    queue = root_dir / "queue.yaml"
    queue.write_text(queue.read_text() + "garbage line\n")
    listed = uwf("thread", "list").json()
    assert sum(1 for item in listed if item.get("queued")) == 2
    third = uwf("thread", "start", "solve-issue", "-p", "q2").json()["thread"]
    assert uwf("thread", "run", third, "--detach").code == 0
    assert "garbage line" in queue.read_text()


@pytest.mark.parametrize("state", ["threads.yaml", "queue.yaml"])
def test_a_line_that_is_not_utf8_is_one_damaged_line(uwf, root_dir, state):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "bytes").json()["thread"]
    assert uwf("thread", "run", thread, "--detach").code == 0
    with open(root_dir / state, "ab") as handle:
        handle.write(b"\xff\xfe: \x80\n")
    for command in (("thread", "list"), ("thread", "show", thread), ("cas", "fsck")):
        result = uwf(*command)
        assert "Traceback" not in result.err, result.err
    listed = uwf("thread", "list")
    assert listed.code == 0 and [item["thread"] for item in listed.json()] == [thread]
    assert f"{state}:" in listed.err and "not UTF-8 text" in listed.err
    other = uwf("thread", "start", "solve-issue", "-p", "after").json()["thread"]
    assert uwf("thread", "run", other, "--detach").code == 0
    assert b"\xff\xfe: \x80" in (root_dir / state).read_bytes()  # kept as it was, byte for byte


def test_bytes_that_are_not_utf8_in_a_log_record_print(uwf, root_dir):
    """A log is never rewritten, so its records are read with U+FFFD for such bytes: a surrogate
    kept from them made `thread list --all` fail writing its JSON (PYTHONIOENCODING=utf-8)."""
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "bytes").json()["thread"]
    assert uwf("thread", "kill", thread).code == 0
    history = root_dir / "history.jsonl"
    history.write_bytes(history.read_bytes().replace(b'"killed"', b'"kil\xffled"'))
    listed = uwf("thread", "list", "--all", env={"PYTHONIOENCODING": "utf-8"})
    assert listed.code == 0, listed
    assert [item["reason"] for item in listed.json()] == ["kil\ufffdled"]


def test_a_head_cut_short_by_hand_keeps_its_chain_after_the_line_is_set_aside(uwf, root_dir):
    """threads.yaml is rewritten whole by uwf, never torn; by hand it can be. A line set aside
    with its hash cut to 9 characters still keeps every node that hash begins: gc sweeps none of them."""
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "cut by hand").json()["thread"]
    assert uwf("thread", "step", thread, "--agent", AGENT).code == 0
    head = uwf("thread", "show", thread).json()["head"]
    state = root_dir / "threads.yaml"
    state.write_text(state.read_text().replace(f'"{head}"', f'"{head[:9]}'))
    assert uwf("cas", "fsck", "--repair").code == 0
    assert uwf("cas", "gc", "--grace", "0").code == 0
    assert uwf("cas", "walk", head).code == 0  # the head and all it reaches
