"""The empty `.git` runs share as the mount point of their private one (engine/contain/git/
placeholder.py), against what another run or its agent can do to it in between: moved away and a
repository made in its place (renamed aside when the run ends), or passed over, while held, by a
run stepped from a directory above (not refused, so not moved)."""

from __future__ import annotations

import os
import subprocess

from uwf_core.engine.contain.git import placeholder
from uwf_core.engine.contain.git.audit import audit, survey
from uwf_core.engine.contain.git.private import private_git, release_placeholder


def _placeholder(tmp_path):
    """A workspace without .git, and where its runs' placeholder locks are: (its .git, the locks, a hold)."""
    workspace, locks = tmp_path / "ws", str(tmp_path / "locks")
    workspace.mkdir()
    (tmp_path / "scratch").mkdir()
    gitdir = str(workspace / ".git")
    return gitdir, locks, lambda: private_git(gitdir, str(tmp_path / "scratch"), "read", locks=locks)


def test_a_repository_made_where_the_held_placeholder_was_is_renamed_aside(tmp_path):
    gitdir, locks, hold = _placeholder(tmp_path)
    workspace = os.path.dirname(gitdir)
    held = hold()
    os.rmdir(gitdir)  # another run's agent, or its check, took the mount point away (on the host: an empty directory)
    subprocess.run(["git", "init", "-q", workspace], check=True)  # and the agent's `git init` wrote the host's .git
    assert release_placeholder(held, locks) == [gitdir]
    assert not os.path.exists(gitdir) and os.path.isfile(os.path.join(gitdir + ".refused-by-uwf", "HEAD"))
    assert release_placeholder(held, locks) == []  # let go once


def test_the_held_placeholder_itself_is_let_go_and_removed_by_the_last_run(tmp_path):
    gitdir, locks, hold = _placeholder(tmp_path)
    first, second = hold(), hold()
    assert placeholder.in_use(gitdir, locks)
    assert release_placeholder(first, locks) == [] and os.path.isdir(gitdir)  # the second still has it mounted
    assert release_placeholder(second, locks) == [] and not os.path.exists(gitdir)
    assert not placeholder.in_use(gitdir, locks)


def test_a_run_above_passes_over_a_placeholder_another_run_holds(tmp_path):
    """A run stepped from `parent` found no `ws/.git` when it looked; the run stepped from `ws`
    made its placeholder since: the parent's check leaves it where it is (renaming it would move
    the other run's mount point), and refuses it once it is no placeholder (filled)."""
    parent, locks = tmp_path / "parent", str(tmp_path / "locks")
    (parent / "ws").mkdir(parents=True)
    (tmp_path / "scratch").mkdir()
    taken = survey(str(parent), None)
    held = private_git(str(parent / "ws" / ".git"), str(tmp_path / "scratch"), "read", locks=locks)
    refused, _ = audit(taken, in_use=lambda path: placeholder.in_use(path, locks))
    assert refused == [] and os.path.isdir(parent / "ws" / ".git")
    (parent / "ws" / ".git" / "config").write_text("[core]\n\tfsmonitor = touch planted\n")  # filled: a repository, held or not
    refused, _ = audit(taken, in_use=lambda path: placeholder.in_use(path, locks))
    assert refused and "ws/.git, renamed ws/.git.refused-by-uwf" in refused[0]
    release_placeholder(held, locks)


RUN = """
import os, subprocess, sys, time
from uwf_core.engine.contain.git.audit import audit, survey
workspace, cache, role = sys.argv[1:4]
taken = survey(workspace, None, cache)
if role == "planter":  # a run whose agent plants a repository, and whose uwf is then killed
    subprocess.run(["git", "init", "-q", os.path.join(workspace, "evil")], check=True)
    open(os.path.join(workspace, "..", "planted"), "w").close()
    time.sleep(60)
else:  # a run that starts after the plant and ends normally, while the planter is still alive
    audit(taken)
"""


def test_a_killed_runs_repository_is_not_adopted_by_a_run_beside_it(tmp_path):
    """Run A plants `evil/.git` and its uwf is killed before its check; run B, started meanwhile
    and ended normally, found `evil/.git` already there. B must not save its walk over A's: the
    next run checks what A made against the walk A found, and renames `evil/.git` aside."""
    import signal
    import sys
    import time

    workspace, cache = tmp_path / "ws", str(tmp_path / "cache" / "walk.json")
    workspace.mkdir()
    (tmp_path / "cache").mkdir()
    planter = subprocess.Popen([sys.executable, "-c", RUN, str(workspace), cache, "planter"])
    try:
        for _ in range(200):
            if (tmp_path / "planted").exists():
                break
            time.sleep(0.05)
        beside = subprocess.run([sys.executable, "-c", RUN, str(workspace), cache, "beside"], capture_output=True, text=True, timeout=60)
        assert beside.returncode == 0, beside.stderr
    finally:
        planter.send_signal(signal.SIGKILL)
        planter.wait()
    taken = survey(str(workspace), None, cache)
    assert any("evil/.git" in line for line in taken.leftovers), taken.leftovers
    assert not (workspace / "evil" / ".git").exists()
