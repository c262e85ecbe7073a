"""Shared by the benchmark scripts."""

from __future__ import annotations

import compileall
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def compile_sources() -> None:
    """Byte-compile uwf's own modules first, as a regular install does: with
    PYTHONDONTWRITEBYTECODE set (as on this machine) an editable install would
    otherwise recompile them from source on every run."""
    for package in ("uwf_core", "uwf_tui"):
        compileall.compile_dir(str(REPO / package), quiet=1)
