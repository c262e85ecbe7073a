"""An agent CLI's state directories (its entry's `state:`), given to each run as private copies
(design §16).

A CLI's state directory holds what your own later sessions trust: memories and transcripts
(Claude Code's `projects/`, loaded into every session in that directory, read by `--resume`),
config it rewrites at every start (Codex's config.toml, Hermes' config.yaml), skills, a persona,
hooks, MCP servers. A sandboxed run gets a private copy instead (engine/contain/private_copy.py): the CLI
reads your config and login there and writes what it likes, and after the run the copy is thrown
away, what it wrote listed on the step's record. Your history, transcripts, memories, logs and
databases are not copied at all (SKIP): the agent starts without them and never reads them. A
login the CLI refreshed is the one thing written back, so that a rotated token does not log you
out — and only when nothing but its tokens and their times changed (LOGINS, `_same_login`). The
tokens themselves cannot be checked: an agent can write back tokens of another login with your
account's name beside them. docs/how-to/agent-clis.md says so.
"""

from __future__ import annotations

import json
import os

from ...encoding.records import record
from .private_copy import PrivateCopy
from .policy import expand

# Not copied into a run's state directory: what a CLI keeps of your own sessions.
SKIP = (
    "projects", "sessions", "archived_sessions", "session-env", "shell-snapshots", "todos", "plans", "paste-cache", "ide",
    "file-history", "history*", "log", "logs", "debug", "statsig", "memories", "memory", "transcripts", "backups", "cache",
    ".cache", "tmp", ".tmp", "*.sqlite", "*.sqlite-*", "*.db", "*.db-*", "*.log", "*.lock", "*.jsonl",
)
# Credentials a CLI refreshes by itself (OAuth tokens): written back when the run refreshed them.
LOGINS = (".credentials.json", "auth.json")
IDENTITY_WORDS = ("account", "email", "org", "user", "subject", "tenant", "api_key", "apikey")  # never changed by a refresh
REFRESHED_WORDS = ("token", "refresh", "expir", "issued")  # what a refresh changes: the tokens and their times


@record(frozen=True)
class StateCopy:
    place: str  # as the entry names it (`${CODEX_HOME:-~/.codex}/`)
    real: str  # the directory the agent sees it as
    copy: PrivateCopy
    logins: dict  # login file name -> (size, mtime_ns, ino) of the real one when copied


def private_states(places: tuple[str, ...], env: dict[str, str], scratch: str) -> list[StateCopy]:
    """A private copy of each state directory that can be named here (a variable it names may be
    unset: then the CLI has no such directory to protect)."""
    made = []
    for place in places:
        real = expand(place, env)
        if real is None:
            continue
        real = os.path.realpath(real)
        try:
            os.makedirs(real, mode=0o700, exist_ok=True)  # the mount point, as the CLI would make it
        except OSError:
            continue
        copy = PrivateCopy.make(real, scratch, skip=SKIP)
        made.append(StateCopy(place, real, copy, {name: _stamp(os.path.join(real, name)) for name in LOGINS}))
    return made


def finish_state(state: StateCopy, home: str) -> tuple[list[str], list[str]]:
    """After the run: (what it wrote there, as paths a person reads; notes), its refreshed login
    written back. The copy is removed."""
    try:
        changes = state.copy.changes()
        notes = [note for name in LOGINS if (note := _write_back(state, name, any(c.path == name for c in changes)))]
        return [shown_path(os.path.join(state.real, change.path), home) + _mark(change.kind) for change in changes], notes
    finally:
        state.copy.remove()


def shown_path(path: str, home: str) -> str:
    """A path as a person reads it: ~ for the home, control characters escaped (the names are the agent's)."""
    from ...workspace.tree import show_text

    return show_text("~" + path[len(home):] if home and (path == home or path.startswith(home.rstrip("/") + "/")) else path)


def _mark(kind: str) -> str:
    return " (removed)" if kind == "removed" else ""


def _stamp(path: str) -> tuple | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ino)


def _write_back(state: StateCopy, name: str, changed: bool) -> str | None:
    """A refreshed login back to its real file: only a JSON object of the same shape naming the
    same account, and only when the real one is still what was copied (a session of yours that
    refreshed it meanwhile has the newer one)."""
    if not changed:
        return None
    real = os.path.realpath(os.path.join(state.real, name))
    shown = f"{state.place.rstrip('/')}/{name}"
    data = state.copy.read_changed(name)
    old = _json_object(real)
    new = _json_object_bytes(data)
    if data is None or old is None or new is None:
        return f"{shown}: the run changed it; not written back (not a login uwf can check)"
    if not _same_login(old, new):
        return f"{shown}: the run put another login there; not written back"
    if _stamp(real) != state.logins.get(name):
        return f"{shown}: changed by you meanwhile; the run's refreshed copy is not written back"
    from ...store.files import atomic_write

    try:
        atomic_write(real, data, mode=0o600)
    except OSError as exc:
        return f"{shown}: the refreshed login could not be written back ({exc.strerror or exc})"
    return None


def _json_object(path: str) -> dict | None:
    try:
        with open(path, "rb") as handle:
            return _json_object_bytes(handle.read(1 << 20))
    except OSError:
        return None


def _json_object_bytes(data: bytes | None) -> dict | None:
    if data is None:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _same_login(old: dict, new: dict) -> bool:
    """A refreshed login, not another: the same keys, and nothing changed but its tokens and their
    times (a key named for a token, a refresh or an expiry that held one before); whatever names
    who is logged in, and every other value — an API key that was empty included — as it was."""
    if set(old) != set(new):
        return False
    for key, value in old.items():
        if isinstance(value, dict):
            if not isinstance(new[key], dict) or not _same_login(value, new[key]):
                return False
        elif new[key] != value:
            lowered = key.lower()
            refreshable = any(word in lowered for word in REFRESHED_WORDS) and not any(word in lowered for word in IDENTITY_WORDS)
            if not refreshable or not value or type(new[key]) is not type(value) or _who(value) != _who(new[key]):
                return False
    return True


def _who(value: object) -> dict | None:
    """Whom a JWT (an OAuth id token) names — its subject, email, account, organisation, user
    claims — unverified: it says who the login claims to be, not that it is."""
    import base64

    if not isinstance(value, str) or value.count(".") != 2:
        return None
    try:
        part = value.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (ValueError, TypeError):
        return None
    if not isinstance(claims, dict):
        return None
    return {key: item for key, item in claims.items() if key in ("sub", "email") or any(word in key.lower() for word in IDENTITY_WORDS)}
