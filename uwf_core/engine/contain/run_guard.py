"""What one agent run may leave behind (design §16): nothing it writes runs or is loaded later,
outside the sandbox, and nothing it writes outside its workspace goes unseen.

Before the run: its CLI's state directories become private copies (engine/contain/state_dirs.py), the
workspace's .git a private copy (engine/contain/git/private.py), and every other git repository in the
workspace, with what the main one's config names there, read-only (engine/contain/git/audit.py). After
it: what it wrote in those copies and in its entry's `writable` places is listed, a refreshed
login and (with `git: commit`) its commits are carried back, a git repository it made is refused,
and a write to a place a later session of yours trusts is a warning. All of it is one
OutsideWrites on the attempt's record.

Without bubblewrap (the fallback containment) nothing can be mounted: only the check for new
repositories and the warnings apply. An entry with `git: write` is trusted with the workspace's
git (the real .git, no check for repositories); one with `sandbox: false`, with everything.
"""

from __future__ import annotations

import os
import time

from ...encoding.records import replace
from ...store.records import OutsideWrites
from ..attempt import StepError
from ...workspace.tree import show_text
from .git.audit import UncheckableWorkspace, audit, survey
from .git import placeholder
from .git.private import GitResult, find_gitdir, finish_git, private_git, release_placeholder
from .state_dirs import finish_state, private_states

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from ..resolve import ResolvedAgent
    from .sandbox import Policy

CTIME_SLACK_NS = 50_000_000  # the kernel stamps files with a coarse clock, a tick behind time.time_ns()
# Files in a workspace that a later session trusts: what git hooks run, what agent CLIs load as
# instructions or settings in the next session there, what a shell or an editor runs on entry.
TRUSTED_IN_WORKSPACE = {
    "CLAUDE.md": "Claude Code loads it as instructions", "CLAUDE.local.md": "Claude Code loads it as instructions",
    ".claude": "Claude Code loads its settings, hooks, commands and agents", ".mcp.json": "Claude Code starts the MCP servers it names",
    "AGENTS.md": "Codex and other agents load it as instructions", ".codex": "Codex loads its config",
    ".cursor": "Cursor loads its rules", ".cursorrules": "Cursor loads its rules", "GEMINI.md": "Gemini CLI loads it as instructions",
    ".aider.conf.yml": "aider runs the commands it names", ".pre-commit-config.yaml": "your pre-commit hook runs what it names",
    ".husky": "your git hooks (husky) run it", "lefthook.yml": "your git hooks (lefthook) run what it names",
    ".lefthook.yml": "your git hooks (lefthook) run what it names", ".envrc": "direnv runs it when you enter the directory",
    ".vscode": "VS Code runs its tasks and loads its settings", ".gitattributes": "git applies the filters it names",
    ".gitmodules": "git clones what it names on `submodule update`", ".npmrc": "npm loads it as settings",
}


class RunGuard:
    """One run's private copies and checks. `workspace`, `env`, `scratch`: the run's (its env is
    the agent's, whose HOME names the state directories); `thread` names the run in reflogs;
    `stage`, a step agent's staging directory in scratch (the one place there it may write)."""

    def __init__(
        self, resolved: ResolvedAgent, workspace: str, env: dict[str, str], scratch: str, cache: str, thread: str, boxed: bool,
        stage: str | None = None, keys: tuple[bytes, ...] = (),
    ) -> None:
        self.resolved = resolved
        self.workspace = workspace
        self.env = env
        self.scratch = scratch
        self.cache = cache  # host-local: where the workspace's walk is kept between runs
        self.thread = thread
        self.boxed = boxed
        self.stage = stage
        self.started_ns = time.time_ns() - CTIME_SLACK_NS
        self.states: list = []
        self.git = None
        self.survey = None
        self.made: list[str] = []  # git repositories the run made in its workspace (refused)
        self.kept: dict = {}  # uwf's own install inside the workspace -> its identity (the next `uwf` runs it)
        self.unchecked: str | None = None  # why the workspace could not be checked after the run
        self.left: list[str] = []  # private copies that could not be removed (what the run made in them is unchecked)
        self.keys = keys  # values never written to the walk kept between runs

    @classmethod
    def open(
        cls, resolved: ResolvedAgent, *, workspace: str, env: dict[str, str], scratch: str, cache: str, thread: str, boxed: bool,
        stage: str | None = None, keys: tuple[bytes, ...] = (),
    ) -> RunGuard | None:
        """Before the run (None for an entry with `sandbox: false`: it is trusted with everything).
        `keys`: values that are never written to the walk kept between runs (a path may hold one)."""
        if not resolved.sandbox:
            return None
        guard = cls(resolved, workspace, env, scratch, cache, thread, boxed, stage, keys)
        try:
            guard._prepare()
        except OSError as exc:  # a full or read-only disk: one line, nothing left behind
            guard._remove()
            guard._placeholder_taken()
            where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            raise StepError(
                f"agent '{resolved.label}' could not be given its private copies of .git and its state directories: "
                f"{exc.strerror or exc}{where}"
            ) from None
        except BaseException:
            guard._remove()
            guard._placeholder_taken()
            raise
        return guard

    def _prepare(self) -> None:
        main_gitdir, none = None, False
        from .policy import uwf_itself

        workspace = os.path.realpath(self.workspace)
        self.kept = {path: _identity(path) for path in uwf_itself() if path.startswith(workspace + "/") and os.path.exists(path)}
        if self.resolved.git != "write":
            main_gitdir, none = find_gitdir(self.workspace, self._placeholders())
            # a placeholder .git (runs sharing this workspace mount theirs on it) is no finding either
            self._survey(main_gitdir or (os.path.join(workspace, ".git") if none and self.boxed else None))
        if not self.boxed:
            return
        from .watchdog import WATCHDOG

        self.states = private_states(self.resolved.state, self.env, self.scratch)
        if main_gitdir is not None or none:
            self.git = private_git(main_gitdir or os.path.join(workspace, ".git"), self.scratch, self.resolved.git,
                                   locks=None if main_gitdir else self._placeholders())
        for copy in self._copies():
            WATCHDOG.guard_file(copy.path)  # a private copy holds your login: gone with uwf, however it ends

    def _placeholders(self) -> str:
        """Where runs on this host hold the placeholder .git of a workspace they share."""
        return os.path.join(self.cache, "git-placeholders")

    def _survey(self, main_gitdir: str | None) -> None:
        from ...encoding.ids import xxh64_hash

        cache = os.path.join(self.cache, "git-walk", xxh64_hash(os.path.realpath(self.workspace).encode()) + ".json")
        try:
            self.survey = survey(self.workspace, main_gitdir, cache, self.env, *self._scratch(), keys=self.keys)
        except UncheckableWorkspace as exc:
            raise StepError(f"the workspace {self.workspace} cannot be checked for git repositories before the run: {exc}") from None
        if any(identity == _identity(self.survey.workspace) for identity in self.survey.known):
            raise StepError(
                f"the workspace {self.workspace} is itself a git directory (HEAD beside objects/ or refs/): an agent "
                f"would write the repository's own files; give the thread a working tree instead"
            )

    def _scratch(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(what the walk passes by, what it walks there all the same): uwf's scratch directory
        when the root stands at the workspace's top, by no link (one could be moved away and
        made anew where the sandbox does not hide it). Other runs' private copies of .git come and
        go there; the sandbox hides it from the agent, but for a step agent's staging directory,
        which is walked. Without bubblewrap nothing is hidden: scratch is walked like the rest (a
        run without it beside sandboxed ones may take their copies for its own). Made if
        missing: the sandbox hides what exists."""
        if not self.boxed:
            return (), ()
        scratch = os.path.abspath(self.scratch)
        root = os.path.dirname(scratch)
        if os.path.islink(root) or os.path.dirname(os.path.realpath(root)) != os.path.realpath(self.workspace):
            return (), ()
        os.makedirs(scratch, exist_ok=True)
        if os.path.islink(scratch):
            return (), ()
        return (os.path.realpath(scratch),), ((os.path.realpath(self.stage),) if self.stage else ())

    def policy(self, base: Policy) -> Policy:
        """The run's sandbox: `base` with its private copies and the repositories kept read-only."""
        copies = self._copies()
        private = tuple((copy.path, copy.real) for copy in copies)
        views = tuple(mount for copy in copies for mount in copy.mounts())
        protected = self.survey.protected if self.survey is not None else ()
        return replace(base, private=(*base.private, *private), views=(*base.views, *views),
                       readable=tuple(dict.fromkeys((*base.readable, *protected))))

    def settle(self) -> OutsideWrites:
        """After the run (every process of it ended): the record, with what is carried back
        carried back and the copies removed. Each part stands on its own: one that cannot be read
        back is a note, and the check for repositories the run made always comes."""
        home = os.path.realpath(self.env.get("HOME") or os.path.expanduser("~"))
        state_paths: list[str] = []
        notes: list[str] = []
        refused: list[str] = []
        git_paths: list[str] = []
        try:
            for state in self.states:
                try:
                    wrote, said = finish_state(state, home)
                except OSError as exc:
                    wrote, said = [], [f"{state.place}: what the run wrote in its copy could not be read back ({exc})"]
                state_paths += wrote
                notes += said
            if self.git is not None:
                try:
                    result = finish_git(self.git, f"uwf: agent {self.resolved.label}, thread {self.thread}")
                except OSError as exc:
                    result = GitResult(notes=(f".git: what the run wrote in its copy could not be read back ({exc})",))
                git_paths += [f".git/{show_text(path)}" for path in result.wrote]
                refused += [f".git/{show_text(path)} (a git setting, in the run's copy of .git: never taken)" for path in result.refused]
                notes += [show_text(note) for note in result.notes]
                if result.refused:
                    notes.append(f"the run changed git settings in its copy of .git ({', '.join(map(show_text, result.refused[:5]))}): "
                                 f"thrown away, your .git is as it was")
        finally:
            notes += self._remove()
        self.made = self._placeholder_taken() + self._new_repositories() + self._replaced_uwf()
        refused += self.made
        writable = self._written_in_writable(home)
        warnings = self._trusted(writable, home)
        if self.survey is not None and self.survey.leftovers:
            warnings.append(f"a run before this one that uwf did not see to its end made git repositories here, renamed aside now: "
                            f"{'; '.join(self.survey.leftovers[:5])}")
        taken = self.git is not None and self.git.mode == "commit" and not self.git.placeholder
        return OutsideWrites().merged(OutsideWrites(
            tuple(state_paths), tuple(writable), tuple(git_paths), tuple(refused), tuple(warnings), tuple(notes), git_taken=taken,
        ))

    def _new_repositories(self) -> list[str]:
        if self.survey is None:
            return []
        try:
            locks = self._placeholders()
            refused, unchecked = audit(self.survey, in_use=lambda path: placeholder.in_use(path, locks))
        except OSError as exc:
            self.unchecked = f"a git repository the run made could not be renamed aside: {exc}"
            return [self.unchecked]
        if unchecked:
            self.unchecked = (f"uwf could not check all of the workspace for git repositories after the run "
                              f"({'; '.join(show_text(item) for item in unchecked[:3])}): remove what the run made there before you use git in it")
        return refused + ([self.unchecked] if self.unchecked else [])

    def _replaced_uwf(self) -> list[str]:
        """uwf's own install put back by another (its directory moved away: only the mount itself
        is busy): renamed aside, as a repository made by the run is."""
        replaced = []
        for path, before in self.kept.items():
            if os.path.lexists(path) and _identity(path) != before:
                from .git.audit import REFUSED

                os.rename(path, path + REFUSED)
                replaced.append(f"{show_text(os.path.relpath(path, self.workspace))} (uwf itself, which your next `uwf` runs), "
                                f"renamed {show_text(os.path.relpath(path + REFUSED, self.workspace))}")
        return replaced

    def refusal(self) -> StepError | None:
        """The failure of a run that made a git repository in its workspace, or whose workspace
        could not be checked for one."""
        if self.unchecked is not None:
            return StepError(f"agent '{self.resolved.label}': {self.unchecked}; the step is not taken")
        if self.left:
            return StepError(f"agent '{self.resolved.label}' left a private copy uwf could not remove, and what it holds is "
                             f"unchecked: remove {show_text(self.left[0])} before you use git in it; the step is not taken")
        if not self.made:
            return None
        return StepError(
            f"agent '{self.resolved.label}' left in its workspace what your next git (or uwf) command there would run: "
            f"{'; '.join(self.made[:5])}{f' (and {len(self.made) - 5} more)' if len(self.made) > 5 else ''}; nothing was deleted"
        )

    def _written_in_writable(self, home: str) -> list[str]:
        """Files its `writable` places hold that the run created or changed."""
        if not self.boxed:
            return []
        from .policy import expand
        from .state_dirs import shown_path

        found = []
        for item in self.resolved.writable:
            place = expand(item, self.env)
            if place is None or not os.path.lexists(place):
                continue
            found += [shown_path(path, home) for path in _changed_since(os.path.realpath(place), self.started_ns)]
        return found

    def _trusted(self, writable: list[str], home: str) -> list[str]:
        """Warnings: a changed file a later session trusts, in the workspace or in your home."""
        warnings = []
        for name, why in TRUSTED_IN_WORKSPACE.items():
            path = os.path.join(self.workspace, name)
            changed = _changed_since(path, self.started_ns) if os.path.isdir(path) and not os.path.islink(path) else (
                [path] if _ctime(path) >= self.started_ns else [])
            files = [path for path in changed if not path.endswith(" (its entries changed)")]
            if changed:
                shown = show_text(os.path.relpath((files or changed)[0].removesuffix(" (its entries changed)"), self.workspace))
                warnings.append(f"{shown}: changed by the run, and {why}: review it before you use it")
        dotfiles = sorted((path for path in writable if path.startswith("~/.")), key=lambda path: path.endswith(" (its entries changed)"))
        if dotfiles:
            more = f" and {len(dotfiles) - 3} more" if len(dotfiles) > 3 else ""
            warnings.append(f"{', '.join(dotfiles[:3])}{more}: written by the run, in your home's settings, which your own tools load")
        return warnings

    def _copies(self) -> list:
        return [*(state.copy for state in self.states), *([self.git.copy] if self.git is not None else [])]

    def _remove(self) -> list[str]:
        """The private copies removed; what could not be, said (the watchdog tries again when uwf exits)."""
        from .watchdog import WATCHDOG

        said = []
        for copy in self._copies():
            try:
                copy.remove()
                WATCHDOG.release_file(copy.path)
            except Exception as exc:  # noqa: BLE001 — whatever the run made of it, the check after the run comes
                said.append(f"a private copy of the run could not be removed ({exc}): remove {copy.path}")
                self.left.append(copy.path)
        return said

    def _placeholder_taken(self) -> list[str]:
        """The placeholder .git let go, and a repository that took its place refused."""
        if self.git is None or not self.git.placeholder:
            return []
        try:
            made = release_placeholder(self.git, self._placeholders())
        except OSError as exc:
            return [f".git (what stands where the run's empty .git was) could not be renamed aside: {exc}"]
        return [f"{show_text(os.path.relpath(path, self.workspace))} (a git repository where the run's empty .git was: its "
                f"mount point was moved meanwhile), renamed {show_text(os.path.relpath(path, self.workspace))}.refused-by-uwf"
                for path in made]


def _identity(path: str) -> tuple:
    try:
        info = os.lstat(path)
    except OSError:
        return (path,)
    return (info.st_dev, info.st_ino)


def _ctime(path: str) -> int:
    try:
        return os.lstat(path).st_ctime_ns
    except OSError:
        return 0


def _changed_since(top: str, since_ns: int, limit: int = 200_000) -> list[str]:
    """What under `top` (a directory, or a file) changed since `since_ns`, never following a link:
    files and links made or written, and `dir/` for a directory whose entries changed (one may
    have been removed or renamed away: its ctime moved, and nothing left in it says so)."""
    if not os.path.isdir(top) or os.path.islink(top):
        return [top] if _ctime(top) >= since_ns else []
    found, stack, seen = [], [top], 0
    while stack and seen < limit:
        directory = stack.pop()
        try:
            with os.scandir(directory) as listing:
                for entry in listing:
                    seen += 1
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif info.st_ctime_ns >= since_ns:
                        found.append(entry.path)
        except OSError:
            continue
        if _ctime(directory) >= since_ns:
            found.append(directory.rstrip("/") + "/ (its entries changed)")
    return sorted(found)
