"""The argparse tree. Each command group lives in its own module."""

from __future__ import annotations

import argparse

from ..version import __version__
from . import cas_cmd, setup_cmd, thread_cmd, workflow_cmd


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--root",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="storage root (default: $UWF_STORAGE_ROOT, else ~/.uwf)",
    )
    parser = argparse.ArgumentParser(
        prog="uwf",
        description="uwf: a stateless workflow engine for multi-role LLM-agent workflows.",
        parents=[common],
    )
    parser.add_argument("-V", "--version", action="version", version=f"uwf {__version__}")
    groups = parser.add_subparsers(title="commands", metavar="COMMAND")
    thread_cmd.register(groups, common)
    workflow_cmd.register(groups, common)
    cas_cmd.register(groups, common)
    setup_cmd.register(groups, common)
    return parser
