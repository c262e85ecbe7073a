"""Helpers shared by the command modules."""

from __future__ import annotations

import argparse


def repo_of(args: argparse.Namespace):
    """The command's one opened root (`--root` > UWF_STORAGE_ROOT > ~/.uwf)."""
    from ..repo import Repo

    return Repo.open(getattr(args, "root", None))


def group(groups, common, name: str, help_text: str):
    """A command group (`uwf workflow ...`) whose bare form prints its own help."""
    parser = groups.add_parser(name, help=help_text, description=help_text, parents=[common])
    sub = parser.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    parser.set_defaults(handler=lambda args: _group_help(parser))
    return sub


def _group_help(parser: argparse.ArgumentParser) -> int:
    import sys

    parser.print_help(sys.stderr)
    return 2


def command(sub, common, name: str, handler, help_text: str) -> argparse.ArgumentParser:
    parser = sub.add_parser(name, help=help_text, description=help_text, parents=[common])
    parser.set_defaults(handler=handler)
    return parser
