"""A full disk and a read-only root: every writing command fails with one clear line (never a
traceback) and moves no head; on a read-only root the reading commands keep working.

The root lives on a small tmpfs the test mounts, so it needs root; it is skipped otherwise.
"""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest
from conftest import EXAMPLES

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")

AGENT = f"uwf-script --script {EXAMPLES / 'solve-issue.script.yaml'}"


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(mount) -> None:
    """Leave no free block: one big file, then small ones until the disk refuses."""
    with open(mount / "filler", "wb", buffering=0) as handle:  # unbuffered: nothing left to flush at the close
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError:
            pass
    for index in range(10_000):
        try:
            (mount / f"f{index}").write_bytes(b"x" * 512)
        except OSError:
            break


def _clean(result, *, allowed=(0, 1)) -> None:
    assert "Traceback" not in result.err, result.err
    assert result.code in allowed, result
    if result.code == 1:
        lines = [line for line in result.err.splitlines() if line.startswith("uwf: error:")]
        assert lines, result.err


def _seeded(uwf_at, root):
    assert uwf_at("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf_at("thread", "start", "solve-issue", "-p", "disk test").json()["thread"]
    assert uwf_at("thread", "step", thread, "--agent", AGENT).code == 0
    return thread, uwf_at("thread", "show", thread).json()["head"]


@pytest.fixture
def uwf_at(uwf, small_disk):
    root = small_disk / "root"

    def run(*args, **kwargs):
        env = dict(kwargs.pop("env", {}) or {}, UWF_STORAGE_ROOT=str(root))
        return uwf(*args, env=env, **kwargs)

    run.root = root
    return run


WRITERS = [
    ("thread", "step", "{thread}", "--agent", AGENT),
    ("thread", "run", "{thread}", "--agent", AGENT),
    ("thread", "fork", "{head}"),
    ("thread", "start", "solve-issue", "-p", "another"),
    ("thread", "kill", "{thread}"),
    ("workflow", "put", str(EXAMPLES / "triage-bug.yaml")),
    ("cas", "put", "content", '"{unique}"'),
    ("cas", "reindex"),
    ("cas", "gc", "--grace", "0"),
    ("setup", "--agent", "x=echo"),
]


def _args(template, thread, head):
    return [part.format(thread=thread, head=head, unique=uuid.uuid4().hex) for part in template]


def test_a_full_disk_gives_one_clear_line_and_moves_no_head(uwf_at, small_disk):
    thread, head = _seeded(uwf_at, uwf_at.root)
    _fill(small_disk)
    failures = 0
    for template in WRITERS:
        result = uwf_at(*_args(template, thread, head))
        _clean(result)
        failures += result.code == 1
        if template[:2] != ("thread", "kill") or result.code != 0:
            shown = uwf_at("thread", "show", thread)
            _clean(shown, allowed=(0,))
            if not shown.json()["done"]:
                assert shown.json()["head"] == head
    assert failures >= 5  # a full disk refuses most writes
    assert uwf_at("cas", "fsck").code in (0, 1)


def test_a_read_only_root_reads_and_refuses_writes_cleanly(uwf_at, small_disk):
    thread, head = _seeded(uwf_at, uwf_at.root)
    assert subprocess.run(["mount", "-o", "remount,ro", str(small_disk)]).returncode == 0
    readers = [
        ("thread", "show", thread), ("thread", "list", "--all"), ("thread", "steps", thread), ("thread", "read", thread),
        ("thread", "runs", thread), ("cas", "get", head), ("cas", "walk", head), ("cas", "fsck"), ("workflow", "list"),
        ("workflow", "show", "solve-issue"), ("workflow", "graph", "solve-issue"), ("thread", "step-details", head),
        ("cas", "gc", "--dry-run"),
    ]
    for args in readers:
        result = uwf_at(*args)
        assert result.code == 0, result
    for template in WRITERS:
        result = uwf_at(*_args(template, thread, head))
        _clean(result, allowed=(1,))
    assert uwf_at("thread", "show", thread).json()["head"] == head


def _pad_to_page_end(path, room: int = 24) -> None:
    """Blank lines (which readers skip) until the file's last page has `room` bytes left: the next
    record then starts in that page and runs out of disk part-way, as a log filling a disk does."""
    size = path.stat().st_size if path.exists() else 0
    missing = (4096 - room - size) % 4096
    with open(path, "a") as handle:
        while missing > 0:
            chunk = min(missing, 200)
            handle.write(" " * (chunk - 1) + "\n")
            missing -= chunk


def test_records_cut_short_by_a_full_disk_lose_no_thread_and_no_later_record(uwf_at, small_disk):
    """The probe's case: `thread kill` on a full disk, then again once space is freed. Before,
    the half-record stayed, the next one glued onto it, the thread vanished from every list
    and gc deleted its head."""
    thread, head = _seeded(uwf_at, uwf_at.root)
    other = uwf_at("thread", "start", "solve-issue", "-p", "archived first").json()["thread"]
    assert uwf_at("thread", "kill", other).code == 0
    history, runs = uwf_at.root / "history.jsonl", uwf_at.root / "runs.jsonl"
    _pad_to_page_end(history)
    _pad_to_page_end(runs)
    sizes = (history.stat().st_size, runs.stat().st_size)
    _fill(small_disk)

    killed = uwf_at("thread", "kill", thread)
    _clean(killed, allowed=(1,))
    stepped = uwf_at("thread", "step", thread, "--agent", AGENT)
    _clean(stepped, allowed=(0, 1))
    assert (history.stat().st_size, runs.stat().st_size)[0] == sizes[0]  # nothing of the record left
    assert not runs.read_bytes()[sizes[1]:] or runs.read_bytes().endswith(b"\n")  # whole or absent
    assert uwf_at("thread", "show", thread).json()["done"] is False

    (small_disk / "filler").unlink()
    for index in range(10_000):
        (small_disk / f"f{index}").unlink(missing_ok=True)
    stepped_after = uwf_at("thread", "step", thread, "--agent", AGENT)
    assert stepped_after.code == 0, stepped_after
    assert uwf_at("thread", "kill", thread).code == 0
    listed = uwf_at("thread", "list", "--all")
    assert listed.code == 0 and listed.err == ""
    assert {item["thread"] for item in listed.json()} >= {thread, other}
    assert uwf_at("cas", "gc", "--grace", "0").code == 0
    shown = uwf_at("thread", "show", thread)
    assert shown.code == 0 and shown.json()["done"] is True
    fsck = uwf_at("cas", "fsck")
    assert fsck.code == 0, fsck
    runs_seen = uwf_at("thread", "runs", thread).json()
    assert runs_seen and runs_seen[-1]["status"] == "ok"  # the step after the disk was freed is there
    fresh = uwf_at("thread", "start", "solve-issue", "-p", "after").json()["thread"]
    assert uwf_at("thread", "step", fresh, "--agent", AGENT).code == 0
    assert len(uwf_at("thread", "runs", fresh).json()) == 1


def test_a_read_only_root_reads_with_its_derived_data_cold(uwf_at, small_disk, tmp_path):
    """Derived data (a head's step counts, its spend) is a cache a read fills: on a read-only
    root it is not kept, and the read goes on (it said "unable to open database file")."""
    assert uwf_at("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    workspace = tmp_path / "ws"
    workspace.mkdir()
    thread = uwf_at("thread", "start", "solve-issue", "-p", "cold", "-w", str(workspace), "--no-snapshot").json()["thread"]
    assert uwf_at("thread", "step", thread, "--agent", AGENT).code == 0
    assert subprocess.run(["mount", "-o", "remount,ro", str(small_disk)]).returncode == 0
    for args in (("thread", "show", thread), ("thread", "read", thread), ("thread", "cost", thread), ("diff", thread, thread)):
        result = uwf_at(*args)
        assert result.code == 0, result


def test_a_bundle_import_on_a_full_disk_is_one_line(uwf_at, small_disk, tmp_path):
    """The nodes wait in the root's scratch space: a full disk fails the write that meets it."""
    thread, _ = _seeded(uwf_at, uwf_at.root)
    bundle = tmp_path / "t.bundle"
    assert uwf_at("bundle", "export", thread, "-o", str(bundle)).code == 0
    other = tmp_path / "other.bundle"
    with_files = uwf_at("thread", "start", "solve-issue", "-p", "x" * 100_000).json()["thread"]  # a bigger node
    assert uwf_at("bundle", "export", with_files, "-o", str(other)).code == 0
    _fill(small_disk)
    for path in (bundle, other):
        _clean(uwf_at("bundle", "import", str(path)))
