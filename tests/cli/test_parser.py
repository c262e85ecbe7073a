"""The argparse tree is built for the command line at hand: its group only, and in a group of
subcommands the one it names; anything else builds the whole group, so argparse's help and its
errors name every command."""

from __future__ import annotations

import pytest

from uwf_core.cli.parser import build_parser


def _subcommands(parser, group: str) -> list[str]:
    groups = next(action for action in parser._actions if action.dest == "==SUPPRESS==" and action.choices)
    inner = groups.choices[group]
    return list(next(action for action in inner._actions if action.choices).choices)


def test_a_named_subcommand_is_the_only_one_built_and_parses_as_before():
    parser = build_parser(["--root", "R", "thread", "step", "T", "--reuse"])
    assert _subcommands(parser, "thread") == ["step"]
    args = parser.parse_args(["--root", "R", "thread", "step", "T", "--reuse"])
    assert (args.thread, args.reuse, args.root, args.handler.__name__) == ("T", True, "R", "cmd_step")


@pytest.mark.parametrize("argv", [["thread"], ["thread", "--help"], ["thread", "stepp"], ["cas", "schema", "list"]])
def test_anything_else_builds_the_whole_group(argv):
    names = _subcommands(build_parser(argv), argv[0])
    assert len(names) > 3 and ("step" in names if argv[0] == "thread" else "schema" in names)


def test_a_mistyped_subcommand_is_told_every_choice(uwf):
    result = uwf("thread", "stepp", "x")
    assert result.code == 2 and "invalid choice: 'stepp'" in result.err and "'step'" in result.err and "'fork'" in result.err
