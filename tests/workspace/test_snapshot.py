"""Snapshots of a workspace as CAS trees (uwf_core/workspace): what is kept, what is left out and
said, the stat cache, and restoring files without ever writing outside the directory."""

from __future__ import annotations

import json
import os

import pytest

from uwf_core.errors import CorruptError
from uwf_core.store.builtin_schemas import TREE_HASH
from uwf_core.workspace import walker as walker_module
from uwf_core.workspace.changes import tree_changes, unified
from uwf_core.workspace.materialize import bring, checkout
from uwf_core.workspace.snapshot import Limits, SnapshotError, take_snapshot
from uwf_core.workspace.stat_cache import StatCache
from uwf_core.workspace.tree import flatten, tree_payload

OLD = 1_600_000_000  # an mtime well in the past: out of the stat cache's racy window


def write(path, data: bytes = b"x\n", *, mode: int | None = None, old: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mode is not None:
        path.chmod(mode)
    if old:
        os.utime(path, (OLD, OLD))


def paths(store, tree) -> dict[bytes, str]:
    return {path: entry.kind for path, entry in flatten(store, tree).items()}


def test_kinds_names_and_links_are_kept_and_checked_out_exactly(store, tmp_path):
    ws = tmp_path / "ws"
    write(ws / "a.txt", b"text\n")
    write(ws / "bin.dat", b"\xff\x00\xfe")
    write(ws / "run.sh", b"#!/bin/sh\n", mode=0o755)
    write(ws / os.fsdecode(b"caf\xe9.txt"), b"latin-1 name\n")
    (ws / "empty").mkdir()
    (ws / "out").symlink_to("/etc")  # pointing out: kept as a link, never followed
    (ws / "rel").symlink_to("a.txt")
    taken = take_snapshot(store, str(ws))
    kinds = paths(store, taken.tree)
    assert kinds == {
        b"a.txt": "file",
        b"bin.dat": "file",
        b"run.sh": "exec",
        b"caf\xe9.txt": "file",
        b"empty": "dir",
        b"out": "link",
        b"rel": "link",
    }
    out = tmp_path / "out"
    checkout(store, taken.tree, str(out))
    assert (out / "bin.dat").read_bytes() == b"\xff\x00\xfe"
    assert os.access(out / "run.sh", os.X_OK) and not os.access(out / "a.txt", os.X_OK)
    assert os.readlink(out / "out") == "/etc" and os.readlink(out / "rel") == "a.txt"
    assert (out / os.fsdecode(b"caf\xe9.txt")).read_bytes() == b"latin-1 name\n"
    assert (out / "empty").is_dir()
    assert take_snapshot(store, str(out)).tree == taken.tree  # the same files, the same tree
    from uwf_core.store.schemas import validate

    trees = [taken.tree, *(entry.ref for entry in flatten(store, taken.tree).values() if entry.kind == "dir")]
    for tree in trees:  # stored without put's schema check (put_built): each holds to it all the same
        validate(store.schema(TREE_HASH), store.get(tree).payload, what="tree", schema_hash=TREE_HASH)


def test_gitignore_uwfignore_negation_nesting_and_dot_git(store, tmp_path):
    ws = tmp_path / "ws"
    write(ws / ".gitignore", b"*.log\nbuild/\n!keep.log\n/top.txt\n")
    write(ws / ".uwfignore", b"secret*\n")
    for name in ("a.log", "keep.log", "build/x.o", "top.txt", "sub/top.txt", "secret.key", "sub/b.log", "sub/c.tmp", ".git/HEAD", "ok.txt"):
        write(ws / name)
    write(ws / "sub" / ".gitignore", b"*.tmp\n")
    kept = set(paths(store, take_snapshot(store, str(ws)).tree))
    assert kept == {b".gitignore", b".uwfignore", b"keep.log", b"sub/top.txt", b"sub/.gitignore", b"ok.txt"}


def test_a_file_over_the_cap_is_left_out_and_said_a_snapshot_over_its_cap_fails_naming_the_largest(store, tmp_path):
    ws = tmp_path / "ws"
    write(ws / "small.txt", b"s" * 10)
    write(ws / "huge.bin", b"h" * 5000)
    taken = take_snapshot(store, str(ws), limits=Limits(max_file_bytes=1000))
    assert set(paths(store, taken.tree)) == {b"small.txt"}
    assert any("huge.bin" in note and "maxFileBytes" in note for note in taken.notes)
    write(ws / "mid.txt", b"m" * 800)
    with pytest.raises(SnapshotError) as caught:
        take_snapshot(store, str(ws), limits=Limits(max_file_bytes=1000, max_total_bytes=500))
    assert "maxSnapshotBytes" in caught.value.message and caught.value.message.index("mid.txt") < caught.value.message.index("small.txt")


def test_a_file_that_vanishes_mid_snapshot_is_noted_not_a_traceback(store, tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    write(ws / "stays.txt")
    write(ws / "goes.txt")
    original = walker_module.Walker.read_file

    def vanishing(self, name, rel, fd):
        if rel == "goes.txt":
            os.unlink(name, dir_fd=fd)  # listed and stat'ed, gone before it is read
        return original(self, name, rel, fd)

    monkeypatch.setattr(walker_module.Walker, "read_file", vanishing)
    taken = take_snapshot(store, str(ws))
    assert set(paths(store, taken.tree)) == {b"stays.txt"}
    assert taken.notes == ["goes.txt vanished during the snapshot; left out"]


def test_special_files_are_left_out_and_said(store, tmp_path):
    ws = tmp_path / "ws"
    write(ws / "a.txt")
    os.mkfifo(ws / "pipe")
    taken = take_snapshot(store, str(ws))
    assert set(paths(store, taken.tree)) == {b"a.txt"}
    assert taken.notes == ["pipe is not a file, directory or link; left out"]


def test_the_stat_cache_reads_only_changed_files(store, tmp_path, monkeypatch):
    monkeypatch.setattr(walker_module, "RACY_NS", 0)  # files made just now count as settled
    ws = tmp_path / "ws"
    for number in range(50):
        write(ws / f"d{number % 5}" / f"f{number}.txt", f"file {number}\n".encode())
    cache = str(tmp_path / "cache")
    first = take_snapshot(store, str(ws), cache_path=cache)
    assert first.read == 50
    again = take_snapshot(store, str(ws), cache_path=cache, trusted=first.tree)
    assert (again.tree, again.read) == (first.tree, 0)
    write(ws / "d1" / "f1.txt", b"FILE 1\n")  # the same size and mtime (utime put it back), another ctime: read again
    changed = take_snapshot(store, str(ws), cache_path=cache, trusted=again.tree)
    assert changed.read == 1
    assert [(c.path, c.status) for c in tree_changes(store, first.tree, changed.tree)] == [(b"d1/f1.txt", "modified")]
    (tmp_path / "cache").write_text("{not json")  # a damaged index costs a full read, nothing else
    assert take_snapshot(store, str(ws), cache_path=cache).tree == changed.tree


def test_an_unchanged_directory_is_its_recorded_tree_without_a_comparison_of_its_entries(store, tmp_path, monkeypatch):
    monkeypatch.setattr(walker_module, "RACY_NS", 0)
    compared = []
    real = walker_module.Walker._compared
    monkeypatch.setattr(walker_module.Walker, "_compared", lambda self, path, rel, *rest: compared.append(rel) or real(self, path, rel, *rest))
    ws = tmp_path / "ws"
    for number in range(40):
        write(ws / f"d{number % 4}" / "deep" / f"f{number}.txt", f"file {number}\n".encode())
    cache = str(tmp_path / "cache")
    first = take_snapshot(store, str(ws), cache_path=cache)
    compared.clear()
    again = take_snapshot(store, str(ws), cache_path=cache, trusted=first.tree)
    assert (again.tree, again.read, again.files, compared) == (first.tree, 0, 40, [])
    write(ws / "d2" / "deep" / "f2.txt", b"changed\n")
    changed = take_snapshot(store, str(ws), cache_path=cache, trusted=again.tree)
    assert (changed.read, sorted(compared)) == (1, ["", "d2/", "d2/deep/"])  # the file's directory and those above it
    assert [c.path for c in tree_changes(store, first.tree, changed.tree)] == [b"d2/deep/f2.txt"]
    lines = open(cache, "rb").read().split(b"\n")
    damaged = [line if b'"d1/deep/"' not in line.split(b"\t")[0] else line.split(b"\t")[0] + b"\t{not json" for line in lines]
    open(cache, "wb").write(b"\n".join(damaged))  # one damaged line: that directory compared afresh
    compared.clear()
    write(ws / "d1" / "deep" / "f1.txt", b"also\n")
    later = take_snapshot(store, str(ws), cache_path=cache, trusted=changed.tree)
    assert later.read == 10 and later.tree == take_snapshot(store, str(ws)).tree


def test_a_racy_file_that_then_vanishes_leaves_the_tree(store, tmp_path):
    """A directory recorded while a file in it was racy is never taken for its recorded tree."""
    ws = tmp_path / "ws"
    write(ws / "old.txt")
    write(ws / "fresh.txt", b"one\n", old=False)
    cache = str(tmp_path / "cache")
    first = take_snapshot(store, str(ws), cache_path=cache)
    (ws / "fresh.txt").unlink()
    second = take_snapshot(store, str(ws), cache_path=cache, trusted=first.tree)
    assert set(paths(store, second.tree)) == {b"old.txt"}


def test_a_file_changed_within_the_racy_window_is_read_again(store, tmp_path):
    ws = tmp_path / "ws"
    write(ws / "fresh.txt", b"one\n", old=False)
    cache = str(tmp_path / "cache")
    first = take_snapshot(store, str(ws), cache_path=cache)
    assert take_snapshot(store, str(ws), cache_path=cache, trusted=first.tree).read == 1


def test_bring_moves_a_directory_between_trees_touching_only_changes(store, tmp_path):
    ws = tmp_path / "ws"
    write(ws / "same.txt", b"same\n")
    write(ws / "edit.txt", b"before\n")
    write(ws / "gone" / "x.txt", b"x\n")
    before = take_snapshot(store, str(ws)).tree
    target = tmp_path / "target"
    write(target / "same.txt", b"same\n")
    write(target / "edit.txt", b"after\n")
    write(target / "new" / "deep" / "y.txt", b"y\n", mode=0o755)
    after = take_snapshot(store, str(target)).tree
    assert "-before" in "\n".join(unified(store, next(c for c in tree_changes(store, before, after) if c.path == b"edit.txt")))
    bring(store, str(ws), before, after)
    assert take_snapshot(store, str(ws)).tree == after
    assert not (ws / "gone").exists()


def test_restoring_never_follows_a_link_planted_in_the_directory(store, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    source = tmp_path / "source"
    write(source / "d" / "f.txt", b"data\n")
    tree = take_snapshot(store, str(source)).tree
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "d").symlink_to(outside)  # a link where the tree has a directory
    bring(store, str(ws), None, tree)
    assert list(outside.iterdir()) == []
    assert (ws / "d").is_dir() and not (ws / "d").is_symlink() and (ws / "d" / "f.txt").read_bytes() == b"data\n"


@pytest.mark.parametrize("name", ["..", ".", "a/b", "", ".git", ".GIT"])
def test_a_tree_naming_a_path_that_leaves_its_directory_is_refused(store, tmp_path, name):
    from uwf_core.workspace.tree import ensure_schemas

    ensure_schemas(store)
    blob = store.put(store.ensure_builtins()["content"], "evil\n")
    hostile = store.put(TREE_HASH, {"entries": [{"name": name, "kind": "file", "ref": blob}]})
    with pytest.raises(CorruptError):
        checkout(store, hostile, str(tmp_path / "out"))
    assert not (tmp_path / "evil").exists()


def test_tree_payloads_sort_by_name_bytes():
    from uwf_core.workspace.tree import Entry

    payload = tree_payload([Entry(b"b", "file", "X" * 13, 1), Entry(b"B", "file", "X" * 13, 1), Entry(b"\xff", "file", "X" * 13, 1)])
    assert [item.get("name") or item.get("nameBase64") for item in payload["entries"]] == ["B", "b", "/w=="]


def test_fsck_names_a_tree_that_cannot_be_restored(uwf, root_dir, store, tmp_path):
    from uwf_core.workspace.tree import ensure_schemas

    ensure_schemas(store)
    blob = store.put(store.ensure_builtins()["content"], "evil\n")
    hostile = store.put(TREE_HASH, {"entries": [{"name": "..", "kind": "file", "ref": blob}]})
    wrong = store.put(TREE_HASH, {"entries": [{"name": "d", "kind": "dir", "ref": blob}]})
    result = uwf("cas", "fsck")
    assert result.code == 1 and "Traceback" not in result.err
    targets = {problem["target"] for problem in json.loads(result.out)["problems"]}
    assert {hostile, wrong} <= targets


def test_the_cache_follows_ignore_rules_links_and_kinds_as_they_change(store, tmp_path, monkeypatch):
    monkeypatch.setattr(walker_module, "RACY_NS", 0)
    ws = tmp_path / "ws"
    write(ws / "sub" / "a.txt", b"a\n")
    write(ws / "sub" / "b.log", b"b\n")
    (ws / "link").symlink_to("sub")
    cache = str(tmp_path / "cache")
    first = take_snapshot(store, str(ws), cache_path=cache)
    write(ws / ".gitignore", b"*.log\n")  # a parent's rules change what a cached directory holds
    write(ws / "sub" / "c.log", b"c\n")
    second = take_snapshot(store, str(ws), cache_path=cache, trusted=first.tree)
    assert set(paths(store, second.tree)) == {b".gitignore", b"sub/a.txt", b"sub/b.log", b"link"}  # b.log was tracked
    (ws / "link").unlink()
    (ws / "link").symlink_to("elsewhere")
    (ws / "sub" / "a.txt").unlink()
    (ws / "sub" / "a.txt").mkdir()  # a file became a directory
    third = take_snapshot(store, str(ws), cache_path=cache, trusted=second.tree)
    entries = flatten(store, third.tree)
    assert entries[b"link"].target == b"elsewhere" and entries[b"sub/a.txt"].kind == "dir"
    assert third.tree == take_snapshot(store, str(ws), trusted=second.tree).tree  # what a snapshot without a cache says


def test_ignore_rules_never_untrack_a_file_only_new_files_are_filtered(store, tmp_path):
    """git's rule: an agent that writes a .gitignore (aider's `.aider*`, `.env`) does not make the
    history lose files the previous snapshot holds; new files it names are left out, a directory
    it names keeps what it held and takes in nothing new."""
    ws = tmp_path / "ws"
    write(ws / ".aider.conf.yml", b"model: x\n")
    write(ws / "settings.env", b"A=1\n")
    write(ws / "build" / "kept.o", b"o\n")
    cache = str(tmp_path / "cache")
    first = take_snapshot(store, str(ws), cache_path=cache)
    write(ws / ".gitignore", b".aider*\n*.env\nbuild/\n", old=False)
    write(ws / ".aider.chat.history.md", b"new\n", old=False)
    write(ws / "build" / "new.o", b"new\n", old=False)
    write(ws / "build" / "deeper" / "x.o", b"new\n", old=False)
    for cached in (cache, None):  # with the stat cache, and read afresh
        second = take_snapshot(store, str(ws), cache_path=cached, trusted=first.tree)
        assert set(paths(store, second.tree)) == {b".aider.conf.yml", b"settings.env", b"build/kept.o", b".gitignore"}
        assert tree_changes(store, first.tree, second.tree)[0].path == b".gitignore"
        assert len(tree_changes(store, first.tree, second.tree)) == 1  # nothing recorded as deleted
    (ws / "settings.env").unlink()
    third = take_snapshot(store, str(ws), cache_path=cache, trusted=second.tree)
    write(ws / "settings.env", b"A=2\n")
    fourth = take_snapshot(store, str(ws), cache_path=cache, trusted=third.tree)
    assert b"settings.env" not in paths(store, third.tree) and b"settings.env" not in paths(store, fourth.tree)  # deleted: untracked now


def test_new_files_made_just_now_are_in_the_snapshot_after_a_cached_one(store, tmp_path):
    """Racy files are left out of the cache, never out of the tree."""
    ws = tmp_path / "ws"
    write(ws / "old.txt")
    cache = str(tmp_path / "cache")
    first = take_snapshot(store, str(ws), cache_path=cache)
    write(ws / "new.txt", b"new\n", old=False)
    second = take_snapshot(store, str(ws), cache_path=cache, trusted=first.tree)
    assert set(paths(store, second.tree)) == {b"old.txt", b"new.txt"}


def test_a_file_holding_a_key_is_stored_redacted_and_said(store, tmp_path):
    ws = tmp_path / "ws"
    write(ws / "notes.txt", b"token: sk-test-0123456789abcdef\n")
    taken = take_snapshot(store, str(ws), redactions=((b"sk-test-0123456789abcdef", b"[redacted:OPENAI_API_KEY]"),))
    out = tmp_path / "out"
    checkout(store, taken.tree, str(out))
    assert (out / "notes.txt").read_bytes() == b"token: [redacted:OPENAI_API_KEY]\n"
    assert taken.notes == ["notes.txt holds the value of OPENAI_API_KEY: stored redacted"]


def test_a_forced_checkout_keeps_what_snapshots_leave_out(store, tmp_path):
    source = tmp_path / "source"
    write(source / "a.txt", b"snapshot's\n")
    tree = take_snapshot(store, str(source)).tree
    target = tmp_path / "target"
    write(target / ".git" / "HEAD", b"ref: refs/heads/main\n")
    write(target / ".gitignore", b"*.log\nbuild/\n")
    write(target / "run.log", b"kept\n")
    write(target / "build" / "out.o", b"kept\n")
    write(target / "a.txt", b"mine\n")
    write(target / "extra.txt", b"gone\n")
    checkout(store, tree, str(target), force=True)
    assert (target / ".git" / "HEAD").exists() and (target / "run.log").exists() and (target / "build" / "out.o").exists()
    assert (target / "a.txt").read_bytes() == b"snapshot's\n" and not (target / "extra.txt").exists()


def test_git_of_any_kind_is_never_snapshot_or_restored_and_ignore_files_that_are_fifos_do_not_hang(store, tmp_path):
    ws = tmp_path / "ws"
    write(ws / ".git", b"gitdir: /elsewhere/.git/worktrees/ws\n")  # a worktree's .git file
    write(ws / "a.txt")
    os.mkfifo(ws / ".gitignore")
    os.symlink("/etc/passwd", ws / ".uwfignore")
    taken = take_snapshot(store, str(ws))
    assert set(paths(store, taken.tree)) == {b"a.txt", b".uwfignore"}
    clone = tmp_path / "clone"
    write(clone / ".git" / "HEAD", b"ref: refs/heads/main\n")
    checkout(store, taken.tree, str(clone), force=True)
    assert (clone / ".git" / "HEAD").exists()


def test_an_index_from_another_snapshot_than_the_trees_is_not_trusted(store, tmp_path, monkeypatch):
    import shutil

    monkeypatch.setattr(walker_module, "RACY_NS", 0)
    ws = tmp_path / "ws"
    write(ws / "P" / "C" / "f", b"one\n")
    cache = tmp_path / "cache"
    first = take_snapshot(store, str(ws), cache_path=str(cache))
    shutil.copy(cache, tmp_path / "old")
    write(ws / "P" / "C" / "f", b"two\n")
    second = take_snapshot(store, str(ws), cache_path=str(cache), trusted=first.tree)
    shutil.copy(tmp_path / "old", cache)  # the first snapshot's index, against the second's tree
    again = take_snapshot(store, str(ws), cache_path=str(cache), trusted=second.tree)
    assert again.tree == second.tree == take_snapshot(store, str(ws)).tree


def test_a_tree_deeper_than_the_limit_is_noted_not_a_traceback(store, tmp_path, monkeypatch):
    monkeypatch.setattr(walker_module, "MAX_DEPTH", 5)
    ws = tmp_path / "ws"
    write(ws / "a/b/c/d/e/f/g/deep.txt")
    taken = take_snapshot(store, str(ws))
    assert any("deeper than 5 directories" in note for note in taken.notes)


def test_checkout_keeps_a_root_inside_the_directory_and_refuses_a_link_in_one_line(store, tmp_path):
    from uwf_core.errors import UwfError

    source = tmp_path / "source"
    write(source / "a.txt")
    tree = take_snapshot(store, str(source)).tree
    project = tmp_path / "project"
    write(project / ".uwfroot" / "threads.yaml", b"{}\n")
    checkout(store, tree, str(project), force=True, keep=(str((project / ".uwfroot").resolve()),))
    assert (project / ".uwfroot" / "threads.yaml").exists() and (project / "a.txt").exists()
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "empty")
    with pytest.raises(UwfError, match="cannot write into"):
        checkout(store, tree, str(tmp_path / "link"))


def test_a_name_or_link_target_holding_a_key_is_never_written_to_the_stat_index(store, tmp_path, monkeypatch):
    monkeypatch.setattr(walker_module, "RACY_NS", 0)  # settled at once: what would be recorded is
    key = b"sk-test-0123456789abcdef"
    redactions = ((key, b"[redacted:OPENAI_API_KEY]"),)
    ws = tmp_path / "ws"
    write(ws / f"dir-{key.decode()}" / "a.txt")
    write(ws / f"file-{key.decode()}.txt")
    (ws / "link").symlink_to(f"target-{key.decode()}")
    cache = str(tmp_path / "cache")
    first = take_snapshot(store, str(ws), cache_path=cache, redactions=redactions)
    again = take_snapshot(store, str(ws), cache_path=cache, redactions=redactions, trusted=first.tree)
    assert again.tree == first.tree and key not in open(cache, "rb").read()
    assert b"file-[redacted:OPENAI_API_KEY].txt" in paths(store, again.tree)


KEY = b"sk-test-0123456789abcdef"
REDACTIONS = ((KEY, b"[redacted:OPENAI_API_KEY]"),)


@pytest.fixture
def settled(monkeypatch):
    monkeypatch.setattr(walker_module, "RACY_NS", 0)  # files made just now count as settled: recorded at once


def test_a_new_directory_named_with_a_key_is_in_the_tree_though_never_in_the_index(store, tmp_path, settled):
    ws = tmp_path / "ws"
    write(ws / "a.txt")
    cache = str(tmp_path / "cache")
    first = take_snapshot(store, str(ws), cache_path=cache, redactions=REDACTIONS)
    write(ws / f"dir_{KEY.decode()}" / "sub" / "f")
    second = take_snapshot(store, str(ws), cache_path=cache, redactions=REDACTIONS, trusted=first.tree)
    assert second.tree == take_snapshot(store, str(ws), redactions=REDACTIONS).tree
    assert b"dir_[redacted:OPENAI_API_KEY]/sub/f" in paths(store, second.tree) and KEY not in open(cache, "rb").read()


def test_a_tracked_directory_the_rules_now_ignore_takes_in_nothing_new_with_the_index_too(store, tmp_path, settled):
    ws = tmp_path / "ws"
    write(ws / "build" / "kept.o")
    write(ws / "build" / "deep" / "kept.o")
    cache = str(tmp_path / "cache")
    first = take_snapshot(store, str(ws), cache_path=cache)
    write(ws / ".gitignore", b"build/\n")
    write(ws / "build" / "new.o")
    write(ws / "build" / "deep" / "new.o")
    second = take_snapshot(store, str(ws), cache_path=cache, trusted=first.tree)
    assert set(paths(store, second.tree)) == {b".gitignore", b"build/kept.o", b"build/deep/kept.o"}
    assert second.tree == take_snapshot(store, str(ws), trusted=first.tree).tree


def test_an_index_another_thread_left_tracks_nothing_for_this_one(store, tmp_path, settled):
    """The index is the workspace's: a thread that starts on it (nothing tracked yet) leaves out
    what the rules ignore, whatever another thread's snapshots kept."""
    ws = tmp_path / "ws"
    write(ws / "a.txt")
    write(ws / "x.log")
    cache = str(tmp_path / "cache")
    take_snapshot(store, str(ws), cache_path=cache)
    write(ws / ".gitignore", b"*.log\n")
    fresh = take_snapshot(store, str(ws), cache_path=cache)  # a new thread: trusted=None
    assert set(paths(store, fresh.tree)) == {b".gitignore", b"a.txt"} and fresh.tree == take_snapshot(store, str(ws)).tree


def test_a_damaged_count_in_the_index_never_fails_a_snapshot(store, tmp_path, settled):
    ws = tmp_path / "ws"
    write(ws / "d" / "a.txt")
    cache = str(tmp_path / "cache")
    first = take_snapshot(store, str(ws), cache_path=cache)
    lines = open(cache, "rb").read().split(b"\n")
    head, _, raw = lines[2].partition(b"\t")
    record = json.loads(head)
    record[5] = 2**40  # its files' bytes
    lines[2] = json.dumps(record).encode() + b"\t" + raw
    open(cache, "wb").write(b"\n".join(lines))
    for _ in range(2):  # counted afresh, and the index written again as the files say
        assert take_snapshot(store, str(ws), cache_path=cache, trusted=first.tree, limits=Limits(max_total_bytes=1000)).tree == first.tree
    forged = json.loads(open(cache, "rb").read().split(b"\n")[1].partition(b"\t")[0])
    forged[7] = {"../outside": first.tree}  # a subdirectory that is a way out: the record is not read
    assert StatCache.load(cache).get(forged[0]) is not None
    lines = open(cache, "rb").read().split(b"\n")
    lines[1] = json.dumps(forged).encode() + b"\t" + lines[1].partition(b"\t")[2]
    open(cache, "wb").write(b"\n".join(lines))
    assert StatCache.load(cache).get(forged[0]) is None


def test_a_value_that_became_a_key_leaves_the_index_and_notes_name_it_redacted(store, tmp_path, settled):
    ws = tmp_path / "ws"
    write(ws / f"dir_{KEY.decode()}" / "inner" / "a.txt")
    cache = str(tmp_path / "cache")
    first = take_snapshot(store, str(ws), cache_path=cache)
    assert KEY in open(cache, "rb").read()  # not a key yet
    os.mkfifo(ws / f"dir_{KEY.decode()}" / "fifo")
    second = take_snapshot(store, str(ws), cache_path=cache, redactions=REDACTIONS, trusted=first.tree)
    assert KEY not in open(cache, "rb").read()
    assert "dir_[redacted:OPENAI_API_KEY]/fifo is not a file, directory or link; left out" in second.notes
    assert not any(KEY.decode() in note for note in second.notes)


def test_a_directory_swapped_for_a_link_during_the_snapshot_leads_nowhere_outside(store, tmp_path, monkeypatch):
    """Another thread's agent in the same workspace swaps a directory for a link to elsewhere
    between its listing and its walk: the snapshot enters it by its handle, never by the path."""
    outside = tmp_path / "outside"
    write(outside / "SECRET.txt", b"not the workspace's\n")
    ws = tmp_path / "ws"
    write(ws / "d" / "a.txt")
    write(ws / "e" / "b.txt")
    original = walker_module.Walker._listing

    def swapping(self, fd):
        listing = original(self, fd)
        if any(item.name == "d" for item in listing):  # the top: listed, then d swapped before it is entered
            import shutil

            shutil.rmtree(ws / "d")
            (ws / "d").symlink_to(outside)
        return listing

    monkeypatch.setattr(walker_module.Walker, "_listing", swapping)
    taken = take_snapshot(store, str(ws))
    assert set(paths(store, taken.tree)) == {b"e/b.txt"}
    assert taken.notes == ["d/ is no longer a directory (changed during the snapshot); left out"]
