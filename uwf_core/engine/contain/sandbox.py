"""Agent containment (design §16): every agent run in a bubblewrap sandbox.

The sandbox is its own PID namespace, so every process the agent starts — whatever session or
group it moves to — ends when the agent's first process does, or when uwf dies; the file system
is read-only but for the workspace and the paths the agent's entry names; /tmp is private; the
storage root is out of sight of text agents, and its `.env` out of sight of every agent.

Where bubblewrap is missing or cannot start (user namespaces off, not Linux), `containment()`
says why once per process and agents run as before, in a process group, with uwf as their
child subreaper (engine/contain/orphans.py) so that what they leave behind still comes back to uwf.
"""

from __future__ import annotations

import os
import sys

from ...encoding.records import record

BWRAP_ENV = "UWF_BWRAP"  # the bubblewrap binary (default: bwrap on PATH); set empty to run without
INSIDE_ENV = "UWF_SANDBOXED"  # set inside a sandbox: a uwf there (uwf-subflow's) knows it cannot nest
PROMPT_PATH = "/tmp/uwf-prompt.md"  # where a sandboxed text agent finds {prompt_file}: its private /tmp
BUBBLEWRAP = "bubblewrap"
PROCESS_GROUP = "process-group"


@record(frozen=True)
class Policy:
    """What one agent run may see and touch. With `sandbox` off (an entry's `sandbox: false`),
    only the fallback containment applies: a process group under uwf as subreaper."""

    cwd: str
    writable: tuple[str, ...]  # the workspace first, then the entry's `writable`
    readable: tuple[str, ...] = ()  # read-only, even inside a writable path (a CLI's config in its state directory)
    hidden_dirs: tuple[str, ...] = ()  # shown as empty directories (the storage root, to text agents)
    hidden_files: tuple[str, ...] = ()  # shown as empty read-only files (.env files, credentials; the entry's `hide`)
    private: tuple[tuple[str, str], ...] = ()  # (copy, place): a private copy mounted writable where the real one is
    views: tuple[tuple[str, str], ...] = ()  # (source, place): read-only inside a private copy (a real entry of it)
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
    import subprocess

    from .which import which

    nested = bool(os.environ.get(INSIDE_ENV))
    if not sys.platform.startswith("linux"):
        return Containment(PROCESS_GROUP, reason="bubblewrap runs on Linux only", nested=nested)
    configured = os.environ.get(BWRAP_ENV)
    if configured is not None and not configured.strip():
        return Containment(PROCESS_GROUP, reason=f"{BWRAP_ENV} is empty", nested=nested)
    bwrap = which(configured or "bwrap")
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
    # /proc/sys read-only whatever bubblewrap decides: it skips that when its own W_OK check fails,
    # and a uid 0 agent without capabilities can still write kernel.core_pattern (which the next
    # crash anywhere on the host runs, as root).
    return flags + ["--ro-bind", "/", "/", "--tmpfs", "/tmp", "--dev", "/dev", "--proc", "/proc",
                    "--ro-bind", "/proc/sys", "/proc/sys", "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger"]


# Host sockets: a read-only mount does not stop connect(), and /run holds the user's D-Bus, the
# Docker socket, an ssh or gpg agent. Name resolution may live there too (systemd-resolved).
RUN_DIRS = ("/run", "/var/run")
RUN_KEPT = ("/run/systemd/resolve",)


def bwrap_argv(
    bwrap: str, policy: Policy, argv: list[str], prompt_fd: int | None = None, empty_fds: tuple[int, ...] = ()
) -> list[str]:
    """The command line that runs `argv` inside the sandbox `policy` describes. `empty_fds`, one
    per hidden file, are in-memory files that bubblewrap shows read-only in their place.

    The file system is read-only with a private /tmp, /dev, /proc and /run; then the policy's
    mounts, shallowest first, so a deeper one (the workspace inside a hidden root, a `.env` inside
    the workspace, a private copy of .git in the workspace, a real entry shown read-only in a
    private copy) lands on top of the one that holds it. A mount's source is always the host's. A policy never names /, /tmp, /dev or /proc themselves (policy.py refuses)."""
    mounts: list[tuple[str, list[str]]] = []
    writable = set()
    for path in policy.writable:
        writable.add(path)
        mounts.append((path, ["--bind-try", path, path]))
    for path in RUN_DIRS:
        if os.path.isdir(path) and not os.path.islink(path):
            mounts.append((path, ["--tmpfs", path]))
    for path in RUN_KEPT:
        mounts.append((path, ["--ro-bind-try", path, path]))
    for copy, place in policy.private:  # a state directory's or .git's own copy, over the real one
        writable.add(place)
        mounts.append((place, ["--bind", copy, place]))
    for source, place in policy.views:
        mounts.append((place, ["--ro-bind", source, place]))
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
        command += ["--perms", "0600", "--file", str(prompt_fd), PROMPT_PATH]
    command += ["--setenv", INSIDE_ENV, "1", "--setenv", "TMPDIR", "/tmp", "--chdir", policy.cwd, "--", *argv]
    return command


def empty_document(path: str) -> bytes:
    """What a hidden file shows instead: an empty mapping for a YAML or JSON config (a CLI refuses
    an empty one: aider), nothing for anything else (a .env)."""
    return b"{}\n" if path.endswith((".yml", ".yaml", ".json")) else b""


def _depth(path: str) -> int:
    return len([part for part in path.split("/") if part])


def setup_failure(exit_code: int | None, stderr: str) -> str | None:
    """bubblewrap's own error, when the sandbox could not be set up (the agent never ran)."""
    first = next((line.strip() for line in stderr.splitlines() if line.strip()), "")
    return first.removeprefix("bwrap: ") if exit_code == 1 and first.startswith("bwrap: ") else None
