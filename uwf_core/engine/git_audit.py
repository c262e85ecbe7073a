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
BARE_MARKS = frozenset({"objects", "refs", "commondir"})
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


def survey(workspace: str, main_gitdir: str | None) -> Survey:
    workspace = os.path.realpath(workspace)
    found = _repositories(workspace, main_gitdir)
    known = frozenset(identity for _, _, identity in found)
    protected = [path for path, _, _ in found if path != workspace]
    absent: list[str] = []
    if main_gitdir is not None:
        for path in _config_paths(main_gitdir, workspace):
            (protected if os.path.lexists(path) else absent).append(path)
    return Survey(workspace, main_gitdir, tuple(dict.fromkeys(protected)), known, tuple(absent))


def audit(taken: Survey) -> list[str]:
    """Every repository entry the run made (or a path its repository's config names), renamed so
    git passes it by: what each was and where it went, or nothing."""
    refused = []
    for path, kind, identity in _repositories(taken.workspace, taken.skip):
        if identity in taken.known:
            continue
        what = f"{_shown(taken.workspace, path)} (a bare repository: HEAD beside objects/, refs/ or commondir)" if kind == "bare" else _shown(taken.workspace, path)
        refused.append(f"{what}, renamed {_shown(taken.workspace, _rename_aside(os.path.join(path, 'HEAD') if kind == 'bare' else path))}")
    for path in taken.absent:
        if os.path.lexists(path):
            refused.append(f"{_shown(taken.workspace, path)} (your repository's config names it), renamed {_shown(taken.workspace, _rename_aside(path))}")
    return refused


def _repositories(workspace: str, skip: str | None) -> list[tuple[str, str, tuple]]:
    """(path, kind, identity) of every repository entry under the workspace: a `.git` of any kind
    (dotgit), or a directory that is itself a git directory (bare). Not entered: either of them,
    and no link is followed."""
    found: list[tuple[str, str, tuple]] = []
    stack = [(workspace, 0)]
    walked = 0
    while stack:
        directory, depth = stack.pop()
        walked += 1
        if walked > MAX_DIRS:
            raise UncheckableWorkspace(f"it holds more than {MAX_DIRS:,} directories")
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise UncheckableWorkspace(f"{directory} cannot be read ({exc.strerror or exc})") from None
        names = {entry.name for entry in entries}
        if "HEAD" in names and names & BARE_MARKS and directory != skip:
            found.append((directory, "bare", _identity(directory)))
            continue
        for entry in entries:
            if entry.name.lower() == ".git":
                if entry.path != skip:
                    found.append((entry.path, "dotgit", _identity(entry.path)))
                continue
            if entry.is_dir(follow_symlinks=False):
                if depth >= MAX_DEPTH:
                    raise UncheckableWorkspace(f"it holds directories deeper than {MAX_DEPTH} levels ({_shown(workspace, entry.path)[:120]}…)")
                stack.append((entry.path, depth + 1))
    return found


def _identity(path: str) -> tuple:
    try:
        info = os.lstat(path)
    except OSError:
        return (path,)
    return (info.st_dev, info.st_ino)


def _config_paths(gitdir: str, workspace: str) -> list[str]:
    """Files and directories inside the workspace that the repository's config names: the files it
    includes, its hooks directory, the scripts its values run (a filter's, an fsmonitor's)."""
    import subprocess

    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    try:
        listed = subprocess.run(
            ["git", f"--git-dir={gitdir}", "config", "--list", "--show-origin", "--includes", "-z"],
            capture_output=True, env=env, timeout=30, cwd="/",
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    worktree = os.path.dirname(gitdir)
    found = []
    for record_ in listed.stdout.split(b"\0"):  # -z: origin \0 key \n value \0 ...
        text = record_.decode("utf-8", "surrogateescape")
        if text.startswith("file:"):
            found.append(text[5:])
            continue
        key, _, value = text.partition("\n")
        if key == "core.hookspath":
            found.append(os.path.join(worktree, os.path.expanduser(value)))
        elif key.startswith("alias.") or key.rsplit(".", 1)[-1] in RUNS:
            found += [os.path.join(worktree, os.path.expanduser(token)) for token in map(_unquoted, value.split()) if PATHLIKE.match(token)]
    inside = []
    for path in found:
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
