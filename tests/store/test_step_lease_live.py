"""A step lease's live lines after the lease has ended: a function the step gave up on may still
print from its thread, and by then the lease's descriptor is closed and its number may be any
file's (a node store's): nothing may be written."""

from __future__ import annotations

import os

from uwf_core.repo import Repo


def test_a_line_said_after_the_lease_ended_is_written_nowhere(root_dir, tmp_path):
    repo = Repo.open(str(root_dir))
    with repo.locks.acquire("01M8TESTTHREAD00000000000A") as lease:
        lease.say("during the step")
        live, number = lease.live_path, lease.live_fd
    other = tmp_path / "someone-elses.db"
    other.write_bytes(b"precious")
    fd = os.open(other, os.O_RDWR | os.O_APPEND)
    os.dup2(fd, number)  # the number the lease's descriptor had, now another file's
    try:
        lease.say("a late line")
    finally:
        os.close(number)
        os.close(fd)
    assert other.read_bytes() == b"precious"
    with open(live, encoding="utf-8") as handle:
        assert handle.read() == "during the step\n"
