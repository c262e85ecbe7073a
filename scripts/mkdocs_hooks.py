"""MkDocs hooks (mkdocs.yml `hooks:`): the reference pages' generated parts, made at build time
from the code itself, so they say what this uwf does and nothing generated is committed.

A line `<!-- generated: NAME -->` in a page is replaced by NAME's Markdown:

- `cli`: every command of uwf's argparse tree, with its usage, help and every argument;
- `workflow-fields`: the workflow YAML's fields, as the linter and the workflow schema take them;
- `config-keys`: config.yaml's keys, as config/model.py reads them.

An unknown NAME fails the build: a page never shows a marker left over.
"""

from __future__ import annotations

import argparse
import re

from mkdocs.exceptions import PluginError

MARKER = re.compile(r"^[ \t]*<!--\s*generated:\s*(.*?)\s*-->[ \t]*$", re.M)
USAGE_WIDTH = 88  # the usage lines' width: fixed, not the terminal's, so every build is the same


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Each marker line of the page replaced by its generated Markdown."""
    return MARKER.sub(lambda match: generate(match.group(1), page.file.src_uri), markdown)


def generate(name: str, where: str = "a page") -> str:
    """The Markdown a marker names; an unknown name is an error, so none is left in a page."""
    renderer = {"cli": cli_reference, "workflow-fields": workflow_fields, "config-keys": config_keys}.get(name)
    if renderer is None:
        raise PluginError(f"{where}: unknown marker <!-- generated: {name} --> (known: cli, workflow-fields, config-keys)")
    return renderer()


# The CLI --------------------------------------------------------------------------------------


def cli_reference() -> str:
    """The global options, then a section per command and subcommand, in the parser's order."""
    from uwf_core.cli.parser import build_parser, walk

    root = build_parser()  # no command named: every group and subcommand is built
    parts = [_global_options(root)]
    parts += [_command(words, command) for words, command in walk(root)]
    return "\n".join(parts)


def _global_options(root: argparse.ArgumentParser) -> str:
    rows = [_argument_row(action) for action in root._actions if not isinstance(action, argparse._SubParsersAction)]
    lines = ["## Global options", "", _usage(root), "",
             "`--root` may also follow the command (`uwf thread list --root DIR`); `-h`/`--help` works after",
             "every command and group.", ""]
    lines += _table(("Option", "Description"), rows)
    lines += ["", "The commands:", ""]
    lines += _table(("Command", "What it does"), _command_rows(root))
    return "\n".join(lines) + "\n"


def _command(words: str, command: argparse.ArgumentParser) -> str:
    """One command's section: a heading by its words (`### uwf thread step`, anchor
    `uwf-thread-step`), its description and usage, then its arguments or its subcommands."""
    from uwf_core.cli.parser import is_group

    heading = "#" * (len(words.split()) + 1)
    lines = [f"{heading} uwf {words}", ""]
    if command.description:
        lines += [_escape(command.description), ""]
    lines += [_usage(command), ""]
    rows = [_argument_row(action) for action in command._actions if _documented(action)]
    if rows:
        lines += _table(("Argument", "Description"), rows) + [""]
    if is_group(command):
        lines += _table(("Subcommand", "What it does"), _command_rows(command, words)) + [""]
    return "\n".join(lines)


def _documented(action: argparse.Action) -> bool:
    """Every argument but -h and --root, which the global options say once."""
    return not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) and action.dest != "root"


def _command_rows(parser: argparse.ArgumentParser, prefix: str = "") -> list[tuple[str, str]]:
    """A link to each command directly under `parser`, with its help."""
    from uwf_core.cli.parser import walk

    depth = len(prefix.split()) + 1
    return [(f"[`uwf {words}`](#{anchor(words)})", _escape(command.description or ""))
            for words, command in walk(parser, prefix) if len(words.split()) == depth]


def anchor(words: str) -> str:
    """The id MkDocs gives the heading of `uwf WORDS`."""
    from markdown.extensions.toc import slugify

    return slugify(f"uwf {words}", "-")


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return f"```text\n{formatter.format_help().strip()}\n```"


def _argument_row(action: argparse.Action) -> tuple[str, str]:
    return f"`{argument_name(action)}`", _escape(" ".join(_argument_notes(action)))


def argument_name(action: argparse.Action) -> str:
    """A positional as usage names it (`workflow`, `DIR`); an option's flags and value (`-p, --prompt PROMPT`)."""
    if not action.option_strings:
        return action.metavar or action.dest
    name = ", ".join(action.option_strings)
    if action.nargs != 0:
        formatter = argparse.HelpFormatter("uwf")
        name += " " + formatter._format_args(action, action.dest.upper())
    return name


def _argument_notes(action: argparse.Action) -> list[str]:
    """Its help, then its choices, default and whether it must or may be given."""
    notes = [action.help.rstrip(".") + "." if action.help else ""]
    if action.choices is not None:
        notes.append("Choices: " + ", ".join(f"`{choice}`" for choice in action.choices) + ".")
    if action.nargs != 0 and action.default not in (None, argparse.SUPPRESS, [], ()):
        notes.append(f"Default: `{action.default}`.")
    if action.option_strings and action.required:
        notes.append("Required.")
    elif not action.option_strings and action.nargs in ("?", "*"):
        notes.append("Optional.")
    return [note for note in notes if note]


# The workflow YAML ----------------------------------------------------------------------------

# What uwf skill author does not describe: the parts of a condition and of the graph's routes.
CONDITION_FIELDS = {
    "description": "what the condition means, for people",
    "expression": "a JSONata expression over the thread (`$last('role')`, `$first`, `$lastStep`, `$firstStep`); "
    "a condition may be written as its expression alone",
}
TRANSITION_FIELDS = {
    "role": "the next role, or `$END`",
    "condition": "a condition's name; null: always. The first transition whose condition holds is taken",
    "prompt": "a Mustache template over the last output: the next role's instruction",
}
TARGET_FIELDS = {
    "role": "the next role, or `$END`; a target may be written as the role's name alone",
    "prompt": "a Mustache template over the last output: the next role's instruction",
    "location": "a Mustache template: the directory, relative to the thread's workspace and never outside it, "
    "the agent runs in",
}


def workflow_fields() -> str:
    """One table of every field a workflow YAML may have, where it goes and what it is."""
    rows = [(_where(where), f"`{field}`", _escape(text)) for where, field, text in workflow_field_rows()]
    return "\n".join(_table(("Where", "Field", "What it is"), rows)) + "\n"


def workflow_field_rows() -> list[tuple[str, str, str]]:
    """(where, field, what it is): the fields from the linter (top level, roles, map roles) and the
    workflow schema (conditions, transitions, status-map targets); the words from `uwf skill author`
    and CONDITION_FIELDS, TRANSITION_FIELDS, TARGET_FIELDS above."""
    from uwf_core.cli import skill_text
    from uwf_core.store.builtin_schemas import WORKFLOW_WITH_MAPS
    from uwf_core.workflow import lint, map_role

    schema = WORKFLOW_WITH_MAPS["properties"]
    transitions, targets = schema["graph"]["additionalProperties"]["anyOf"]
    parts = [
        ("top level", lint.TOP_FIELDS, skill_text.WORKFLOW_FIELDS),
        ("roles.ROLE", lint.ROLE_FIELDS, skill_text.ROLE_FIELDS),
        ("roles.ROLE (a map role)", map_role.MAP_ROLE_FIELDS, skill_text.MAP_FIELDS),
        ("roles.ROLE.map", map_role.MAP_FIELDS, skill_text.MAP_FIELDS),
        ("conditions.NAME", schema["conditions"]["additionalProperties"]["properties"], CONDITION_FIELDS),
        ("graph.ROLE[] (a transition)", transitions["items"]["properties"], TRANSITION_FIELDS),
        ("graph.ROLE.STATUS (a status-map target)", targets["additionalProperties"]["properties"], TARGET_FIELDS),
    ]
    return [(where, field, text) for where, fields, words in parts for field, text in _described(where, fields, words)]


# config.yaml ----------------------------------------------------------------------------------

# Each section of config.yaml: the record config/model.py reads it into, the record's fields that
# are not keys, and what each key is (an agent's, in the words of `uwf skill develop`).
CONFIG_KEYS = {
    "": ("Config", {"settings"}, {
        "providers": "provider name → its `baseUrl` and `apiKeyEnv` (below): an OpenAI-compatible endpoint",
        "models": "model alias → its `provider` and `name` (below)",
        "agents": "agent alias → its entry (below); a string alone is its command",
        "defaultAgent": "the agent of a role nothing else assigns: an alias, or a built-in such as `uwf-builtin`",
        "agentOverrides": "workflow name → {role → agent alias}: who answers a role of that workflow",
        "defaultModel": "the model alias used when nothing more specific is set",
        "modelOverrides": "purpose → model alias: `extract` (reading an answer's structured output), `supervisor`, "
        "`summarizer`; uwf-builtin also reads `<workflow>.<role>`, `<role>` and `builtin`",
        "prices": "model alias or provider's model name → its `input` and `output` prices (below): the cost ledger "
        "and `maxCost` budgets",
        "workspace": "snapshots of threads' files, and where forks' workspaces go (below)",
        "supervisorInterval": "a supervisor every N steps for workflows that set none (0, the default: off)",
        "summarizer": "`false`: no LLM summary of a finished thread (it keeps its last output's); default on, "
        "with the extraction model",
        "otel": "where traces go (the otel extra; the `OTEL_*` variables win over it): below",
    }),
    "providers.NAME": ("ProviderConfig", {"name"}, {
        "baseUrl": "the provider's OpenAI-compatible base URL, e.g. `https://openrouter.ai/api/v1`",
        "apiKeyEnv": "the `.env` variable holding its API key (`uwf setup` writes `<PROVIDER>_API_KEY`)",
    }),
    "models.ALIAS": ("ModelConfig", {"alias"}, {
        "provider": "a provider's name under `providers`",
        "name": "the model's name at the provider",
    }),
    "agents.NAME": ("AgentConfig", {"name"}, None),  # None: skill_text.AGENT_FIELDS
    "prices.MODEL": ("Price", {"model"}, {
        "input": "per million prompt tokens, in whatever currency you write",
        "output": "per million completion tokens",
    }),
    "workspace": ("WorkspaceConfig", set(), {
        "snapshot": "`false`: threads keep no snapshots of their workspace's files",
        "maxFileBytes": "a larger file is left out of a snapshot, with a note naming it (default 50MB)",
        "maxSnapshotBytes": "a larger workspace fails the step, naming its largest files (default 1GB)",
        "dir": "where forks' workspaces go (default: `<root>/workspaces` for a directory root)",
    }),
    "otel": ("OtelConfig", {"problem", "written"}, {
        "endpoint": "an OTLP/HTTP base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT`",
        "content": "`true`: prompts and answers go with the traces",
    }),
}


def config_keys() -> str:
    """One table of every key config.yaml may have, where it goes and what it is."""
    rows = [(_where(where), f"`{key}`", _escape(text)) for where, key, text in config_key_rows()]
    return "\n".join(_table(("Where", "Key", "What it is"), rows)) + "\n"


def config_key_rows() -> list[tuple[str, str, str]]:
    """(where, key, what it is) for every key: the records' fields in camelCase, as config/model.py
    reads and writes them."""
    from uwf_core.cli.skill_text import AGENT_FIELDS
    from uwf_core.config import model

    rows = []
    for where, (record, not_keys, words) in CONFIG_KEYS.items():
        fields = [spec.name for spec in getattr(model, record).__record_fields__ if spec.name not in not_keys]
        keys = [re.sub(r"_(\w)", lambda match: match.group(1).upper(), name) for name in fields]
        described = _described(where or "config.yaml", keys, words or AGENT_FIELDS)
        rows += [(where or "top level", key, text) for key, text in described]
    return rows


# Shared ---------------------------------------------------------------------------------------


def _described(where: str, fields, words: dict[str, str]) -> list[tuple[str, str]]:
    """(field, what it is) for each of `fields`, in the order `words` has them; a field the code
    takes but no words describe fails the build (the reference would miss it)."""
    missing = sorted(set(fields) - set(words))
    if missing:
        raise PluginError(f"{where}: no description of {', '.join(missing)} (add it to scripts/mkdocs_hooks.py or skill_text.py)")
    return [(field, text) for field, text in words.items() if field in set(fields)]


def _where(where: str) -> str:
    """`roles.ROLE.map` as code; a note after the path (`(a map role)`) and `top level` as words."""
    path, _, note = where.partition(" ")
    return where if where == "top level" else f"`{path}` {note}".rstrip()


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]


def _escape(text: str) -> str:
    """Help text as Markdown: `uwf/<thread>` shown, not taken for an HTML tag (in a code span it is
    shown as it is already)."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(part if part.startswith("`") else part.replace("<", "&lt;") for part in parts)
