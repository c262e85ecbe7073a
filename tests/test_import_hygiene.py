"""uwf_core never imports the TUI, and `uwf` start-up imports only what the command needs."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import uwf_core

HEAVY = ["textual", "jsonschema", "jsonata", "httpx", "ulid", "yaml"]


def _modules_after(code: str, env: dict | None = None) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    return set(json.loads(completed.stdout.strip().splitlines()[-1]))


def _core_modules() -> list[str]:
    return sorted(info.name for info in pkgutil.walk_packages(uwf_core.__path__, "uwf_core."))


@pytest.mark.parametrize("module", _core_modules())
def test_core_module_never_imports_textual(module):
    loaded = _modules_after(f"import {module}")
    assert "textual" not in loaded
    assert not any(name.startswith("uwf_tui") for name in loaded)


def _cli_modules(args: list[str], root: str) -> set[str]:
    code = (
        "import os, sys, io, contextlib\n"
        f"os.environ['UWF_STORAGE_ROOT'] = {root!r}\n"
        "from uwf_core.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main({args!r})\n"
    )
    return _modules_after(code)


def test_version_imports_nothing_heavy(tmp_path):
    loaded = _cli_modules(["--version"], str(tmp_path))
    assert not [name for name in HEAVY if name in loaded]
    assert "argparse" not in loaded


def test_workflow_list_imports_nothing_heavy(tmp_path, uwf, root_dir):
    assert uwf("workflow", "put", "examples/solve-issue.yaml").code == 0
    loaded = _cli_modules(["workflow", "list"], str(root_dir))
    assert not [name for name in HEAVY if name in loaded]
    assert "dataclasses" not in loaded


def test_a_step_with_tracing_off_imports_no_opentelemetry(tmp_path, uwf, root_dir):
    """With no OTEL_* variable and no `otel:` in config.yaml, neither the SDK nor uwf's exporter loads."""
    from traced_root import setup_traced_root, start_thread

    setup_traced_root(uwf, tmp_path, "http://127.0.0.1:9/v1")
    thread = start_thread(uwf)
    assert uwf("agent", "add", "echo", "--protocol", "text", "--", "sh", "-c", "echo '{\"note\": \"done\"}'").code == 0
    loaded = _cli_modules(["thread", "step", thread, "--agent", "echo"], str(root_dir))
    assert "uwf_core.engine.step" in loaded  # it did step
    assert not [name for name in loaded if name.startswith("opentelemetry")]
    assert "uwf_core.telemetry.export" not in loaded and "uwf_core.telemetry.pipe" not in loaded
    assert uwf("thread", "show", thread).json()["steps"] == 1


def test_a_step_imports_neither_socket_nor_urllib(tmp_path, uwf, root_dir):
    """A step's host name comes from uname, a key variable is percent-decoded only when it has a
    percent escape: socket and urllib.parse (~9 ms of every step's start-up) stay out."""
    assert uwf("workflow", "put", "examples/solve-issue.yaml").code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "a task").json()["thread"]
    assert uwf("agent", "add", "echo", "--protocol", "text", "--", "sh", "-c", "echo '{\"plan\": \"p\", \"steps\": []}'").code == 0
    loaded = _cli_modules(["thread", "step", thread, "--agent", "echo"], str(root_dir))
    assert "uwf_core.engine.step" in loaded and "uwf_core.store.fs.locks" in loaded
    assert "socket" not in loaded and "urllib.parse" not in loaded
    assert uwf("thread", "show", thread).json()["steps"] == 1


def test_a_postgresql_root_loads_libpq_and_no_driver(pg_url):
    """A command on a PostgreSQL root calls libpq through ctypes: psycopg (~85 ms of imports,
    asyncio among them) is not imported, nor anything heavy."""
    loaded = _cli_modules(["workflow", "list"], pg_url)
    assert "uwf_core.store.pg.libpq" in loaded  # it did open the database
    assert not [name for name in loaded if name.startswith(("psycopg", "asyncio"))]
    assert not [name for name in HEAVY if name in loaded]
