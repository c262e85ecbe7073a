"""The public API is typed for the tools users check their code with: `uwf_core.api` re-exports
every name under `if TYPE_CHECKING:` (at run time they load lazily, so a type checker would see
only a module `__getattr__`), `@record` classes are dataclasses to a checker (PEP 681), and mypy
--strict accepts the Python example and catches a misuse (so the names are not Any)."""

from __future__ import annotations

import ast
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
