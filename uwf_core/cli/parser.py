"""The argparse tree. Each command group lives in its own module, and only the group a command
line names is built (argparse costs milliseconds per subparser, on every step)."""

from __future__ import annotations

import argparse
from importlib import import_module

from ..version import __version__

GROUPS = {
    "thread": "thread_cmd",
    "workflow": "workflow_cmd",
    "agent": "agent_cmd",
    "cas": "cas_cmd",
    "setup": "setup_cmd",
    "diff": "diff_cmd",
    "bundle": "bundle_cmd",
    "worker": "worker_cmd",
    "root": "root_cmd",
    "inbox": "inbox_cmd",
}


def _named_group(args: list[str] | None) -> str | None:
    """The command group `args` name, if any: the first word that is not an option or its value."""
    words = list(args or [])
    while words:
        word = words.pop(0)
        if word == "--root":
            words = words[1:]
        elif not word.startswith("-"):
            return word if word in GROUPS else None
    return None


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, told the width: on its own it imports shutil (and lzma, bz2...) to ask
    the terminal, for every argument added, on every `uwf` start."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns())


def _columns() -> int:
    import os

    try:
        return int(os.environ.get("COLUMNS") or os.get_terminal_size(2).columns) - 2
    except (ValueError, OSError):
        return 78


class UwfParser(argparse.ArgumentParser):
    """Every parser of the tree (subparsers are made of their parent's class) uses _Formatter."""

    def __init__(self, *args, formatter_class=_Formatter, **kwargs) -> None:
        super().__init__(*args, formatter_class=formatter_class, **kwargs)


def build_parser(args: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `args` (only its group's commands), or for every command when none is named."""
    common = UwfParser(add_help=False)
    common.add_argument(
        "--root",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="storage root (default: $UWF_STORAGE_ROOT, else ~/.uwf)",
    )
    parser = UwfParser(
        prog="uwf",
        description="uwf: a stateless workflow engine for multi-role LLM-agent workflows.",
        parents=[common],
    )
    parser.add_argument("-V", "--version", action="version", version=f"uwf {__version__}")
    groups = parser.add_subparsers(title="commands", metavar="COMMAND")
    named = _named_group(args)
    for name, module in GROUPS.items():
        if named is None or name == named:
            import_module(f".{module}", __package__).register(groups, common)
    return parser
