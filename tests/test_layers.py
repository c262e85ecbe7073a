"""The layers docs/explanation/architecture.md draws are the layers the imports make.

Every import in uwf_core — at the top of a module or inside a function —
may reach its own layer or one below, never one above. Imports under
`if TYPE_CHECKING:` are annotations only and are not counted. Inside
engine/, its rooms are layers of their own (ENGINE_LAYERS), as each room's
`__init__` says.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[1] / "uwf_core"

# Bottom to top. A module's layer is that of its longest matching prefix.
LAYERS = [
    ("errors", "version", "encoding"),
    ("store",),
    ("config",),
    ("repo", "agent_functions", "llm", "workspace", "telemetry"),
    ("workflow",),
    ("thread",),
    ("engine",),
    ("agents",),
    ("cli", "mcp_server", "api", "agent_kit", "__init__"),
]

# engine/ inside, bottom to top: the step's terms; the rooms a step is built on; answers written
# and replayed; one agent call and the snapshots around it; the protocols and what runs beside a
# step's agent; the step transaction; what drives steps from outside one.
ENGINE_LAYERS = [
    ("attempt", "resolve", "prompt", "tracing"),
    ("contain", "extraction", "python"),
    ("record", "reuse"),
    ("call", "files"),
    ("protocols", "oversight", "fanout.map"),
    ("step",),
    ("control", "dry_run", "check", "fanout", "queue", "__init__"),  # fanout.map is the longer prefix: layer 4
]


def layer_of(module: str) -> int:
    """`module` is relative to uwf_core, e.g. "store.fs.threads"."""
    head = module.split(".")[0]
    for index, names in enumerate(LAYERS):
        if head in names:
            return index
    raise AssertionError(f"uwf_core.{module} is in no layer: add its package to LAYERS and docs/explanation/architecture.md")


def _modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(CORE.rglob("*.py")):
        parts = list(path.relative_to(CORE).with_suffix("").parts)
        found.append((".".join(parts), path))
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            skip.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) not in skip and isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def _targets(module: str, node: ast.AST) -> list[str]:
    """The uwf_core modules an import names, relative to uwf_core."""
    if isinstance(node, ast.Import):
        return [alias.name.removeprefix("uwf_core.") for alias in node.names if alias.name.startswith("uwf_core.")]
    if node.level == 0:
        if not (node.module or "").startswith("uwf_core"):
            return []
        base = node.module.removeprefix("uwf_core").lstrip(".")
    else:
        package = module.split(".")[:-1]
        anchor = package[: len(package) - (node.level - 1)]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    if base:
        return [base]
    return [alias.name for alias in node.names]  # `from . import x` at the top of uwf_core


def engine_layer_of(module: str) -> int:
    """`module` is relative to uwf_core.engine, e.g. "contain.sandbox"; its longest matching prefix."""
    best = None
    for index, names in enumerate(ENGINE_LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > len(best[1])):
                best = (index, name)
    if best is None:
        raise AssertionError(f"uwf_core.engine.{module} is in no engine layer: add it to ENGINE_LAYERS and docs/explanation/architecture.md")
    return best[0]


def _engine_part(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "engine":
        return None
    return ".".join(parts[1:]) or "__init__"


@pytest.mark.parametrize("module,path", _modules(), ids=[name for name, _ in _modules()])
def test_imports_never_reach_a_higher_layer(module, path):
    own = layer_of(module)
    tree = ast.parse(path.read_text(), str(path))
    upward = []
    for node in _imports(tree):
        for target in _targets(module, node):
            if layer_of(target) > own:
                upward.append(f"line {node.lineno}: uwf_core.{target} (layer {layer_of(target)} > {own})")
    assert not upward, f"uwf_core.{module} imports upward: {upward}"


ENGINE_MODULES = [(name, path) for name, path in _modules() if _engine_part(name) is not None]


@pytest.mark.parametrize("module,path", ENGINE_MODULES, ids=[name for name, _ in ENGINE_MODULES])
def test_the_engines_rooms_never_import_a_higher_room(module, path):
    own = engine_layer_of(_engine_part(module))
    tree = ast.parse(path.read_text(), str(path))
    upward = []
    for node in _imports(tree):
        for target in _targets(module, node):
            part = _engine_part(target)
            if part is not None and engine_layer_of(part) > own:
                upward.append(f"line {node.lineno}: uwf_core.{target} (engine layer {engine_layer_of(part)} > {own})")
    assert not upward, f"uwf_core.{module} imports a higher room of the engine: {upward}"


def test_the_engine_check_sees_its_imports():
    """A guard against a check that passes because it finds nothing: step.py imports lower rooms."""
    path = CORE / "engine" / "step.py"
    targets = {_engine_part(t) for node in _imports(ast.parse(path.read_text())) for t in _targets("engine.step", node)}
    assert {"attempt", "protocols", "files"} <= targets
    assert engine_layer_of("contain.sandbox") < engine_layer_of("call") < engine_layer_of("step") < engine_layer_of("queue.worker")


def test_every_package_is_in_a_layer():
    packages = {path.parent.relative_to(CORE).parts[0] for path in CORE.rglob("__init__.py") if path.parent != CORE}
    modules = {path.stem for path in CORE.glob("*.py")}
    for name in packages | modules:
        layer_of(name)


def _cas_puts(path: Path) -> list[int]:
    """Lines that put a node straight into the CAS (`store.put(...)`, `repo.nodes.put(...)`)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "put":
            owner = node.func.value
            name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else ""
            if name in {"store", "nodes"}:
                lines.append(node.lineno)
    return lines


def test_the_thread_layer_puts_its_nodes_through_one_door():
    """thread/nodes.py's put_node is where every node of a thread goes into the CAS
    (docs/explanation/architecture.md, "What flows through one step")."""
    door = CORE / "thread" / "nodes.py"
    assert _cas_puts(door), "the check finds no put in thread/nodes.py: it would pass on anything"
    others = {str(path.relative_to(CORE)): _cas_puts(path) for path in sorted((CORE / "thread").rglob("*.py")) if path != door}
    assert {path: lines for path, lines in others.items() if lines} == {}
