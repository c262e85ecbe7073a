"""Git repositories in a workspace besides its own .git, and new ones (design §16).

git finds a repository from wherever it runs: a `.git` there or in a parent, or the directory
itself when it looks like one (a bare repository). An agent that makes one in its workspace —
`git init` with an fsmonitor in its config, a bare-looking directory with hooks, a submodule's
`.git` file pointed at a directory of its own — has its code run by your next git command there.
And a repository's config may name files inside the workspace (an include.path, a husky
core.hooksPath, a filter's script) that git runs or reads.

So before a sandboxed run uwf surveys the workspace (engine/git_walk.py): every repository already
there is kept read-only (its `.git` file or directory, a bare one whole), and so is every file or
directory inside the workspace that the main repository's config names. After the run the walk is
refreshed: a repository that was not there, or a named path that did not exist and now does, is
refused — the step fails, and the entry that makes it one is renamed `<name>.refused-by-uwf`, so
git passes it by and nothing is deleted. A repository the agent only moved (a read-only one keeps
its inode) is not new. The survey is saved before the run as pending: a run whose check never
came (uwf was killed) is checked by the next survey, which renames what it made aside and says so.
"""

from __future__ import annotations

import os
import re

from ..encoding.records import record
from .git_walk import UncheckableWorkspace, Walk, forget, load, refresh, save, walk

REFUSED = ".refused-by-uwf"
# Config keys whose value git runs or reads as a file (the last part of the key): a path in the
# value that leads into the workspace is kept read-only.
RUNS = frozenset({
    "fsmonitor", "sshcommand", "pager", "editor", "askpass", "attributesfile", "excludesfile", "path", "helper", "program",
    "clean", "smudge", "process", "textconv", "command", "cmd", "driver", "difffilter", "browser", "hook",
})
PATHLIKE = re.compile(r"\A[\w.~@+-]*/[\w./~@+-]*\Z")

__all__ = ["UncheckableWorkspace", "Survey", "audit", "survey"]


@record
class Survey:
    walk: Walk
    cache: str | None
    protected: tuple[str, ...] = ()  # kept read-only in the sandbox
    known: frozenset = frozenset()  # (st_dev, st_ino) of every repository entry there before the run
    absent: tuple[str, ...] = ()  # named by the main repository's config, not there: must stay so
    leftovers: tuple[str, ...] = ()  # what a run uwf did not see the end of made, renamed aside now

    @property
    def workspace(self) -> str:
        return self.walk.workspace


def survey(workspace: str, main_gitdir: str | None, cache: str | None = None) -> Survey:
    """The repositories of `workspace` before a run; `cache`, where the walk is kept between runs."""
    workspace = os.path.realpath(workspace)
    taken = load(cache, workspace, main_gitdir) if cache else None
    leftovers: list[str] = []
    if taken is None:
        taken = walk(workspace, main_gitdir)
    elif taken.pending:  # the run before this one ended with uwf: check it now
        known = frozenset(item.identity for item in taken.entries())
        try:
            leftovers = _refuse(taken, [item for item in refresh(taken) if item.identity not in known])
        except OSError as exc:
            raise UncheckableWorkspace(f"a git repository an earlier run made could not be renamed aside ({exc})") from None
    else:
        refresh(taken)
    found = taken.entries()
    protected = [item.path for item in found if item.path != workspace]
    absent: list[str] = []
    if main_gitdir is not None:
        for path in _config_paths(main_gitdir, workspace):
            (protected if os.path.lexists(path) else absent).append(path)
    if cache:
        save(taken, cache, pending=True)
    known = frozenset(item.identity for item in found)
    return Survey(taken, cache, tuple(dict.fromkeys(protected)), known, tuple(absent), tuple(leftovers))


def audit(taken: Survey) -> list[str]:
    """After the run: every repository entry it made (or a path the repository's config names),
    renamed so git passes it by — what each was and where it went, or nothing."""
    new = [item for item in refresh(taken.walk) if item.identity not in taken.known]
    refused = _refuse(taken.walk, new)
    for path in taken.absent:
        if os.path.lexists(path):
            refused.append(f"{_shown(taken.workspace, path)} (your repository's config names it), renamed {_shown(taken.workspace, _rename_aside(path))}")
            forget(taken.walk, os.path.dirname(path))
    if taken.cache:
        save(taken.walk, taken.cache, pending=False)
    return refused


def _refuse(taken: Walk, items: list) -> list[str]:
    refused = []
    for item in items:
        target = os.path.join(item.path, "HEAD") if item.kind == "bare" else item.path
        what = _shown(taken.workspace, item.path)
        if item.kind == "bare":
            what += " (a bare repository: HEAD beside objects/, refs/ or commondir)"
        refused.append(f"{what}, renamed {_shown(taken.workspace, _rename_aside(target))}")
        forget(taken, os.path.dirname(target))
    return refused


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
