"""uwf's own public-API modules pass `mypy --strict`: `uwf_core.api` and every module its
`_EXPORTS` loads a name from. What they import is followed silently (its types are used, its own
errors are not counted), so the rest of uwf_core can be typed module by module."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from uwf_core import api

REPO = Path(__file__).resolve().parents[1]


def api_modules() -> list[str]:
    """`uwf_core.api` and the modules its names load from ("module" or "module:attribute")."""
    return sorted({"uwf_core.api", *(f"uwf_core.{target.partition(':')[0]}" for target in api._EXPORTS.values())})


def test_mypy_strict_passes_on_the_api_modules(tmp_path):
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent))
    if mypy is None:
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    modules = [arg for module in api_modules() for arg in ("-m", module)]
    done = subprocess.run(
        [mypy, "--python-executable", sys.executable, "--strict", "--follow-imports=silent", "--no-incremental",
         "--cache-dir", str(tmp_path / "mypy-cache"), *modules],
        capture_output=True, text=True, cwd=REPO, timeout=600,
    )
    assert done.returncode == 0, f"mypy --strict on {len(api_modules())} API modules:\n{done.stdout}{done.stderr}"
