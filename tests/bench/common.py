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


def private_cluster():
    """A private PostgreSQL cluster, started, for the PostgreSQL rows; None when PostgreSQL or
    libpq is not on this host (those rows are left out)."""
    import sys

    from uwf_core.store.pg.libpq import LibpqMissing, load

    try:
        load()
    except LibpqMissing:
        return None
    sys.path.insert(0, str(REPO / "tests" / "support"))
    from pg_cluster import Cluster, binaries

    return Cluster().start() if binaries() else None
