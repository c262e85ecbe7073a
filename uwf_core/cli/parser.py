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
    "mcp": "mcp_cmd",
    "ps": "ps_cmd",
    "skill": "skill_cmd",
    "init": "init_cmd",
}


SUBCOMMANDS = {"thread", "workflow", "agent", "cas", "bundle", "root"}  # the groups whose commands are subcommands


def _named_group(args: list[str] | None) -> str | None:
    """The command group `args` name, if any: the first word that is not an option or its value."""
    words = _words(args)
    return words[0] if words and words[0] in GROUPS else None


def _named_subcommand(args: list[str] | None) -> str | None:
    """The subcommand `args` name after their group (`thread step`), if the group has them."""
    words = _words(args)
    return words[1] if len(words) > 1 and words[0] in SUBCOMMANDS else None


def _words(args: list[str] | None) -> list[str]:
    """The first two words that are not options or --root's value."""
    words, rest = [], list(args or [])
    while rest and len(words) < 2:
        word = rest.pop(0)
        if word == "--root":
            rest = rest[1:]
        elif word == "--":
            break
        elif not word.startswith("-"):
            words.append(word)
    return words


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
    """The parser for `args` (only its group's commands, only the subcommand it names), or for
    every command when none is named."""
    from .common import Only

    Only.name, Only.built = _named_subcommand(args), False
    try:
        parser = _build(args)
        if Only.name is not None and not Only.built:  # a subcommand no group has: argparse says so, naming them
            Only.name = None
            parser = _build(args)
    finally:
        Only.name = None
    return parser


def _build(args: list[str] | None) -> argparse.ArgumentParser:
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


def walk(parser: argparse.ArgumentParser, prefix: str = ""):
    """(the command's words, its parser) for every group and command under `parser`, depth first,
    a group before its commands: what `uwf skill cli` and the docs' CLI reference describe."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                words = f"{prefix} {name}".strip()
                if not sub.description:
                    sub.description = helps.get(name)
                yield words, sub
                yield from walk(sub, words)


def is_group(parser: argparse.ArgumentParser) -> bool:
    """A parser of subcommands (`uwf thread`): on its own it only prints its help."""
    return any(isinstance(action, argparse._SubParsersAction) and action.choices for action in parser._actions)
