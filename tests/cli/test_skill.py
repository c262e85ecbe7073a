"""`uwf skill`: what it tells an agent is what this uwf does, topic by topic."""

from __future__ import annotations

import argparse
import re

from uwf_core.cli.parser import build_parser
from uwf_core.cli.skill_text import _commands


def test_the_list_names_every_topic(uwf):
    listed = uwf("skill")
    assert listed.code == 0
    assert [line.split("`")[1] for line in listed.out.splitlines() if line.startswith("- ")] == [
        "uwf skill cli", "uwf skill author", "uwf skill develop"]
    assert uwf("skill", "nope").code == 2


def test_cli_has_every_command_and_every_option_the_parser_has(uwf):
    text = uwf("skill", "cli").out
    commands = list(_commands(build_parser(None)))
    assert len(commands) > 40
    for words, parser in commands:
        assert f"\n## uwf {words}\n" in text, words
        section = text.split(f"\n## uwf {words}\n", 1)[1].split("\n## ", 1)[0]
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction) or action.dest == "root":
                continue
            name = ", ".join(action.option_strings) or action.metavar or action.dest
            assert f"- `{name}`" in section, (words, name)
    assert "uwf mcp" in text and "exit code 1" in text and "exits 2" in text


def test_author_explains_every_field_the_linter_takes_and_its_example_is_a_workflow(uwf, tmp_path):
    from uwf_core.workflow.lint import ROLE_FIELDS, TOP_FIELDS
    from uwf_core.workflow.map_role import MAP_FIELDS, MAP_ROLE_FIELDS

    text = uwf("skill", "author").out
    for field in TOP_FIELDS | ROLE_FIELDS | MAP_FIELDS | MAP_ROLE_FIELDS:
        assert re.search(rf"^- `{re.escape(field)}`: \S", text, re.M), field
    example = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "example.yaml").write_text(example)
    linted = uwf("workflow", "lint", str(tmp_path / "example.yaml"))
    assert linted.code == 0 and linted.out.strip().endswith(": ok"), linted.out
    assert uwf("workflow", "put", str(tmp_path / "example.yaml")).json()["name"] == "review-loop"


def test_develop_explains_every_agent_key_and_names_the_variables_an_agent_gets(uwf, root_dir):
    from uwf_core.config.model import AGENT_KEYS

    text = uwf("skill", "develop").out
    for key in AGENT_KEYS:
        assert re.search(rf"^- `{key}`: \S", text, re.M), key
    named = re.findall(r"^- `(UWF_[A-Z_]+)`", text, re.M)
    assert len(named) >= 5
    # an agent that prints what it is given, then fails: its stderr is kept in the runs log
    script = "cat >/dev/null; env | grep '^UWF_' | sort >&2; exit 3"
    (root_dir / "config.yaml").write_text(f"agents:\n  dump: {{command: sh, args: [-c, \"{script}\"], protocol: text}}\ndefaultAgent: dump\n")
    from loop_workflow import loop_workflow

    (root_dir.parent / "loop.yaml").write_text(loop_workflow(5))
    assert uwf("workflow", "put", str(root_dir.parent / "loop.yaml")).code == 0
    thread = uwf("thread", "start", "loop", "-p", "go").json()["thread"]
    instructed = {"UWF_INSTRUCTION"}  # only when the moderator gives one
    assert uwf("thread", "step", thread).code == 1
    stderr = uwf("thread", "runs", thread).json()[-1]["stderr"]
    given = set(re.findall(r"^(UWF_[A-Z_]+)=", stderr, re.M))
    assert set(named) - instructed <= given, (named, given)
