"""The documentation site builds: `mkdocs build --strict` fails on a broken link, a missing
anchor, a page left out of the nav, or a generated section that is out of step with the code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_site_builds_strict(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-4000:]
    pages = {path.relative_to(tmp_path / "site").as_posix() for path in (tmp_path / "site").rglob("index.html")}
    assert {"index.html", "tutorials/first-workflow/index.html", "reference/cli/index.html", "reference/python-api/index.html"} <= pages
    assert (tmp_path / "site" / "screenshots" / "threads.png").exists()  # docs/screenshots links the repository's own
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert 'id="uwf-thread-step"' in cli and "--agents" in cli
    api = (tmp_path / "site" / "reference" / "python-api" / "index.html").read_text()
    assert "perform_step" in api and "run_thread" in api


def test_the_readme_is_a_front_door():
    """The README says what uwf is and where to go: the reference lives in the site."""
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move the detail into docs/"
