"""What one agent run may see and touch (design §16), as a Policy for engine/contain/sandbox.py.

Its workspace is writable; the store is hidden from a text agent and read-only to a step agent
but for where nodes are written (uwf-subflow, which steps threads itself, writes it all); every
.env of uwf's and the well-known credential stores of other tools are hidden; the entry adds
what its CLI must write (or read) and hides what a workspace could use to run commands; and
what the agent needs from the private /tmp — its program, the files its command line and
environment name, this Python — stays readable. Every path is resolved first: bubblewrap cannot
mount through a symlink, and a second path to a hidden place must not lead around it.
"""

from __future__ import annotations

import os
import stat
import sys

from ...errors import UwfError
from ...workspace.places import check_workspace, inside_any, real_home, under
from .sandbox import Policy

PRIVATE_TMP_NAMES = frozenset({"TMPDIR", "TMP", "TEMP", "PWD", "OLDPWD"})  # never a reason to show a path of /tmp
# What an agent must not be handed through its environment: a way into the user's session.
SESSION_VARIABLES = ("SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")
# Other tools' keys, hidden from every agent but one whose entry names the place (`writable` or
# `readable`): the claude preset keeps Claude Code's login, no other agent sees it.
CREDENTIALS = (
    "~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube", "~/.docker/config.json",
    "~/.netrc", "~/.git-credentials", "~/.config/gh/hosts.yml", "~/.pypirc", "~/.npmrc", "~/.pgpass", "~/.Xauthority",
    "~/.claude/.credentials.json", "~/.codex/auth.json", "~/.aider/oauth-keys.env", "~/.hermes/.env", "~/.hermes/auth.json",
    "~/.config/io.datasette.llm/keys.json", "/etc/shadow", "/etc/gshadow",
)
# Variables that point at credentials: never a reason to show a path of /tmp.
CREDENTIAL_VARIABLES = frozenset({
    "KUBECONFIG", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "GOOGLE_APPLICATION_CREDENTIALS", "DOCKER_CONFIG",
    "NETRC", "GIT_ASKPASS", "SSH_ASKPASS", "PGPASSFILE", "XAUTHORITY",
})


class SandboxError(UwfError):
    """An agent's sandbox cannot be what it must be (a workspace of / or the whole home)."""


def agent_policy(
    *,
    cwd: str,
    workspace: str,
    sees_store: bool,
    store: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]],
    env_files: tuple[str, ...],
    argv: tuple[str, ...],
    env: dict[str, str],
    runs_steps: bool = False,
    stage: str | None = None,
    private_dirs: tuple[str, ...] = (),
    writable: tuple[str, ...] = (),
    readable: tuple[str, ...] = (),
    hide: tuple[str, ...] = (),
    state: tuple[str, ...] = (),
    scratch: str | None = None,
    network: bool = True,
    sandbox: bool = True,
    forks_dir: str | None = None,
) -> Policy:
    """The Policy of one agent run. `store` is the backend's (store_dirs, node_dirs, socket_dirs);
    a step agent given a `stage` writes its nodes there and reads them through uwf, never seeing
    `private_dirs` (the node file and its shared memory, the lock files), else it writes `node_dirs`. `hide` names workspace files,
    looked for in the workspace and in `cwd` (a role's location). `state` names the entry's state
    directories (their credentials are the agent's to see; engine/contain/state_dirs.py mounts a private
    copy of each per run). `scratch`, uwf's scratch space for this root, is hidden: other runs'
    private copies and staging are there."""
    homes = tuple(dict.fromkeys(map(os.path.realpath, (env.get("HOME") or os.path.expanduser("~"), _real_home()))))
    workspace, cwd = os.path.realpath(workspace), os.path.realpath(cwd)
    store_dirs, node_dirs, socket_dirs = (tuple(os.path.realpath(path) for path in paths) for paths in store)
    for each in homes:
        check_workspace(workspace, each, store_dirs, forks_dir)
    hidden_dirs = [] if sees_store else [*store_dirs, *_existing_dirs(*(os.path.join(each, ".uwf") for each in homes))]
    if scratch and os.path.isdir(scratch):  # other runs' private copies (a login among them), whatever root shows it
        hidden_dirs.append(os.path.realpath(scratch))
    hidden_dirs += _existing_dirs(*_traces_waiting(homes))
    store_writes: tuple[str, ...] = ()
    if sees_store:
        store_writes = store_dirs if runs_steps else (stage,) if stage else node_dirs
        if stage and not runs_steps:
            hidden_dirs.extend(path for path in map(os.path.realpath, private_dirs) if os.path.isdir(path))
    extra_writable = [*_writable(writable, env), *map(os.path.realpath, store_writes)]
    hidden_files = [*env_files, *(os.path.join(base, item) for item in hide for base in dict.fromkeys((workspace, cwd)))]
    chosen_readable = [expand(item, env) for item in readable]
    named = [path for path in [*chosen_readable, *(expand(item, env) for item in (*writable, *state))] if path]
    for path, is_dir in _credentials(homes):  # in the home the caller's $HOME names, and the real one
        if not any(under(path, place) for place in named):
            (hidden_dirs if is_dir else hidden_files).append(path)
    hidden_files = [os.path.realpath(path) for path in hidden_files if os.path.isfile(path)]
    hidden_dirs = [os.path.realpath(path) for path in hidden_dirs]
    hidden_files = [path for path in hidden_files if not inside_any(path, hidden_dirs)]
    writable_all = [workspace, *extra_writable]
    auto = [*(socket_dirs if sees_store else ()), *_named_paths(argv, env, cwd)]
    auto = [path for path in map(os.path.realpath, auto) if not inside_any(path, writable_all)]  # never read-only in its own workspace
    # Read-only even inside the workspace: the store and uwf itself (its venv, its packages). git's own files are
    # engine/contain/run_guard.py's: a private copy of .git, the other repositories read-only.
    kept = [path for path in uwf_itself() if inside_any(path, writable_all) and os.path.exists(path)]
    shown = [*(store_dirs if sees_store else ()), *kept, *(os.path.realpath(path) for path in chosen_readable if path), *auto]
    shown = [path for path in shown if not inside_any(path, hidden_dirs)]  # one that holds a hidden one is fine: the hiding goes on top
    return Policy(
        cwd=cwd,
        writable=tuple(dict.fromkeys(writable_all)),
        readable=tuple(dict.fromkeys(shown)),
        hidden_dirs=tuple(dict.fromkeys(hidden_dirs)),
        hidden_files=tuple(dict.fromkeys(hidden_files)),
        network=network,
        sandbox=sandbox,
    )


def _traces_waiting(homes: tuple[str, ...]) -> list[str]:
    """This host's spools of spans (every thread's, content too) and what it knows of collectors:
    this process's (made if missing, so that a step beside this run cannot make it where the agent
    sees it), and those a session with another cache directory left in each home's."""
    from ...telemetry.collector import cache_dir

    where = cache_dir()
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
    except OSError:
        pass  # a home that cannot be written has no spool either
    return list(dict.fromkeys([where, *(os.path.join(home, ".cache", "uwf", "otel") for home in homes)]))


def uwf_itself() -> list[str]:
    """What the next `uwf` or `uwf-tui` runs from: this Python's environment and uwf's packages
    (both, for an editable install from a checkout)."""
    core = os.path.realpath(core_dir())
    return [os.path.realpath(sys.prefix), core, os.path.join(os.path.dirname(core), "uwf_tui")]


def core_dir() -> str:
    """uwf_core's own directory (this file is uwf_core/engine/contain/policy.py)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def agent_environment(env: dict[str, str]) -> dict[str, str]:
    """The agent's environment without the ways into the user's session (agent sockets, D-Bus)."""
    return {name: value for name, value in env.items() if name not in SESSION_VARIABLES}


def _writable(items: tuple[str, ...], env: dict[str, str]) -> list[str]:
    found = []
    for item in items:
        path = expand(item, env)
        if path is None:
            continue
        if item.endswith("/") and not os.path.exists(path):
            try:
                os.makedirs(path, exist_ok=True)  # a CLI's state directory, as the CLI would make it
            except OSError:
                continue
        path = os.path.realpath(path)
        if path in ("/", "/tmp", "/dev", "/proc"):
            raise SandboxError(f"writable: {item} would take the sandbox apart (it is {path}): name a directory of the agent's own")
        found.append(path)
    return found


_CACHE: dict = {}  # what does not change while uwf runs: the real home, which credentials exist


def _real_home() -> str:
    """The home directory of the user uwf runs as, whatever $HOME says (looked up once)."""
    if "home" not in _CACHE:
        _CACHE["home"] = real_home()
    return _CACHE["home"]


def _credentials(homes: tuple[str, ...]) -> list[tuple[str, bool]]:
    """The credential stores that exist under these homes (and the system's), as (path, is a directory)."""
    if homes not in _CACHE:
        found = {}
        for item in CREDENTIALS:
            for home in homes:
                path = expand(item, {"HOME": home})
                if path and os.path.lexists(path):
                    found[path] = os.path.isdir(path)
        _CACHE[homes] = list(found.items())
    return _CACHE[homes]


def _existing_dirs(*paths: str) -> list[str]:
    return [path for path in paths if os.path.isdir(path)]


def expand(path: str, env: dict[str, str]) -> str | None:
    """A configured path with ~, $VAR and ${VAR:-default} expanded against the agent's environment
    (a preset's `${CODEX_HOME:-~/.codex}/`); None when a variable it names is unset or the result
    is not absolute."""
    import re

    home = env.get("HOME") or os.path.expanduser("~")
    missing = False

    def tilde(text: str) -> str:
        return home + text[1:] if text == "~" or text.startswith("~/") else text

    def variable(match) -> str:
        nonlocal missing
        value = env.get(match[1] or match[3])
        if value:
            return value
        if match[2] is not None:
            return tilde(match[2])
        missing = True
        return ""

    text = tilde(re.sub(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)", variable, path))
    if missing:
        return None
    return os.path.normpath(text) if os.path.isabs(text) else None


def _named_paths(argv: tuple[str, ...], env: dict[str, str], cwd: str) -> list[str]:
    """Existing paths under /tmp that the agent's command (the whole install it runs from:
    install_tree), its arguments or its environment name, and this Python's own (uwf's bundled
    agents run on it): a script, a checkout, a venv or an npm prefix in /tmp still runs, with the
    files beside it. Sockets are never shown."""
    from .which import which

    candidates = [sys.prefix, core_dir()]
    program = which(argv[0], path=env.get("PATH")) if argv and os.sep not in argv[0] else None
    program = program or (os.path.join(cwd, argv[0]) if argv and os.sep in argv[0] else None)
    if program:
        for place in dict.fromkeys((os.path.dirname(program), os.path.dirname(os.path.realpath(program)))):
            tree = install_tree(place)
            candidates += [place if under(cwd, tree) else tree, *_venv_home(tree)]
    skipped = PRIVATE_TMP_NAMES | CREDENTIAL_VARIABLES | frozenset(SESSION_VARIABLES)
    values = [*argv, *(value for name, value in env.items() if name not in skipped)]
    for value in values:
        for piece in value.split(os.pathsep) if value.startswith("/") else (value.split("=", 1)[-1],):
            if piece.startswith("/"):
                candidates.append(piece)
    found = []
    for path in candidates:
        path = os.path.normpath(path)
        if under(path, "/tmp") and path != "/tmp" and not under(cwd, path) and _plain(path):
            found.append(path)
    found.sort(key=len)
    kept: list[str] = []
    for path in found:  # one mount for a directory and what is in it
        if not any(under(path, parent) for parent in kept):
            kept.append(path)
    return kept


def install_tree(directory: str) -> str:
    """The whole install a program in `directory` runs from: its virtualenv (the directory with
    `pyvenv.cfg`), its npm prefix (what holds the top `node_modules`, the one above `lib/` for a
    global install: the package's siblings, its platform binary among them), or the prefix a
    `bin/` directory belongs to; `directory` itself when it is none of these."""
    parts = directory.split(os.sep)
    if "node_modules" in parts:
        top = os.sep.join(parts[: parts.index("node_modules")])
        return os.path.dirname(top) if os.path.basename(top) == "lib" else top or directory
    place = directory
    while place not in ("/", "/tmp") and under(place, "/tmp"):
        if os.path.isfile(os.path.join(place, "pyvenv.cfg")):
            return place
        place = os.path.dirname(place)
    return os.path.dirname(directory) if os.path.basename(directory) == "bin" else directory


def _venv_home(tree: str) -> list[str]:
    """The install of the Python a virtualenv was made from (its `home` in pyvenv.cfg): the venv's
    own python is a link to it."""
    try:
        with open(os.path.join(tree, "pyvenv.cfg"), encoding="utf-8", errors="replace") as handle:
            lines = handle.read(65536).splitlines()
    except OSError:
        return []
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and os.path.isabs(value.strip()):
            return [install_tree(os.path.normpath(value.strip()))]
    return []


def _plain(path: str) -> bool:
    """A file or a directory that exists: not a socket, a pipe or a device."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISDIR(mode) or stat.S_ISREG(mode)
