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
    with open(mount / "filler", "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
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
    ]
    for args in readers:
        result = uwf_at(*args)
        assert result.code == 0, result
    for template in WRITERS:
        result = uwf_at(*_args(template, thread, head))
        _clean(result, allowed=(1,))
    assert uwf_at("thread", "show", thread).json()["head"] == head
