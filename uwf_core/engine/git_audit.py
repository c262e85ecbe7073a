"""Git repositories in a workspace besides its own .git, and new ones (design §16).

git finds a repository from wherever it runs: a `.git` there or in a parent, or the directory
itself when it looks like one (HEAD beside objects/, refs/ or commondir: a bare repository). An
agent that makes one in its workspace — `git init` with an fsmonitor in its config, a bare-looking
directory with hooks, a submodule's `.git` file pointed at a directory of its own — has its code
run by your next git command there. And a repository's config may name files inside the
workspace (an include.path, a husky core.hooksPath, a filter's script) that git runs or reads.

So before a sandboxed run uwf surveys the workspace: every repository already there is kept
read-only (its `.git` file or directory, a bare one whole), and so is every file or directory
inside the workspace that the main repository's config names. After the run, the walk is taken
again: a repository that was not there, or a named path that did not exist and now does, is
refused — the step fails, and the entry that makes it one is renamed `<name>.refused-by-uwf`, so
git passes it by and nothing is deleted. A repository the agent only moved (a read-only one keeps
its inode) is not new.
"""

from __future__ import annotations

import os
import re

from ..encoding.records import record

MAX_DEPTH = 256
MAX_DIRS = 1_000_000
REFUSED = ".refused-by-uwf"
MARKS = frozenset({"HEAD", "objects", "refs", "commondir"})  # HEAD beside any other: a git directory
DOT_GIT = frozenset({".git"})
# Config keys whose value git runs or reads as a file (the last part of the key): a path in the
# value that leads into the workspace is kept read-only.
RUNS = frozenset({
    "fsmonitor", "sshcommand", "pager", "editor", "askpass", "attributesfile", "excludesfile", "path", "helper", "program",
    "clean", "smudge", "process", "textconv", "command", "cmd", "driver", "difffilter", "browser", "hook",
})
PATHLIKE = re.compile(r"\A[\w.~@+-]*/[\w./~@+-]*\Z")


class UncheckableWorkspace(Exception):
    """A workspace uwf cannot walk to the end (deeper than MAX_DEPTH, more than MAX_DIRS)."""


@record(frozen=True)
class Survey:
    workspace: str
    skip: str | None  # the main .git (its private copy is the sandbox's)
    protected: tuple[str, ...] = ()  # kept read-only in the sandbox
    known: frozenset = frozenset()  # (st_dev, st_ino) of every repository entry there before the run
    absent: tuple[str, ...] = ()  # named by the main repository's config, not there: must stay so
    dirs: dict | None = None  # every directory walked -> its ctime: one whose ctime holds gained no entry


def survey(workspace: str, main_gitdir: str | None) -> Survey:
    workspace = os.path.realpath(workspace)
    dirs: dict[str, int] = {}
    found = _repositories([workspace], workspace, main_gitdir, dirs)
    known = frozenset(identity for _, _, identity in found)
    protected = [path for path, _, _ in found if path != workspace]
    absent: list[str] = []
    if main_gitdir is not None:
        for path in _config_paths(main_gitdir, workspace):
            (protected if os.path.lexists(path) else absent).append(path)
    return Survey(workspace, main_gitdir, tuple(dict.fromkeys(protected)), known, tuple(absent), dirs)


def audit(taken: Survey) -> list[str]:
    """Every repository entry the run made (or a path its repository's config names), renamed so
    git passes it by: what each was and where it went, or nothing. Only the directories whose
    ctime moved are listed again (an entry made, removed or renamed in a directory moves its
    ctime, and no process can set a ctime back), and what is new in them walked whole."""
    changed = [path for path, ctime in taken.dirs.items() if _ctime(path) not in (ctime, None)]
    refused = []
    for path, kind, identity in _repositories(changed, taken.workspace, taken.skip, None, known_dirs=taken.dirs):
        if identity in taken.known:
            continue
        what = f"{_shown(taken.workspace, path)} (a bare repository: HEAD beside objects/, refs/ or commondir)" if kind == "bare" else _shown(taken.workspace, path)
        refused.append(f"{what}, renamed {_shown(taken.workspace, _rename_aside(os.path.join(path, 'HEAD') if kind == 'bare' else path))}")
    for path in taken.absent:
        if os.path.lexists(path):
            refused.append(f"{_shown(taken.workspace, path)} (your repository's config names it), renamed {_shown(taken.workspace, _rename_aside(path))}")
    return refused


def _repositories(
    tops: list[str], workspace: str, skip: str | None, dirs: dict | None, known_dirs: dict | None = None,
) -> list[tuple[str, str, tuple]]:
    """(path, kind, identity) of every repository entry in the directories `tops` and below: a
    `.git` of any kind (dotgit), or a directory that is itself a git directory (bare). Not
    entered: either of them, nor a directory of `known_dirs` (listed on its own if it changed);
    no link is followed. `dirs` gets each directory walked, with its ctime."""
    found: list[tuple[str, str, tuple]] = []
    stack = [(top, top.count("/")) for top in tops]
    base = workspace.count("/")
    walked = 0
    while stack:
        directory, depth = stack.pop()
        walked += 1
        if walked > MAX_DIRS:
            raise UncheckableWorkspace(f"it holds more than {MAX_DIRS:,} directories")
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
            if dirs is not None:
                dirs[directory] = os.lstat(directory).st_ctime_ns
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise UncheckableWorkspace(f"{directory} cannot be read ({exc.strerror or exc})") from None
        marks = [entry.name for entry in entries if entry.name in MARKS]
        if "HEAD" in marks and len(marks) > 1 and directory != skip:
            found.append((directory, "bare", _identity(directory)))
            continue
        for entry in entries:
            name = entry.name
            if name in DOT_GIT or name.lower() == ".git":
                if entry.path != skip:
                    found.append((entry.path, "dotgit", _identity(entry.path)))
            elif entry.is_dir(follow_symlinks=False) and (known_dirs is None or entry.path not in known_dirs):
                if depth - base >= MAX_DEPTH:
                    raise UncheckableWorkspace(f"it holds directories deeper than {MAX_DEPTH} levels ({entry.path[:120]}…)")
                stack.append((entry.path, depth + 1))
    return found


def _ctime(path: str) -> int | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None  # gone: what was in it is gone too
    return info.st_ctime_ns


def _identity(path: str) -> tuple:
    try:
        info = os.lstat(path)
    except OSError:
        return (path,)
    return (info.st_dev, info.st_ino)


def _config_paths(gitdir: str, workspace: str) -> list[str]:
    """Files and directories inside the workspace that the repository's config names: the files it
    includes, its hooks directory, the scripts its values run (a filter's, an fsmonitor's)."""
    from .git_config import config_entries

    worktree = os.path.dirname(gitdir)
    found = []
    for origin, key, value in config_entries(gitdir, dict(os.environ)):
        found.append(origin)
        if key == "core.hookspath":
            found.append(os.path.join(worktree, os.path.expanduser(value)))
        elif key.startswith("alias.") or key.rsplit(".", 1)[-1] in RUNS:
            found += [os.path.join(worktree, os.path.expanduser(token)) for token in map(_unquoted, value.split()) if PATHLIKE.match(token)]
    inside = []
    for path in dict.fromkeys(found):
        path = os.path.normpath(path)
        real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        if real.startswith(workspace.rstrip("/") + "/") and not real.startswith(gitdir.rstrip("/") + "/"):
            inside.append(real)
    return inside


def _unquoted(token: str) -> str:
    return token.strip("'\"").removeprefix("!")


def _rename_aside(path: str) -> str:
    """`path` renamed beside itself so git passes it by (a name already taken gets a number); the
    new name."""
    for number in range(1, 1000):
        target = f"{path}{REFUSED}" if number == 1 else f"{path}{REFUSED}-{number}"
        if not os.path.lexists(target):
            os.rename(path, target)
            return target
    raise OSError(f"no free name beside {path}")


def _shown(workspace: str, path: str) -> str:
    return os.path.relpath(path, workspace) if path != workspace else "."
