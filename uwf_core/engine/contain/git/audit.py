"""Git repositories in a workspace besides its own .git, and new ones (design §16).

git finds a repository from wherever it runs: a `.git` there or in a parent, or the directory
itself when it looks like one (a bare repository). An agent that makes one in its workspace —
`git init` with an fsmonitor in its config, a bare-looking directory with hooks, a submodule's
`.git` file pointed at a directory of its own — has its code run by your next git command there.
And a repository's config may name files inside the workspace (an include.path, a husky
core.hooksPath, a filter's script) that git runs or reads.

So before a sandboxed run uwf surveys the workspace (engine/contain/git/walk.py): every repository already
there is kept read-only (its `.git` file or directory, a bare one whole), and so is every file or
directory inside the workspace that any of their configs — the main repository's, a nested one's,
a linked worktree's — names. After the run the walk is refreshed: a repository that was not
there, or a named path that is not the one that was there (made, or put in place of one moved
away with its directory), is refused — the step fails, and the entry that makes it one is renamed
`<name>.refused-by-uwf`, so git passes it by and nothing is deleted. A repository the agent only
moved (a read-only one keeps its inode) is not new. The survey is saved before the run as
pending: a run whose check never came (uwf was killed) is checked by the next survey.
"""

from __future__ import annotations

import os

from ....encoding.records import record
from ....workspace.tree import show_text
from .config import named_paths
from .walk import Found, UncheckableWorkspace, Walk, empty_dot_gits, forget, load, refresh, save, walk

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from collections.abc import Callable

REFUSED = ".refused-by-uwf"

__all__ = ["UncheckableWorkspace", "Survey", "audit", "survey"]


@record
class Survey:
    walk: Walk
    cache: str | None
    protected: tuple[str, ...] = ()  # kept read-only in the sandbox
    known: frozenset = frozenset()  # (st_dev, st_ino) of every repository entry there before the run
    named: dict | None = None  # paths the repositories' configs name -> what was there (an identity, or None)
    leftovers: tuple[str, ...] = ()  # what a run uwf did not see the end of made, renamed aside now
    empty: tuple[str, ...] = ()  # `.git` directories that held nothing: one filled in place is new

    @property
    def workspace(self) -> str:
        return self.walk.workspace


def survey(
    workspace: str, main_gitdir: str | None, cache: str | None = None, env: dict[str, str] | None = None,
    prune: tuple[str, ...] = (), keep: tuple[str, ...] = (), keys: tuple[bytes, ...] = (),
) -> Survey:
    """The repositories of `workspace` before a run; `cache`, where the walk is kept between runs;
    `env`, whose HOME names your git config; `prune`, directories the run cannot write (not walked)
    but for those of `keep` in them, which it can."""
    workspace = os.path.realpath(workspace)
    prune = tuple(os.path.realpath(path) for path in prune)
    keep = tuple(os.path.realpath(path) for path in keep)
    taken = load(cache, workspace, main_gitdir, prune, keep) if cache else None
    leftovers: list[str] = []
    if taken is None:
        taken = walk(workspace, main_gitdir, prune, keep)
    elif taken.pending:  # the run before this one ended with uwf: check it now
        known = frozenset(item.identity for item in taken.entries())
        try:
            leftovers = _refuse(taken, [item for item in refresh(taken) if item.identity not in known])
        except OSError as exc:
            raise UncheckableWorkspace(f"a git repository an earlier run made could not be renamed aside ({exc})") from None
    else:
        refresh(taken)
    taken.keys = keys
    found = taken.entries()
    named = {path: _identity(path) for path in _named(workspace, main_gitdir, found, env or dict(os.environ))}
    protected = [item.path for item in found if item.path != workspace and not os.path.islink(item.path)]  # a link: its target is bound
    protected += [path for path, identity in named.items() if identity and not os.path.islink(path)]
    if cache:
        save(taken, cache, pending=True)
    known = frozenset(item.identity for item in found)
    return Survey(taken, cache, tuple(dict.fromkeys(protected)), known, named, tuple(leftovers), tuple(empty_dot_gits(taken)))


def audit(taken: Survey, in_use: Callable[[str], bool] = lambda path: False) -> tuple[list[str], list[str]]:
    """After the run: every repository entry it made and every named path that is not what was
    there, renamed so git passes it by (what each was and where it went); and what the walk could
    not check. Everything it did find is renamed, whatever it could not — but an empty `.git`
    another run's private .git is mounted on now (`in_use`): that run checks it when it ends."""
    refused: list[str] = []
    unchecked: list[str] = []
    for _ in range(8):  # a bare-looking directory renamed is entered next time round: a .git may be in it
        new = [item for item in refresh(taken.walk) if item.identity not in taken.known
               and not (item.kind == "dotgit" and not _filled(item.path) and in_use(item.path))]
        unchecked += taken.walk.unchecked
        new += [Found(path, "dotgit", ("filled",)) for path in taken.empty if _filled(path) and path not in {item.path for item in new}]
        taken.empty = tuple(path for path in taken.empty if not _filled(path))
        if not new:
            break
        refused += _refuse(taken.walk, new)
    for path, before in (taken.named or {}).items():
        now = _identity(path)
        if now is not None and now != before:
            refused.append(f"{_shown(taken.workspace, path)} (a repository's config names it: git runs or reads it), "
                           f"renamed {_shown(taken.workspace, _rename_aside(path))}")
            forget(taken.walk, os.path.dirname(path))
    if taken.cache:
        save(taken.walk, taken.cache, pending=False)
    return refused, list(dict.fromkeys(unchecked))


def _named(workspace: str, main_gitdir: str | None, found: list[Found], env: dict[str, str]) -> list[str]:
    """Inside the workspace, what the configs of its repositories name: the main one's (a linked
    worktree's `.git` file included) and every nested one's."""
    repositories = [(main_gitdir, os.path.dirname(main_gitdir))] if main_gitdir else []
    for item in found:
        if item.kind == "dotgit":
            gitdir = _gitdir_of(item.path)
            if gitdir is not None:
                repositories.append((gitdir, os.path.dirname(item.path)))
    inside = []
    for gitdir, worktree in repositories:
        for path in named_paths(gitdir, worktree, env):
            real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
            if real.startswith(workspace.rstrip("/") + "/") and not real.startswith(gitdir.rstrip("/") + "/"):
                inside.append(real)
    return list(dict.fromkeys(inside))


def _gitdir_of(dot_git: str) -> str | None:
    """The git directory a `.git` stands for: itself, or the one its `gitdir:` line names."""
    if os.path.isdir(dot_git) and not os.path.islink(dot_git):
        return dot_git
    try:
        fd = os.open(dot_git, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        line = os.read(fd, 4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)
    if not line.startswith("gitdir:"):
        return None
    return os.path.normpath(os.path.join(os.path.dirname(dot_git), line[7:].strip()))


def _refuse(taken: Walk, items: list[Found]) -> list[str]:
    """Each item renamed aside; one that cannot be (a directory the run made read-only) does not
    stop the others: OSError naming those, once every other one is renamed."""
    refused, failed = [], []
    for item in items:
        target = os.path.join(item.path, "HEAD") if item.kind == "bare" else item.path
        what = _shown(taken.workspace, item.path)
        if item.kind == "bare":
            what += " (a bare repository: HEAD beside objects/, refs/ or commondir)"
        try:
            refused.append(f"{what}, renamed {_shown(taken.workspace, _rename_aside(target))}")
        except OSError as exc:
            failed.append(f"{what}: {exc.strerror or exc}")
            continue
        forget(taken, os.path.dirname(target))
    if failed:
        raise OSError("; ".join(failed[:5]) + (f" (every other one renamed: {'; '.join(refused[:5])})" if refused else ""))
    return refused


def _filled(path: str) -> bool:
    try:
        return os.path.isdir(path) and not os.path.islink(path) and bool(os.listdir(path))
    except OSError:
        return True  # cannot be read: not the empty directory it was


def _identity(path: str) -> tuple | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


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
    """A workspace path as uwf says it: relative, control characters escaped (the names are the agent's)."""
    return show_text(os.path.relpath(path, workspace) if path != workspace else ".")
