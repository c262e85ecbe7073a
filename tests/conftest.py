"""Shared fixtures: every test gets its own storage root, never ~/.uwf."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"

# Helpers the tests share (fake OpenAI server, the fixed demo root, TUI capture) live in tests/support/.
sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))


def _uwf_command() -> list[str]:
    script = shutil.which("uwf", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "uwf_core.cli.main"]


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (pyproject's addopts): most tests wait on processes, sockets, locks and timers more
    than they compute, so twice the cores this process may use, at least 4, at most 16. Each worker
    has its own PostgreSQL cluster, ports, tmux sessions and temp directories; `-n 0` runs the
    suite in this one process."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(4, min(16, 2 * cores))


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Point HOME and UWF_STORAGE_ROOT away from the real ~/.uwf for every test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("UWF_STORAGE_ROOT", str(home / "default-root-must-not-be-used"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))  # what a test learns of a collector stays its own
    for name in list(os.environ):  # a collector the machine exports to is not the tests' (tests/telemetry start their own)
        if name.startswith("OTEL_") or name in ("TRACEPARENT", "UWF_TRACE_FD", "UWF_TRACE_CONTENT"):
            monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def _cli_words(monkeypatch):
    """Messages in the command line's words, as `uwf` and uwf-tui say them (and most tests read
    them in-process); `api_words` is a Python program's view (tests/test_api_words.py)."""
    import uwf_core.errors

    monkeypatch.setitem(uwf_core.errors._VOICE, "cli", True)


@pytest.fixture
def api_words(monkeypatch):
    import uwf_core.errors

    monkeypatch.setitem(uwf_core.errors._VOICE, "cli", False)


@pytest.fixture
def root_dir(tmp_path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    return path


@pytest.fixture
def root(root_dir):
    """The opened root (a Repo over the file backend at root_dir)."""
    from uwf_core.repo import Repo

    return Repo.open(str(root_dir))


@pytest.fixture
def store(root):
    return root.nodes


@pytest.fixture
def fixed(tmp_path, monkeypatch):
    """The fixed demo root the workbench's Pilot tests share (support/fixed_root.py), opened, with
    the ids of what it holds; `uwf` in a subprocess finds it too."""
    from fixed_root import build_fixed_root
    from uwf_core.repo import Repo

    path = tmp_path / "root"
    ids = build_fixed_root(str(path))
    monkeypatch.setenv("UWF_STORAGE_ROOT", str(path))
    return Repo.open(str(path)), ids


# -- a real PostgreSQL, for the PostgreSQL root ----------------------------------------------------


@pytest.fixture(scope="session")
def pg_cluster():
    """A private cluster for the whole session; the tests that need it skip when PostgreSQL or
    libpq is missing (`.ci/run` installs both)."""
    from uwf_core.store.pg.libpq import LibpqMissing, load

    try:
        load()
    except LibpqMissing:
        pytest.skip("libpq is not installed (apt-get install libpq5, or pip install -e '.[postgres]')")
    from pg_cluster import Cluster, binaries

    if binaries() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    cluster = Cluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_url(pg_cluster, request) -> str:
    """A new, empty database of its own for one test."""
    import re
    import uuid

    name = re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:40] + "_" + uuid.uuid4().hex[:8]
    return pg_cluster.create_database(name)


@pytest.fixture(scope="session")
def uwf_wheel(tmp_path_factory) -> Path:
    """uwf built as a wheel, offline, from a copy of the checkout (a build writes beside its sources)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("uwf_core", "uwf_tui", "examples"):
        shutil.copytree(REPO / part, source / part, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "scripts/build_backend.py"):  # the build backend pyproject names
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, source / name)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp / "dist"), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr
    return next((tmp / "dist").glob("uwf-*.whl"))


class CliResult:
    def __init__(self, completed: subprocess.CompletedProcess) -> None:
        self.code = completed.returncode
        self.out = completed.stdout
        self.err = completed.stderr

    def json(self):
        return json.loads(self.out)

    def __repr__(self) -> str:
        return f"CliResult(code={self.code}, out={self.out!r}, err={self.err!r})"


@pytest.fixture
def uwf(root_dir):
    """Run the real `uwf` in a subprocess against the test's root."""

    def run(*args: str, input: str | None = None, env: dict | None = None, cwd: str | None = None, timeout: float = 60) -> CliResult:
        full_env = dict(os.environ)
        full_env["UWF_STORAGE_ROOT"] = str(root_dir)
        full_env.update(env or {})
        completed = subprocess.run(
            [*_uwf_command(), *args],
            input=input,
            capture_output=True,
            text=True,
            env=full_env,
            cwd=cwd or str(REPO),
            timeout=timeout,
        )
        return CliResult(completed)

    return run


def snapshot_tree(path: Path) -> dict[str, bytes]:
    """Every file under `path` with its bytes, to assert that a failure changed nothing; the node
    file as the nodes it holds (its pages, WAL and shared memory change with any reader)."""
    from node_file import DB_NAME, logical_dump

    result = {}
    for file in sorted(path.rglob("*")):
        relative = file.relative_to(path)
        if file.is_file() and "locks" not in relative.parts and not file.name.startswith(DB_NAME):
            result[str(relative)] = file.read_bytes()
    result.update(logical_dump(path))
    return result


def processes_with(marker: str) -> list[str]:
    """Live processes whose command line contains `marker` ("pid: cmdline"), from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"{entry}: {cmdline}")
    return found
