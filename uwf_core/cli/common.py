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


class Only:
    """The one subcommand a command line names (parser.build_parser sets it): the others of its
    group are not built, since argparse costs ~0.3 ms a parser on every `uwf` start. `built`
    says whether it was one: if not, the whole group is built again, for argparse to say so."""

    name: str | None = None
    built = False


class _NotBuilt:
    """What `command` gives for a subcommand not built: takes every call and does nothing."""

    def __getattr__(self, _name: str):
        return self._nothing

    def _nothing(self, *args, **kwargs) -> _NotBuilt:
        return self


def command(sub, common, name: str, handler, help_text: str) -> argparse.ArgumentParser:
    if Only.name is not None and name != Only.name:
        return _NotBuilt()  # type: ignore[return-value]
    Only.built = Only.built or Only.name is not None
    parser = sub.add_parser(name, help=help_text, description=help_text, parents=[common])
    parser.set_defaults(handler=handler)
    return parser


def _positive(text: str, what: str) -> float:
    """A positive, finite number; anything else is a usage error naming `what` it should be."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive {what.removeprefix('a ')}, got {text!r}")
    return value


def positive_number(text: str) -> float:
    """argparse type for seconds: a zero, negative or non-numeric value is a usage error."""
    return _positive(text, "a number of seconds")


def positive_int(text: str) -> int:
    """argparse type for counts (--max, --quota)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def positive_number_any(text: str) -> float:
    """argparse type for amounts (--max-cost): a positive finite number."""
    return _positive(text, "a number")
