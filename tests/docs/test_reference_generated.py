"""The reference's generated parts (scripts/mkdocs_hooks.py) say everything the code has: every
command and argument of the parser, every workflow field the linter takes, every config.yaml key;
and a marker the hook does not know fails the build."""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("mkdocs")

REPO = Path(__file__).resolve().parents[2]


def _load_hooks():
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", REPO / "scripts" / "mkdocs_hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = _load_hooks()


@pytest.fixture(scope="module")
def cli() -> str:
    return hooks.cli_reference()


def command_sections(text: str) -> dict[str, str]:
    """The words of each `## uwf WORDS` heading (any level), with the text up to the next heading."""
    parts = re.split(r"^#{2,4} uwf (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def row(section: str, name: str) -> str:
    found = [line for line in section.splitlines() if line.startswith(f"| `{name}` |")]
    assert len(found) == 1, (name, found)
    return found[0]


def test_every_command_and_group_has_a_section_with_its_usage_and_every_argument(cli):
    from uwf_core.cli.parser import build_parser, walk

    commands = list(walk(build_parser()))
    assert len(commands) > 50
    sections = command_sections(cli)
    assert list(sections) == [words for words, _ in commands]
    for words, parser in commands:
        section = sections[words]
        assert f"usage: uwf {words}" in section, words
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.dest == "root":
                continue
            line = row(section, hooks.argument_name(action))
            if action.help:
                assert action.help.rstrip(".").replace("<", "&lt;") in line, (words, action.help)
            for choice in action.choices or ():
                assert f"`{choice}`" in line, (words, choice)
            if action.default in (3600, "read", "review-loop"):
                assert f"Default: `{action.default}`" in line, (words, line)


def test_global_options_are_said_once_and_every_link_has_its_heading(cli):
    assert cli.count("| `--root DIR` |") == 1 and cli.count("| `-V, --version` |") == 1
    anchors = {hooks.anchor(words) for words in command_sections(cli)}
    links = re.findall(r"\]\(#([^)]+)\)", cli)
    assert links and set(links) <= anchors


def test_every_workflow_field_the_linter_takes_is_in_the_table():
    from uwf_core.store.builtin_schemas import WORKFLOW_WITH_MAPS
    from uwf_core.workflow import lint, map_role

    table = hooks.workflow_fields()
    listed = {(where.split()[0], field) for where, field, _ in hooks.workflow_field_rows()}
    graph = WORKFLOW_WITH_MAPS["properties"]["graph"]["additionalProperties"]["anyOf"]
    expected = {
        "top": lint.TOP_FIELDS,
        "roles.ROLE": lint.ROLE_FIELDS | map_role.MAP_ROLE_FIELDS,
        "roles.ROLE.map": map_role.MAP_FIELDS,
        "conditions.NAME": set(WORKFLOW_WITH_MAPS["properties"]["conditions"]["additionalProperties"]["properties"]),
        "graph.ROLE[]": set(graph[0]["items"]["properties"]),
        "graph.ROLE.STATUS": set(graph[1]["additionalProperties"]["properties"]),
    }
    assert listed == {(where, field) for where, fields in expected.items() for field in fields}
    for where, field, text in hooks.workflow_field_rows():
        assert f"| `{field}` | {text} |" in table and text


def test_the_fields_of_conditions_and_routes_are_what_the_linter_takes():
    """Each field the hook describes itself, in a workflow: it lints clean."""
    from uwf_core.api import lint_text

    workflow = """
name: every-field
roles:
  triager: {description: d, goal: g, procedure: p, output: o,
            meta: {type: object, properties: {$status: {enum: [web, done]}}, required: [$status]}}
  fixer: {description: d, goal: g, procedure: p, output: o, meta: {type: object}}
conditions:
  always: {description: every time, expression: "true"}
graph:
  $START: [{role: triager, condition: null, prompt: "triage it"}]
  triager: {web: {role: fixer, prompt: "fix {{summary}}", location: web/}, done: {role: $END}}
  fixer: [{role: fixer, condition: always}, {role: $END, condition: null}]
"""
    draft = lint_text(workflow)
    assert not draft.problems, [problem.message for problem in draft.problems]
    assert set(hooks.CONDITION_FIELDS) == {"description", "expression"}
    assert set(hooks.TRANSITION_FIELDS) == {"role", "condition", "prompt"}
    assert set(hooks.TARGET_FIELDS) == {"role", "prompt", "location"}


# A config.yaml with every key config/model.py reads: it parses with none left over, and its keys are
# the reference's.
EVERY_KEY = """
providers:
  openrouter: {baseUrl: "https://openrouter.ai/api/v1", apiKeyEnv: OPENROUTER_API_KEY}
models:
  sonnet: {provider: openrouter, name: anthropic/claude-sonnet-4}
agents:
  claude: {command: claude, args: [-p], protocol: text, timeout: 1800, env: {A: b}, secrets: [OPENROUTER_API_KEY],
           reuse: true, sandbox: true, network: false, writable: [/tmp/w], readable: [/tmp/r], hide: [.env],
           state: [~/.claude], git: commit}
  review: {python: "mypackage.agents:review", isolate: process}
defaultAgent: claude
agentOverrides: {solve-issue: {developer: claude}}
defaultModel: sonnet
modelOverrides: {extract: sonnet}
prices: {sonnet: {input: 3, output: 15}}
workspace: {snapshot: false, maxFileBytes: 50MB, maxSnapshotBytes: 1GB, dir: /tmp/forks}
supervisorInterval: 5
summarizer: false
otel: {endpoint: "http://localhost:6006", content: true}
"""


def test_every_config_key_is_in_the_table_and_read_by_uwf():
    from uwf_core.config.model import AGENT_KEYS, parse_config
    from uwf_core.encoding.simple_yaml import loads

    config = parse_config(EVERY_KEY, "config.yaml")
    assert not config.settings and config.otel.problem is None  # no key left unread
    raw = loads(EVERY_KEY)
    written = {("top level", key) for key in raw}
    for section, where in (("providers", "providers.NAME"), ("models", "models.ALIAS"), ("agents", "agents.NAME"), ("prices", "prices.MODEL")):
        written |= {(where, key) for entry in raw[section].values() for key in entry}
    written |= {(section, key) for section in ("workspace", "otel") for key in raw[section]}
    rows = hooks.config_key_rows()
    assert {(where, key) for where, key, _ in rows} == written
    assert {key for where, key, _ in rows if where == "agents.NAME"} == AGENT_KEYS
    table = hooks.config_keys()
    assert all(f"| `{key}` |" in table for _, key, _ in rows)


def _page(uri: str = "reference/x.md"):
    return SimpleNamespace(file=SimpleNamespace(src_uri=uri))


def test_an_unknown_marker_fails_and_every_known_one_is_replaced():
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match=r"reference/x\.md: unknown marker <!-- generated: clii -->"):
        hooks.on_page_markdown("# X\n\n<!-- generated: clii -->\n", _page(), None, None)
    with pytest.raises(PluginError, match="unknown marker"):
        hooks.on_page_markdown("<!--generated:nope-->\n", _page(), None, None)
    markdown = "# X\n\n<!-- generated: workflow-fields -->\n\n<!--  generated: config-keys  -->\n\n`<!-- generated: cli -->` inline stays\n"
    out = hooks.on_page_markdown(markdown, _page(), None, None)
    assert out.count("<!--") == 1 and "| `maxSteps` |" in out and "| `defaultAgent` |" in out


def test_a_site_built_with_the_hook_has_the_cli_page_with_its_anchors(tmp_path):
    """A real `mkdocs build --strict` of cli.md and a page of the other markers: the hook runs, the
    headings get their anchors, and every link of cli.md (the output shapes) finds its heading."""
    docs = tmp_path / "docs"
    (docs / "reference").mkdir(parents=True)
    (docs / "index.md").write_text("# uwf\n\n[thread step](reference/cli.md#uwf-thread-step)\n")
    (docs / "reference" / "cli.md").write_text((REPO / "docs" / "reference" / "cli.md").read_text())
    (docs / "reference" / "fields.md").write_text("# Fields\n\n<!-- generated: workflow-fields -->\n\n<!-- generated: config-keys -->\n")
    (tmp_path / "mkdocs.yml").write_text(
        f"site_name: t\ndocs_dir: {docs}\nsite_dir: {tmp_path / 'site'}\nstrict: true\ntheme: {{name: mkdocs}}\n"
        f"hooks: [{REPO / 'scripts' / 'mkdocs_hooks.py'}]\nplugins: []\n"
        "markdown_extensions: [tables, {toc: {permalink: true}}]\n"
        "validation: {omitted_files: warn, absolute_links: warn, unrecognized_links: warn, anchors: warn}\n"
        "nav: [index.md, reference/cli.md, reference/fields.md]\n"
    )
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-f", str(tmp_path / "mkdocs.yml")],
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    page = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    for anchor in ("global-options", "uwf-thread", "uwf-thread-step", "uwf-cas-schema-list", "uwf-init", "output-shapes"):
        assert f'id="{anchor}"' in page, anchor
    assert "generated:" not in page and "uwf/&lt;thread&gt;" in page
    fields = (tmp_path / "site" / "reference" / "fields" / "index.html").read_text()
    assert "<code>maxParallel</code>" in fields and "<code>apiKeyEnv</code>" in fields
