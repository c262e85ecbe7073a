"""`uwf thread export-git`: a thread's files as git history, one commit per step, made by git
itself (`git fast-import`), so `git log -p uwf/<thread>` shows what each role did.

The branch is written anew each time (its commits are a function of the steps: a fork's branch
shares the commits of the steps it shares with the thread it came from). Hand changes between
steps get a commit of their own. Empty directories have no place in git and are left out.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from ..errors import UwfError
from ..workspace.changes import tree_changes
from ..workspace.tree import Entry, flatten, read_blob
from .context import context_of
from .files import files_of
from .nodes import read_step, start_of
from .ops import thread_info

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from ..repo import Repo

MODES = {"file": b"100644", "exec": b"100755", "link": b"120000"}


def export_git(repo: Repo, thread: str, directory: str) -> dict:
    git = shutil.which("git")
    if git is None:
        raise UwfError("export-git needs git on PATH")
    info = thread_info(repo, thread)
    store = repo.nodes
    start_hash, start = start_of(store, info.head)
    commits = []  # (message, time in ms, tree or None, previous tree)
    previous = None
    steps = context_of(repo, info.head).steps
    first_tree = files_of(store, steps[0].start if steps else start_hash)
    if first_tree:
        title = start.prompt.strip().splitlines()[0][:72] if start.prompt.strip() else ""
        commits.append((f"start: {title}", None, first_tree))
        previous = first_tree
    for step_context in steps:
        step = read_step(store, step_context.hash)
        if step.files is None:
            continue
        began = step.files_before or files_of(store, step.prev or step.start)  # a resume's start may hold hand changes
        if began and began != previous:
            commits.append((f"changed between steps (by hand, or left by a failed attempt) before step {step_context.hash}", step.started_at, began))
            previous = began
        message = f"{step.role} ({step.agent})\n\nuwf step {step_context.hash}"  # no thread id: a fork shares the commits of the steps it shares
        commits.append((message, step.completed_at, step.files))
        previous = step.files
    if not commits:
        raise UwfError(f"thread {info.thread} has no snapshots of its files to export (no workspace, or snapshots were off)")
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise UwfError(f"--repo {directory} is a file, not a directory")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise UwfError(f"cannot make --repo {directory}: {exc.strerror or exc}") from None
    if not os.path.exists(os.path.join(directory, ".git")):
        _git(git, directory, "init", "-q")
    branch = f"uwf/{info.thread}"
    stream = _fast_import_stream(store, branch, commits)
    _git(git, directory, "fast-import", "--force", "--quiet", stdin=stream)
    head = _git(git, directory, "rev-parse", f"refs/heads/{branch}").strip()
    return {"thread": info.thread, "repo": os.path.abspath(directory), "branch": branch, "commits": len(commits), "head": head}


def _fast_import_stream(store, branch: str, commits: list) -> bytes:
    out: list[bytes] = [f"reset refs/heads/{branch}\n".encode()]
    marks: dict[bytes, int] = {}
    previous = None
    for message, when, tree in commits:
        if previous is None:
            files = flatten(store, tree)
            changed = [(path, entry) for path, entry in files.items() if entry.kind != "dir"]
            deleted: list[bytes] = []
        else:
            changes = tree_changes(store, previous, tree)
            changed = [(c.path, c.new) for c in changes if c.new is not None and c.new.kind != "dir"]
            deleted = [c.path for c in changes if c.old is not None and (c.new is None or c.new.kind == "dir") and c.old.kind != "dir"]
        for path, entry in changed:
            _blob(store, entry, marks, out)
        seconds = (when or 0) // 1000
        data = message.encode("utf-8")
        out.append(f"commit refs/heads/{branch}\n".encode())
        out.append(f"committer uwf <uwf@localhost> {seconds} +0000\ndata {len(data)}\n".encode() + data + b"\n")
        for path in deleted:
            out.append(b"D " + _quoted(path) + b"\n")
        for path, entry in changed:
            out.append(b"M " + MODES[entry.kind] + b" :" + str(marks[_key(entry)]).encode() + b" " + _quoted(path) + b"\n")
        out.append(b"\n")
        previous = tree
    return b"".join(out)


def _key(entry: Entry) -> bytes:
    return b"link:" + entry.target if entry.kind == "link" else entry.ref.encode()


def _blob(store, entry: Entry, marks: dict, out: list) -> None:
    key = _key(entry)
    if key in marks:
        return
    marks[key] = len(marks) + 1
    data = entry.target if entry.kind == "link" else read_blob(store, entry.ref)
    out.append(f"blob\nmark :{marks[key]}\ndata {len(data)}\n".encode() + data + b"\n")


def _quoted(path: bytes) -> bytes:
    """A path as fast-import reads it: C-quoted when it holds a quote, a backslash or a newline."""
    if not any(char in path for char in (b'"', b"\\", b"\n")) and not path.startswith(b'"'):
        return path
    return b'"' + path.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n") + b'"'


def _git(git: str, directory: str, *args: str, stdin: bytes | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run([git, "-C", directory, *args], input=stdin, capture_output=True, env=env)
    if done.returncode != 0:
        raise UwfError(f"git {args[0]} failed in {directory}: {done.stderr.decode('utf-8', 'replace').strip().splitlines()[-1:] or done.returncode}")
    return done.stdout.decode("utf-8", "replace")
