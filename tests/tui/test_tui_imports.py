"""uwf_tui talks to the core through its public API only: `uwf_core.api`, nothing else of uwf_core."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TUI = Path(__file__).resolve().parents[2] / "uwf_tui"


def _uwf_core_imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == "uwf_core"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "uwf_core":
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("path", sorted(TUI.rglob("*.py")), ids=lambda p: str(p.relative_to(TUI)))
def test_the_tui_imports_only_the_public_api(path):
    private = [f"line {line}: {module}" for line, module in _uwf_core_imports(path) if module != "uwf_core.api"]
    assert not private, f"{path.name} reaches into core internals: {private}"


def test_the_check_sees_the_imports():
    """A guard against a check that passes because it finds nothing."""
    assert {module for _, module in _uwf_core_imports(TUI / "workers.py")} == {"uwf_core.api"}  # imported twice: top and in fsck()


def test_plain_uwf_tui_never_loads_the_web_server(tmp_path):
    """Serving is the rare case: `uwf-tui` without --serve imports neither textual-serve nor aiohttp."""
    import json
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from uwf_tui import app, launch\n"
        "app.UwfApp.run = lambda self: None\n"  # everything main() does but the terminal session
        f"assert launch.main(['--root', {str(tmp_path)!r}]) == 0\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(completed.stdout.strip().splitlines()[-1]))
    assert "textual" in loaded  # the probe did load the app
    assert not {"textual_serve", "aiohttp", "uwf_tui.serve"} & loaded
