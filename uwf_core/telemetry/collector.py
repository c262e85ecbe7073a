"""What this host knows of a collector: whether it takes connections, and how its last export
went. A short file per collector URL in the user's cache (`$XDG_CACHE_HOME/uwf/otel`), so a
`uwf thread step` in a new process need not ask again for half a minute, and a shipper that ran
after an earlier step can tell a later one that its export failed. What a step says of it is said
at most once per half minute on this host (`say_due`), not by every step."""

from __future__ import annotations

import json
import os
import time

FRESH_SECONDS = 30.0  # a status this recent is believed; an older one is found out again
PROBE_SECONDS = 1.0  # a collector that does not accept a connection in this long is down
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
OK, DOWN, FAILED = "ok", "down", "failed"  # reachable and took the last batch; no connection; it answered an error


def cache_dir() -> str:
    """Where this host keeps what it knows of collectors, and the spans waiting for them (hidden
    from every agent: engine/contain/policy.py)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "uwf", "otel")


def collector_path(url: str, suffix: str) -> str:
    """This host's file (or directory) of `suffix` for a collector, named by its URL's hash."""
    from ..encoding.ids import xxh64_hash

    return os.path.join(cache_dir(), f"{xxh64_hash(url.encode('utf-8'))}{suffix}")


def status_path(url: str) -> str:
    return collector_path(url, ".json")


def read_status(url: str) -> tuple[str, str] | None:
    """(state, reason) when a fresh status is on file, else None."""
    try:
        with open(status_path(url), "rb") as file:
            data = json.loads(file.read())
        if time.time() - float(data["at"]) < FRESH_SECONDS and data["state"] in (OK, DOWN, FAILED):
            return data["state"], str(data.get("reason") or "")
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def write_status(url: str, state: str, reason: str = "") -> None:
    """Best effort: a status that cannot be written is found out again next time."""
    from ..errors import UwfError
    from ..store.files import atomic_write

    data = json.dumps({"state": state, "reason": reason, "at": time.time(), "url": url}).encode("utf-8")
    try:
        atomic_write(status_path(url), data, mode=0o600, sync=False)
    except UwfError:
        pass


def say_due(url: str, topic: str) -> bool:
    """Whether this host has not said `topic` of this collector in the last half minute (and it
    counts as said now). Best effort: a marker that cannot be kept lets it be said."""
    path = collector_path(url, f".said-{topic}")
    now = time.time()
    try:
        if now - os.stat(path).st_mtime < FRESH_SECONDS:
            return False
        os.utime(path, (now, now))
    except FileNotFoundError:
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            return False  # a step beside this one is saying it
        except OSError:
            pass
    except OSError:
        pass
    return True


def answers(url: str, timeout: float) -> bool:
    """Whether the collector answers an HTTP request within `timeout` (any answer: it is alive, and
    an export in flight will end). False only when it takes the connection and says nothing, or
    takes none; True behind a proxy, which uwf does not look past."""
    import http.client
    import socket
    from urllib.parse import urlsplit

    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return True
    parts = urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    try:
        connection = kind(parts.hostname or "", parts.port, timeout=timeout)
        try:
            connection.request("GET", parts.path or "/")
            connection.getresponse().read(0)
        finally:
            connection.close()
    except (TimeoutError, socket.timeout, ConnectionRefusedError):
        return False
    except (OSError, ValueError, http.client.HTTPException):
        return True  # it said something (a TLS failure, a closed connection): not a silent one
    return True


def unreachable(url: str, timeout: float = PROBE_SECONDS, *, no_answer_is_down: bool = True) -> str | None:
    """Why nothing at `url` takes a connection, or None (also when a proxy is in the way, and,
    unless `no_answer_is_down`, when nothing answered within `timeout`: not known yet)."""
    import socket
    from urllib.parse import urlsplit

    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return None
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            return None
    except ValueError as exc:
        return f"not a URL ({exc})"
    except TimeoutError:
        return f"no answer within {timeout:g}s" if no_answer_is_down else None
    except OSError as exc:
        return (exc.strerror or str(exc)).lower()
