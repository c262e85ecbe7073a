"""The house's shape, held: no two modules import each other in a loop, anywhere in uwf_core or
uwf_tui (imports under TYPE_CHECKING count here: a loop of annotations is still two rooms that
cannot be read apart), and no room grows past 500 lines unless docs/explanation/architecture.md says why."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("uwf_core", "uwf_tui")
MAX_LINES = 500


def _modules(package: str) -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in sorted((REPO / package).rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _imported(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """Every dotted name an import may load: `from a.b import c` may load a.b or a.b.c."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join([*package[: len(package) - (node.level - 1)], *([node.module] if node.module else [])])
    else:
        base = node.module or ""
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def import_graph(modules: dict[str, tuple[Path, bool]]) -> dict[str, set[str]]:
    """Module -> the modules (not packages: a package's face only hands names on) it imports."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _imported(name, is_package, node):
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and not modules[target][1]:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_no_modules_import_each_other_in_a_loop(package):
    graph = import_graph(_modules(package))
    assert sum(len(targets) for targets in graph.values()) > 50  # the check sees the imports
    assert circles(graph) == []


def test_the_loop_check_finds_a_loop():
    """A guard against a check that passes because it cannot fail."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def _explained() -> set[str]:
    """The rooms docs/explanation/architecture.md explains being long: its "Long rooms" section's `path`s."""
    text = (REPO / "docs" / "explanation" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Long rooms", 1)[1].split("\n## ", 1)[0] if "## Long rooms" in text else ""
    return set(re.findall(r"`((?:uwf_core|uwf_tui)/[\w/]+\.py)`", section))


def test_no_room_is_longer_than_500_lines_unless_the_architecture_says_why():
    explained = _explained()
    long = {
        str(path.relative_to(REPO)): len(path.read_text().splitlines())
        for package in PACKAGES
        for path in (REPO / package).rglob("*.py")
    }
    unexplained = {path: lines for path, lines in long.items() if lines > MAX_LINES and path not in explained}
    assert not unexplained, f"rooms past {MAX_LINES} lines: split them, or say why in docs/explanation/architecture.md's Long rooms: {unexplained}"
    stale = {path for path in explained if long.get(path, 0) <= MAX_LINES}
    assert not stale, f"docs/explanation/architecture.md explains rooms that are not long (any more): {stale}"
