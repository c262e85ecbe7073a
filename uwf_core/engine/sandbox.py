"""Agent containment (design §16): every agent run in a bubblewrap sandbox.

The sandbox is its own PID namespace, so every process the agent starts — whatever session or
group it moves to — ends when the agent's first process does, or when uwf dies; the file system
is read-only but for the workspace and the paths the agent's entry names; /tmp is private; the
storage root is out of sight of text agents, and its `.env` out of sight of every agent.

Where bubblewrap is missing or cannot start (user namespaces off, not Linux), `containment()`
says why once per process and agents run as before, in a process group, with uwf as their
child subreaper (engine/orphans.py) so that what they leave behind still comes back to uwf.
"""

from __future__ import annotations

import os
import sys

from ..encoding.records import record

BWRAP_ENV = "UWF_BWRAP"  # the bubblewrap binary (default: bwrap on PATH); set empty to run without
INSIDE_ENV = "UWF_SANDBOXED"  # set inside a sandbox: a uwf there (uwf-subflow's) knows it cannot nest
PROMPT_PATH = "/tmp/uwf-prompt.md"  # where a sandboxed text agent finds {prompt_file}: its private /tmp
BUBBLEWRAP = "bubblewrap"
PROCESS_GROUP = "process-group"
PRIVATE_TMP_NAMES = frozenset({"TMPDIR", "TMP", "TEMP", "PWD", "OLDPWD"})  # never a reason to show a path of /tmp


@record(frozen=True)
class Policy:
    """What one agent run may see and touch. With `sandbox` off (an entry's `sandbox: false`),
    only the fallback containment applies: a process group under uwf as subreaper."""

    cwd: str
    writable: tuple[str, ...]  # the workspace first, then the entry's `writable`
    readable: tuple[str, ...] = ()  # paths under /tmp the agent needs to read (its program, its files)
    hidden_dirs: tuple[str, ...] = ()  # shown as empty directories (the storage root, to text agents)
    hidden_files: tuple[str, ...] = ()  # shown as empty files (.env files; the entry's `hide`)
    network: bool = True
    sandbox: bool = True


@record(frozen=True)
class Containment:
    kind: str  # BUBBLEWRAP or PROCESS_GROUP
    bwrap: str | None = None
    reason: str | None = None  # why not bubblewrap (said once per process)
    nested: bool = False  # inside a uwf sandbox already: its namespace still holds every process

    def describe(self) -> str:
        if self.kind == BUBBLEWRAP:
            return "bubblewrap"
        return f"process-group ({self.reason})"


_PROBED: list[Containment] = []


def containment() -> Containment:
    """Whether this process can start a sandbox: bubblewrap found and tried once (~3 ms)."""
    if not _PROBED:
        _PROBED.append(_probe())
    return _PROBED[0]


def _probe() -> Containment:
    import shutil
    import subprocess

    nested = bool(os.environ.get(INSIDE_ENV))
    if not sys.platform.startswith("linux"):
        return Containment(PROCESS_GROUP, reason="bubblewrap runs on Linux only", nested=nested)
    configured = os.environ.get(BWRAP_ENV)
    if configured is not None and not configured.strip():
        return Containment(PROCESS_GROUP, reason=f"{BWRAP_ENV} is empty", nested=nested)
    bwrap = shutil.which(configured or "bwrap")
    if bwrap is None:
        return Containment(PROCESS_GROUP, reason=f"bubblewrap ({configured or 'bwrap'}) is not installed", nested=nested)
    try:
        probe = subprocess.run(
            [bwrap, *_base_flags(), "--", "true"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Containment(PROCESS_GROUP, reason=f"bubblewrap could not run: {exc}", nested=nested)
    if probe.returncode != 0:
        if nested:
            return Containment(PROCESS_GROUP, reason="inside an agent's sandbox, which cannot nest here", nested=True)
        said = next((line.strip() for line in probe.stderr.splitlines() if line.strip()), f"exit {probe.returncode}")
        return Containment(PROCESS_GROUP, reason=f"bubblewrap cannot start a sandbox here: {said}", nested=nested)
    return Containment(BUBBLEWRAP, bwrap=bwrap, nested=nested)


def _base_flags() -> list[str]:
    flags = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if os.geteuid() == 0:
        flags += ["--cap-drop", "ALL"]  # root keeps every capability in a sandbox otherwise (and could remount /)
    return flags + ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]


def bwrap_argv(
    bwrap: str, policy: Policy, argv: list[str], prompt_fd: int | None = None, empty_fds: tuple[int, ...] = ()
) -> list[str]:
    """The command line that runs `argv` inside the sandbox `policy` describes. `empty_fds`, one
    per hidden file, are empty in-memory files that bubblewrap shows read-only in their place.

    Mounts go shallowest first, so a deeper one (the workspace inside a hidden root, a `.env`
    inside the workspace) lands on top of the one that holds it."""
    mounts: list[tuple[str, list[str]]] = []
    writable = set()
    for path in policy.writable:
        writable.add(path)
        mounts.append((path, ["--bind-try", path, path]))
    for path in policy.readable:
        if path not in writable:
            mounts.append((path, ["--ro-bind-try", path, path]))
    for path in policy.hidden_dirs:
        mounts.append((path, ["--tmpfs", path]))
    for path, fd in zip(policy.hidden_files, empty_fds, strict=True):
        mounts.append((path, ["--ro-bind-data", str(fd), path]))
    mounts.sort(key=lambda item: _depth(item[0]))  # stable: for one path, a hiding mount stays last
    command = [bwrap, *_base_flags()]
    if not policy.network:
        command.append("--unshare-net")
    for _, args in mounts:
        command += args
    if prompt_fd is not None:
        command += ["--file", str(prompt_fd), PROMPT_PATH]
    command += ["--setenv", INSIDE_ENV, "1", "--setenv", "TMPDIR", "/tmp", "--chdir", policy.cwd, "--", *argv]
    return command


def empty_document(path: str) -> bytes:
    """What a hidden file shows instead: an empty mapping for a YAML or JSON config (a CLI refuses
    an empty one: aider), nothing for anything else (a .env)."""
    return b"{}\n" if path.endswith((".yml", ".yaml", ".json")) else b""


def _depth(path: str) -> int:
    return len([part for part in path.split("/") if part])


def expand(path: str, env: dict[str, str]) -> str | None:
    """A configured path with ~, $VAR and ${VAR:-default} expanded against the agent's environment
    (a preset's `${CODEX_HOME:-~/.codex}/`); None when a variable it names is unset or the result
    is not absolute."""
    import re

    home = env.get("HOME") or os.path.expanduser("~")
    missing = False

    def variable(match) -> str:
        nonlocal missing
        name = match[1] or match[3]
        value = env.get(name)
        if value:
            return value
        if match[2] is not None:
            default = match[2]
            return home + default[1:] if default.startswith("~") else default
        missing = True
        return ""

    text = re.sub(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)", variable, path)
    if missing:
        return None
    if text.startswith("~"):
        text = home + text[1:]
    return os.path.normpath(text) if os.path.isabs(text) else None


def under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def agent_policy(
    *,
    cwd: str,
    workspace: str,
    sees_store: bool,
    store_dirs: tuple[str, ...],
    socket_dirs: tuple[str, ...],
    env_files: tuple[str, ...],
    argv: tuple[str, ...],
    env: dict[str, str],
    writable: tuple[str, ...] = (),
    readable: tuple[str, ...] = (),
    hide: tuple[str, ...] = (),
    network: bool = True,
    sandbox: bool = True,
) -> Policy:
    """The sandbox of one agent run: its workspace writable; the store writable for a step agent
    (which writes its own nodes) and hidden from a text agent; every .env file hidden; what its
    entry adds; and, read-only, what it needs that lies in the private /tmp — its program, the
    files its command line and environment name, this Python — since /tmp is emptied for it."""
    home_root = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".uwf")
    hidden_dirs: list[str] = []
    extra_writable = []
    for item in writable:
        path = expand(item, env)
        if path is None:
            continue
        if item.endswith("/") and not os.path.exists(path):
            try:
                os.makedirs(path, exist_ok=True)  # a CLI's state directory, as the CLI would make it
            except OSError:
                continue
        extra_writable.append(path)
    if sees_store:
        extra_writable += store_dirs
    else:
        hidden_dirs += [*store_dirs, *([home_root] if os.path.isdir(home_root) else [])]
    wanted = [*(expand(item, env) for item in readable), *(socket_dirs if sees_store else ())]
    wanted += _named_paths(argv, env, cwd)
    shown = [path for path in dict.fromkeys(wanted) if path and not any(under(path, h) for h in hidden_dirs)]
    hidden_files = [path for path in env_files if os.path.isfile(path)]
    hidden_files += [path for path in (os.path.join(workspace, item) for item in hide) if os.path.isfile(path)]
    hidden_files = [path for path in hidden_files if not any(under(path, h) for h in hidden_dirs)]
    return Policy(
        cwd=cwd,
        writable=(workspace, *dict.fromkeys(extra_writable)),
        readable=tuple(shown),
        hidden_dirs=tuple(dict.fromkeys(hidden_dirs)),
        hidden_files=tuple(dict.fromkeys(hidden_files)),
        network=network,
        sandbox=sandbox,
    )


def _named_paths(argv: tuple[str, ...], env: dict[str, str], cwd: str) -> list[str]:
    """Existing paths under /tmp that the agent's command (the directory it is in), its arguments
    or its environment name, and this Python's own (uwf's bundled agents run on it): a script, a
    checkout or a venv in /tmp still runs, with the files beside it."""
    import shutil

    candidates = [sys.prefix, os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    program = shutil.which(argv[0], path=env.get("PATH")) if argv and os.sep not in argv[0] else None
    program = program or (os.path.join(cwd, argv[0]) if argv and os.sep in argv[0] else None)
    if program:
        candidates += [os.path.dirname(program), os.path.dirname(os.path.realpath(program))]
    values = [*argv, *(value for name, value in env.items() if name not in PRIVATE_TMP_NAMES)]
    for value in values:
        for piece in value.split(os.pathsep) if value.startswith("/") else (value.split("=", 1)[-1],):
            if piece.startswith("/"):
                candidates.append(piece)
    found = []
    for path in candidates:
        path = os.path.normpath(path)
        if under(path, "/tmp") and path != "/tmp" and not under(cwd, path) and os.path.exists(path):
            found.append(path)
    found.sort(key=len)
    kept: list[str] = []
    for path in found:  # one mount for a directory and what is in it
        if not any(under(path, parent) for parent in kept):
            kept.append(path)
    return kept
