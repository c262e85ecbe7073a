"""The walk that finds git repositories in a workspace (engine/contain/git/walk.py): refreshed by listing
only the directories whose ctime moved, it finds exactly what a walk from scratch finds, whatever
was made, moved or removed; a walk saved before a run that never ended is checked by the next."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time

import pytest

from uwf_core.engine.contain.git import walk as git_walk
from uwf_core.engine.contain.git.walk import load, refresh, save, walk


def _found(taken) -> set[tuple[str, str]]:
    return {(item.path, item.kind) for item in taken.entries()}


def _make_repo_entry(rng: random.Random, directory: str) -> None:
    if rng.random() < 0.5:
        os.makedirs(os.path.join(directory, ".git"), exist_ok=True)
    else:
        for name in ("HEAD", "objects"):
            path = os.path.join(directory, name)
            if not os.path.exists(path):
                (os.mkdir(path) if name == "objects" else open(path, "w").close())


@pytest.mark.parametrize("seed", range(12))
def test_a_refreshed_walk_finds_what_a_fresh_walk_finds(seed, tmp_path, monkeypatch):
    monkeypatch.setattr(git_walk, "RACY_NS", 0)  # trust every ctime: the refresh is what is tested
    rng = random.Random(seed)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    dirs = [str(workspace)]
    for index in range(30):
        parent = rng.choice(dirs)
        path = os.path.join(parent, f"d{index}")
        os.mkdir(path)
        dirs.append(path)
    taken = walk(str(workspace), None)
    for _ in range(40):
        time.sleep(0.01)  # past the coarse clock's tick: every change moves a ctime
        live = [path for path in dirs if os.path.isdir(path) and ".git" not in path]
        action = rng.choice(("mkdir", "repo", "rename", "remove", "tree"))
        target = rng.choice(live)
        if action == "mkdir":
            path = os.path.join(target, f"n{rng.randrange(10**6)}")
            os.mkdir(path)
            dirs.append(path)
        elif action == "repo":
            _make_repo_entry(rng, target)
        elif action == "rename" and target != str(workspace):
            destination = os.path.join(rng.choice([path for path in live if not path.startswith(target)] or [str(workspace)]),
                                       f"m{rng.randrange(10**6)}")
            os.rename(target, destination)
            dirs.append(destination)
        elif action == "remove" and target != str(workspace):
            shutil.rmtree(target)
        elif action == "tree":  # a tree made elsewhere, moved in whole, a repository deep inside
            outside = tmp_path / f"out{rng.randrange(10**6)}"
            (outside / "a" / "b").mkdir(parents=True)
            _make_repo_entry(rng, str(outside / "a" / "b"))
            os.rename(outside, os.path.join(target, outside.name))
        refresh(taken)
        assert _found(taken) == _found(walk(str(workspace), None))


def test_a_saved_walk_is_refreshed_and_a_pending_one_says_so(tmp_path):
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    cache = str(tmp_path / "cache" / "walk.json")
    taken = walk(str(workspace), None)
    save(taken, cache, pending=True)
    assert not load(cache, str(workspace), None).pending  # its run (this process) is still going
    gone = subprocess.Popen(["true"])
    gone.wait()
    os.rename(f"{cache}.pending.{os.getpid()}", f"{cache}.pending.{gone.pid}")  # as a killed uwf leaves it
    again = load(cache, str(workspace), None)
    assert again is not None and again.pending and again.dirs == taken.dirs
    save(again, cache, pending=False)  # its check done: the dead run's marker goes too
    assert not load(cache, str(workspace), None).pending
    assert load(cache, str(workspace), "/elsewhere/.git") is None  # another main repository: walked afresh
    (tmp_path / "cache" / "walk.json").write_text("{not json")
    assert load(cache, str(workspace), None) is None


def test_a_saved_walk_holds_no_key_and_still_finds_a_repository_made_under_a_path_that_holds_one(tmp_path):
    key = b"sk-test-0123456789abcdef"
    workspace = tmp_path / "ws"
    secret_dir = workspace / "a" / f"dir_{key.decode()}" / "inner"
    secret_dir.mkdir(parents=True)
    (workspace / "b" / ".git").mkdir(parents=True)
    (workspace / "a" / f"bare_{key.decode()}" / "objects").mkdir(parents=True)
    (workspace / "a" / f"bare_{key.decode()}" / "HEAD").write_text("ref: x\n")
    cache = str(tmp_path / "cache" / "walk.json")
    taken = walk(str(workspace), None)
    taken.keys = (key,)
    save(taken, cache, pending=False)
    assert key not in open(cache, "rb").read()
    time.sleep(0.2)  # past the walk's racy window
    (secret_dir / ".git").mkdir()  # a repository made where the saved walk names nothing
    again = load(cache, str(workspace), None)
    refresh(again)
    assert _found(again) == _found(walk(str(workspace), None))
    assert (str(secret_dir / ".git"), "dotgit") in _found(again)
