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
