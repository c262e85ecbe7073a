"""The public API is typed for the tools users check their code with: `uwf_core.api` re-exports
every name under `if TYPE_CHECKING:` (at run time they load lazily, so a type checker would see
only a module `__getattr__`), `@record` classes are dataclasses to a checker (PEP 681), and mypy
--strict accepts the Python example and catches a misuse (so the names are not Any)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from uwf_core import api

REPO = Path(__file__).resolve().parents[1]


def _checked_imports() -> dict[str, str]:
    """name -> "module:attribute" as the TYPE_CHECKING block of api.py imports it."""
    tree = ast.parse((REPO / "uwf_core" / "api.py").read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            renamed = {}
            for statement in node.body:
                if isinstance(statement, ast.Assign):  # `fsck = _fsck_root`: exported under its API name
                    renamed[statement.targets[0].id] = statement.value.id
                    continue
                assert isinstance(statement, ast.ImportFrom) and statement.level == 1
                for alias in statement.names:
                    assert alias.asname == alias.name or (alias.asname or "").startswith("_")  # `X as X`: re-exported
                    found[alias.asname] = statement.module if alias.name == alias.asname else f"{statement.module}:{alias.name}"
            for name, private in renamed.items():
                found[name] = found.pop(private)
    return found


def test_every_public_name_is_imported_for_type_checkers_as_it_loads():
    assert _checked_imports() == api._EXPORTS


def _mypy(python: str = sys.executable) -> list[str]:
    found = shutil.which("mypy", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    return [found, "--python-executable", python, "--follow-imports=silent", "--no-incremental"]


@pytest.fixture(scope="module")
def installed(uwf_wheel, tmp_path_factory) -> str:
    """A venv with uwf installed from its wheel, as a user's project has it (not the checkout: a
    type checker run outside it must find the package, its py.typed and its types)."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", str(uwf_wheel)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return python


def test_mypy_strict_accepts_the_python_example(installed, tmp_path):
    example = tmp_path / "quickstart.py"
    example.write_text((REPO / "examples" / "python" / "quickstart.py").read_text())
    done = subprocess.run([*_mypy(installed), "--strict", str(example)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_sees_the_real_types(installed, tmp_path):
    misuse = tmp_path / "misuse.py"
    misuse.write_text(
        "from uwf_core.api import PythonContext, Repo, StepOptions, fsck, perform_step\n"
        "reveal_type(fsck)\n"
        "repo = Repo.open('/nowhere')\n"
        "result = perform_step(repo, 'T', StepOptions(agnt='x'))\n"
        "head: int = result.head\n"
        "@repo.agents.register('critic')\n"
        "def critic(ctx: PythonContext) -> dict[str, object]:\n"
        "    return {'n': ctx.steps[0].role + 1}\n"
        "reveal_type(critic)\n"
    )
    done = subprocess.run([*_mypy(installed), str(misuse)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    out = done.stdout
    assert "Cannot find implementation" not in out, out
    assert 'Unexpected keyword argument "agnt" for "StepOptions"' in out, out
    assert "def (repo: uwf_core.repo.Repo) -> uwf_core.store.fsck.FsckReport" in out, out
    assert 'Incompatible types in assignment (expression has type "str", variable has type "int")' in out, out
    assert 'Unsupported operand types for + ("str" and "int")' in out, out
    assert "def (ctx: uwf_core.engine.python.context.PythonContext) -> builtins.dict[builtins.str, builtins.object]" in out or \
        "def (ctx: uwf_core.engine.python.context.PythonContext) -> dict[str, object]" in out, out


@pytest.fixture(scope="module")
def editable(tmp_path_factory) -> str:
    """A venv with uwf installed editable from a copy of the checkout, as `pip install -e .` does it
    (its PEP 660 hook, through the project's own build backend): a type checker must see through it."""
    tmp = tmp_path_factory.mktemp("editable")
    source = tmp / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("uwf_core", "uwf_tui", "examples", "scripts"):
        shutil.copytree(REPO / part, source / part, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    built = subprocess.run([sys.executable, "-c", f"import build_backend; print(build_backend.build_editable({str(tmp / 'dist')!r}))"],
                           cwd=source, env={**os.environ, "PYTHONPATH": str(source / "scripts")}, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    venv = tmp / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    wheel = next((tmp / "dist").glob("uwf-*.whl"))
    done = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return python


def test_mypy_strict_accepts_every_python_example_against_an_editable_install(editable, tmp_path):
    examples = sorted((REPO / "examples" / "python").glob("*.py"))
    for example in examples:
        (tmp_path / example.name).write_text(example.read_text())
    done = subprocess.run([*_mypy(editable), "--strict", *(example.name for example in examples)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0 and "Cannot find implementation" not in done.stdout, done.stdout + done.stderr


def test_mypy_refuses_what_cannot_be_an_agent_function(editable, tmp_path):
    program = tmp_path / "agents.py"
    program.write_text(
        "from uwf_core.api import PythonContext, Repo, StepOptions\n"
        "repo = Repo.open('/nowhere')\n"
        "def takes_nothing() -> dict[str, object]:\n"
        "    return {}\n"
        "def gives_a_list(ctx: PythonContext) -> list[int]:\n"
        "    return [1]\n"
        "async def fine(ctx: PythonContext) -> dict[str, object]:\n"
        "    return {'draft': ctx.workflow_name, 'last': ctx.last.role if ctx.last else None}\n"
        "repo.agents.register('a', takes_nothing)\n"
        "repo.agents.register('b', gives_a_list)\n"
        "repo.agents.register('c', fine)\n"
        "StepOptions(agent=gives_a_list)\n"
    )
    done = subprocess.run([*_mypy(editable), "--strict", str(program)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert sorted(int(line.split(":")[1]) for line in errors) == [9, 10, 12], done.stdout
