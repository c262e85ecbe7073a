"""The workspace's git repository in an agent's sandbox: a private copy of its .git (design §16).

git reads far more than hooks and config — commondir, config.worktree, info/attributes (filters),
modules/*, worktrees/* — and runs what they name on your next `git status` or `git commit`. So an
agent never writes the real .git. In its sandbox .git is a private copy (engine/contain/private_copy.py):
its objects/ borrows the real objects through info/alternates, its hooks/, modules/, worktrees/
and lfs/ are the real ones, read-only, and the rest (config, HEAD, refs, index, info) is copied.
git works there as usual, and after the run uwf lists what the agent wrote in it.

With `git: read` (the default) all of it is thrown away. With `git: commit` the agent's own
commits are taken into the real .git — loose objects checked against their names, branches and
tags moved by compare-and-set only when every object they need is there, HEAD, and the index
when yours is as the run found it — and nothing else: config, hooks, commondir, info, worktrees,
modules and remotes never are. uwf's own git commands run with hooks off and the repository
named, so nothing in the workspace takes part.
"""

from __future__ import annotations

import os
import re

from ....encoding.records import record
from ....store.files import read_regular
from ..private_copy import PrivateCopy
from . import placeholder

KEEP = ("hooks", "modules", "worktrees", "lfs")  # the real ones, read-only
REAL_OBJECTS = "uwf-objects"  # where the copy shows the real objects/, read-only (its alternates name it)
MAX_OBJECT_BYTES = 256 << 20  # a loose object (compressed) taken from the run's copy, at most
# What git keeps as data (objects, refs, history, the index): harmless to write. Anything else
# — config, config.worktree, commondir, gitdir, info/, branches/, remotes/, shallow — is what git
# reads as settings, and a write there is refused.
DATA_DIRS = ("objects/", "refs/", "logs/", "rr-cache/", "sequencer/", "rebase-merge/", "rebase-apply/")
DATA_DIR_NAMES = frozenset(name.rstrip("/") for name in DATA_DIRS)
DATA_FILES = frozenset({
    "index", "HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_RR", "SQUASH_MSG",
    "COMMIT_EDITMSG", "TAG_EDITMSG", "packed-refs", "AUTO_MERGE", "REBASE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD",
    "BISECT_LOG", "BISECT_START", "BISECT_TERMS", "BISECT_NAMES", "BISECT_EXPECTED_REV", "gc.pid", "gc.log", "description",
})
TAKEN_REFS = ("refs/heads/", "refs/tags/")  # what `git: commit` takes of an agent's refs
HEX = re.compile(r"\A(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
REF_CHARS = re.compile(r"\A[A-Za-z0-9._/\-]+\Z")


@record(frozen=True)
class GitResult:
    """What the run wrote in its copy of .git: data (kept with `git: commit`, else thrown away),
    and settings git would run, which are never taken."""

    wrote: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@record
class PrivateGit:
    gitdir: str  # the real .git
    copy: PrivateCopy
    mode: str  # read or commit
    index_stamp: tuple | None = None
    head: bytes | None = None  # the real HEAD as the run found it
    placeholder: bool = False  # no .git was there: the mount point is uwf's, removed after the run
    hold: int | None = None  # the placeholder's shared lock (git/placeholder.py), while the run has it
    held: tuple | None = None  # the placeholder's identity (placeholder.identity): what the run's .git is mounted on


def find_gitdir(workspace: str, locks: str) -> tuple[str | None, bool]:
    """The .git directory git finds from `workspace` (in it or above it), and whether there is
    none at all: then the workspace gets an empty private one, which the agent may `git init`
    (aider does) with nothing of it kept. (None, False) for a linked worktree's or a submodule's
    `.git` file: its git directory is elsewhere, read-only to the agent as all outside its
    workspace is, and the file itself is kept read-only (engine/contain/git/audit.py). An empty
    `.git` in the workspace is a placeholder another run mounts on now: this run shares it."""
    place = os.path.realpath(workspace)
    own = os.path.join(place, ".git")
    placeholder.release(own, locks)  # an empty one a killed uwf left as a run's mount point
    while True:
        candidate = os.path.join(place, ".git")
        if os.path.lexists(candidate):
            if os.path.isdir(candidate) and not os.path.islink(candidate) and os.path.isfile(os.path.join(candidate, "HEAD")):
                return candidate, False
            if candidate == own and placeholder.is_placeholder(candidate):
                return None, True
            return None, False
        if place == "/":
            return None, True
        place = os.path.dirname(place)


def private_git(gitdir: str, scratch: str, mode: str, locks: str | None = None) -> PrivateGit:
    """A private copy of `gitdir`; with `locks`, `gitdir` is the workspace's `.git` that is not
    there: made empty for the run (its mount point, shared with other runs there) and removed
    after the last of them."""
    if locks is not None:
        held = placeholder.hold(gitdir, locks)
        try:
            copy = PrivateCopy.make(gitdir, scratch)
        except BaseException:
            placeholder.release(gitdir, locks, held)
            raise
        return PrivateGit(gitdir, copy, "read", placeholder=True, hold=held, held=placeholder.identity(gitdir))
    copy = PrivateCopy.make(gitdir, scratch, skip=("objects", "logs", "*.lock", REAL_OBJECTS), keep=KEEP, fresh=("logs",))
    copy.view(REAL_OBJECTS, os.path.join(gitdir, "objects"))  # in the sandbox .git is the copy: the real objects are here
    objects = os.path.join(copy.path, "objects")
    os.makedirs(os.path.join(objects, "info"))
    os.makedirs(os.path.join(objects, "pack"))
    with open(os.path.join(objects, "info", "alternates"), "w", encoding="utf-8") as handle:
        handle.write(os.path.join(gitdir, REAL_OBJECTS) + "\n")
    copy.reseed()
    return PrivateGit(gitdir, copy, mode, _stamp(os.path.join(gitdir, "index")), _read(os.path.join(gitdir, "HEAD")))


def finish_git(private: PrivateGit, message: str) -> GitResult:
    """After the run: what it wrote in its .git, and with `git: commit` its commits taken in.
    The copy is removed (a placeholder stays held: the caller checks it, then lets it go)."""
    try:
        changes = private.copy.changes()
        if private.placeholder:
            made = ["the run made a git repository in its workspace's private .git (there was none): thrown away"] if changes else []
            return GitResult(notes=tuple(made))
        data = [change for change in changes if _is_data(change.path)]
        refused = [change.path for change in changes if not _is_data(change.path)]
        notes: list[str] = []
        if private.mode == "commit" and data:
            notes = _take(private, {change.path for change in data if change.kind != "removed"}, message)
        elif any(change.path.startswith("refs/") or change.path == "packed-refs" for change in data):
            notes = ["the run committed or moved branches in its copy of .git: thrown away (its entry's `git: commit` keeps an agent's own commits)"]
        return GitResult(tuple(_summary([change.path for change in data])), tuple(refused), tuple(notes))
    finally:
        private.copy.remove()


def release_placeholder(private: PrivateGit, locks: str) -> list[str]:
    """The run's hold on its placeholder let go (once), and the placeholder removed if it was the
    last. Checked first, while still held: what stands at `.git` now must be the directory the
    run's .git was mounted on. Another run's check can move a mount point aside (it is only an
    empty directory on the host), and then an agent's `git init` writes the host's .git: that
    one is renamed aside and said (what was made and where it went)."""
    if private.hold is None:
        return []
    made = []
    now = placeholder.identity(private.gitdir)
    if now is not None and (now != private.held or not placeholder.is_placeholder(private.gitdir)):
        from .audit import REFUSED

        os.rename(private.gitdir, private.gitdir + REFUSED)
        made.append(private.gitdir)
    held, private.hold = private.hold, None
    placeholder.release(private.gitdir, locks, held)
    return made


def _is_data(path: str) -> bool:
    return path in DATA_FILES or path in DATA_DIR_NAMES or path.startswith(DATA_DIRS) or path.endswith(".lock")


def _summary(paths: list[str]) -> list[str]:
    """Objects and reflogs as a count each (a commit writes several); everything else by name."""
    objects = sum(1 for path in paths if path.startswith("objects/") and path.count("/") == 2)
    logs = sum(1 for path in paths if path.startswith("logs/") and os.path.basename(path) != "refs")
    rest = [path for path in paths if not path.startswith(("objects", "logs"))]
    return [*([f"objects ({objects} written)"] if objects else []), *rest, *([f"logs ({logs} written)"] if logs else [])]


def ref_name_ok(name: str) -> bool:
    """A branch or tag name as git allows it (check-ref-format), in the characters uwf takes."""
    if not name.startswith(TAKEN_REFS) or not REF_CHARS.match(name) or ".." in name or "//" in name or name.endswith(("/", ".")):
        return False
    return all(part and not part.startswith((".", "-")) and not part.endswith(".lock") for part in name.split("/"))


def _take(private: PrivateGit, changed: set[str], message: str) -> list[str]:
    """The run's commits into the real .git: objects, then refs, HEAD, the index."""
    notes = []
    notes += _take_objects(private, [path for path in changed if path.startswith("objects/")])
    refs_changed = any(path.startswith("refs/") or path == "packed-refs" for path in changed)
    if refs_changed:
        notes += _take_refs(private, message)
    if "HEAD" in changed:
        notes += _take_head(private, message)
    if "index" in changed:
        notes += _take_index(private)
    return notes


def _names_itself(data: bytes, name: str) -> bool:
    """Whether a loose object's bytes inflate to a git object whose hash is `name`: inflated a
    megabyte at a time, never past the size its header gives (a zlib bomb stops there)."""
    import hashlib
    import zlib

    inflate = zlib.decompressobj()
    digest = (hashlib.sha1 if len(name) == 40 else hashlib.sha256)()
    try:
        head = inflate.decompress(data, 64)
        match = re.match(rb"\A(?:blob|tree|commit|tag) (\d{1,12})\0", head)
        if match is None:
            return False
        left = len(match[0]) + int(match[1]) - len(head)
        if int(match[1]) > MAX_OBJECT_BYTES * 4:
            return False
        digest.update(head)
        while not inflate.eof:
            chunk = inflate.decompress(inflate.unconsumed_tail or b"", 1 << 20) if inflate.unconsumed_tail else b""
            if not chunk:
                break
            left -= len(chunk)
            if left < 0:
                return False
            digest.update(chunk)
        return left == 0 and inflate.eof and digest.hexdigest() == name
    except zlib.error:
        return False


def _take_objects(private: PrivateGit, paths: list[str]) -> list[str]:
    """Loose objects, each checked against its name before it is written; packs are not taken."""
    notes = []
    real = os.path.join(private.gitdir, "objects")
    for path in sorted(paths):
        parts = path.split("/")
        if len(parts) == 3 and parts[1] == "pack" and parts[2].endswith(".pack"):
            notes.append(f".git/{path}: a pack (from a fetch or gc in the sandbox) is not taken; its objects are not in your .git")
            continue
        if len(parts) != 3 or not re.fullmatch(r"[0-9a-f]{2}", parts[1]) or not re.fullmatch(r"[0-9a-f]{38}|[0-9a-f]{62}", parts[2]):
            continue
        name = parts[1] + parts[2]
        target = os.path.join(real, parts[1], parts[2])
        if os.path.exists(target):
            continue
        data = private.copy.read_changed(path, limit=MAX_OBJECT_BYTES)
        if data is None or not _names_itself(data, name):
            notes.append(f".git/{path}: not a git object of that name; not taken")
            continue
        from ....store.files import atomic_write

        atomic_write(target, data, mode=0o444, sync=False)
    return notes


def _refs(gitdir: str) -> dict[str, str]:
    """Branches and tags, as git reads them: packed-refs, then the loose files over them."""
    found: dict[str, str] = {}
    packed = _read(os.path.join(gitdir, "packed-refs")) or b""
    for line in packed.decode("utf-8", "replace").splitlines():
        value, _, name = line.partition(" ")
        if HEX.match(value) and name.startswith(TAKEN_REFS):
            found[name] = value
    for prefix in TAKEN_REFS:
        top = os.path.join(gitdir, prefix)
        for directory, _, files in os.walk(top):
            for file_name in files:
                path = os.path.join(directory, file_name)
                name = os.path.relpath(path, gitdir).replace(os.sep, "/")
                value = (_read(path) or b"").decode("utf-8", "replace").strip()
                if HEX.match(value):
                    found[name] = value
    return found


def _take_refs(private: PrivateGit, message: str) -> list[str]:
    mine, theirs = _refs(private.copy.path), _refs(private.gitdir)
    updates, notes = [], []
    for name, value in sorted(mine.items()):
        if theirs.get(name) == value:
            continue
        if not ref_name_ok(name):
            notes.append(f"{name}: not a branch or tag name uwf takes; left out")
            continue
        if not _connected(private.gitdir, value):
            notes.append(f"{name}: its commit {value[:12]} needs objects your .git does not have (a pack?); not moved")
            continue
        updates.append(f"update {name} {value} {theirs.get(name, '0' * len(value))}\n")
    if updates:
        done = _git(private.gitdir, "update-ref", "-m", message, "--stdin", stdin="".join(updates))
        if done is not None:
            notes.append(f"branches and tags not moved ({done}): your repository changed meanwhile")
    return notes


def _take_head(private: PrivateGit, message: str) -> list[str]:
    head = (_read(os.path.join(private.copy.path, "HEAD")) or b"").decode("utf-8", "replace").strip()
    if _read(os.path.join(private.gitdir, "HEAD")) != private.head:
        return ["HEAD: changed by you meanwhile; the run's is not taken"]
    if head.startswith("ref: refs/heads/") and ref_name_ok(head[5:]):
        failed = _git(private.gitdir, "symbolic-ref", "-m", message, "HEAD", head[5:])
    elif HEX.match(head) and _connected(private.gitdir, head):
        failed = _git(private.gitdir, "update-ref", "--no-deref", "-m", message, "HEAD", head)
    else:
        return [f"HEAD: {head[:80]!r} is not a branch or a commit uwf takes; not moved"]
    return [f"HEAD not moved: {failed}"] if failed else []


def _take_index(private: PrivateGit) -> list[str]:
    """The run's index, through git's own lock, when yours is as the run found it."""
    real = os.path.join(private.gitdir, "index")
    if _stamp(real) != private.index_stamp:
        return ["index: changed by you meanwhile; the run's is not taken"]
    original = private.copy.read_changed("index", limit=1 << 30)
    if original is None or not original.startswith(b"DIRC"):
        return ["index: not a git index; not taken"]
    entries, problem = _index_entries(private)
    if problem is not None:
        return [f"index: {problem}; not taken"]
    data = _rebuilt_index(private, entries)
    if isinstance(data, str):
        return [f"index: {data}; not taken"]
    lock = real + ".lock"
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return ["index: git holds its lock (index.lock); the run's is not taken"]
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(lock, real)
    except OSError as exc:
        try:
            os.unlink(lock)
        except OSError:
            pass
        return [f"index: not taken ({exc.strerror or exc})"]
    return []


def _index_entries(private: PrivateGit) -> tuple[bytes, str | None]:
    """The run's index as its entries (`ls-files --stage`), or why it must not become yours: git
    cannot read it against your repository (a split index naming a shared one it lacks), or an
    entry would be written outside the worktree or into .git by your next checkout (git never
    writes such an index itself)."""
    listed = _git(private.gitdir, "ls-files", "-z", "--stage", output=True, index=os.path.join(private.copy.path, "index"))
    if isinstance(listed, str):
        return b"", f"git cannot read it against your repository ({listed})"
    for record_ in filter(None, listed.split(b"\0")):
        _, _, path = record_.partition(b"\t")
        if not safe_path(path):
            return b"", f"it names {path[:120].decode('utf-8', 'backslashreplace')!r}, which is no place in a worktree"
    return listed, None


def _rebuilt_index(private: PrivateGit, entries: bytes) -> bytes | str:
    """An index made by git from the entries alone: none of the run's extensions comes along (a
    cache-tree naming another tree would have your next commit commit that one)."""
    rebuilt = os.path.join(private.copy.path, "index.rebuilt")
    done = _git(private.gitdir, "update-index", "-z", "--index-info", stdin_bytes=entries, index=rebuilt)
    if done is not None:
        return f"git could not make it again from its entries ({done})"
    return _read(rebuilt, 1 << 30) or b""


def safe_path(path: bytes) -> bool:
    """A path git may write in a worktree (its verify_path, read strictly): relative, no empty,
    `.` or `..` part, no part that is `.git` however a file system may spell it, no backslash."""
    if not path or path.startswith(b"/") or b"\\" in path or b"\0" in path:
        return False
    for part in path.split(b"/"):
        folded = part.lower().rstrip(b". ")
        if part in (b"", b".", b"..") or folded == b".git" or folded.startswith(b"git~") or folded.startswith(b".git::"):
            return False
    return True


def _connected(gitdir: str, commit: str) -> bool:
    """Whether every object `commit` needs is in the real repository."""
    return _git(gitdir, "rev-list", "--objects", "--quiet", commit, "--not", "--all") is None


def _git(gitdir: str, *args: str, stdin: str | None = None, stdin_bytes: bytes | None = None, output: bool = False, index: str | None = None):
    """Run git on the real repository with its hooks off: None when it succeeds (its stdout's
    bytes with `output`), else its error as a string. `index`: the index file git reads."""
    import subprocess

    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    if index is not None:
        env["GIT_INDEX_FILE"] = index
    try:
        done = subprocess.run(
            ["git", f"--git-dir={gitdir}", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", *args],
            input=stdin.encode() if stdin is not None else stdin_bytes, capture_output=True, env=env, timeout=120, cwd="/",
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return done.stdout if output else None
    error = done.stderr.decode("utf-8", "replace")
    return next((line.strip() for line in error.splitlines() if line.strip()), f"exit {done.returncode}")


def _read(path: str, limit: int = 1 << 24) -> bytes | None:
    """A file of the copy (the agent's to make): only a regular one, at most `limit`."""
    return read_regular(path, limit)


def _stamp(path: str) -> tuple | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
