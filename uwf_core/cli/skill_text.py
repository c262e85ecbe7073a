"""What `uwf skill TOPIC` prints: Markdown for an agent that drives uwf, made from what the CLI
itself uses (the argparse tree, the workflow linter's fields, config.yaml's agent keys), so it
says what this uwf does. Tests hold each topic to its source."""

from __future__ import annotations

import argparse

TOPICS = {
    "cli": "every command with its options and what it prints; errors and exit codes; uwf mcp",
    "author": "write a workflow: its YAML fields, a complete example, lint and put",
    "develop": "write an agent: how uwf runs it, what it is given and what it answers",
}

WORKFLOW_FIELDS = {
    "name": "the registry name (letters, digits, '.', '_', '-')",
    "description": "one line for people",
    "maxSteps": "a thread ends (`max-steps`) after this many steps",
    "maxTokens": "no new step once the thread's steps used this many tokens",
    "maxCost": "no new step once they cost this much (prices in config.yaml)",
    "supervisorInterval": "every N steps a supervisor model may end a looping thread",
    "workspace": "`{snapshot: false}`: the threads keep no snapshots of their workspace's files",
    "roles": "role name -> the role (below); `$`-names are uwf's",
    "conditions": "name -> a JSONata expression over the thread (`$last`, `$first`, `$steps`, `$prompt`)",
    "graph": "`$START` and each role -> its next role: a list of {role, condition} or a mapping status -> role; `$END` ends",
}
ROLE_FIELDS = {
    "description": "what the role does, one line",
    "goal": "who the agent is in this role",
    "capabilities": "a list of what it may use",
    "procedure": "how it works, step by step",
    "output": "what its answer holds (the prose under the frontmatter)",
    "meta": "the JSON Schema of its structured output (a `$status` enum routes the graph)",
}
MAP_FIELDS = {
    "map": "makes the role a map: a child thread per item (the settings below)",
    "over": "a JSONata expression giving the items",
    "workflow": "the registered workflow each child runs",
    "prompt": "each child's prompt, a Mustache template (over the item)",
    "maxParallel": "children stepped at once",
    "onFailure": "a child that fails: `fail` fails the step, `collect` keeps its failure among the results",
    "description": "what the map does, one line",
}
AGENT_FIELDS = {
    "command": "the program (looked up on PATH)",
    "args": "its arguments; `{prompt_file}` is the prompt's path",
    "protocol": "`text` (prompt in, answer out), `step` (writes its own step), `human`, `python`",
    "timeout": "seconds for the whole step",
    "env": "fixed variables",
    "secrets": ".env keys it receives (none unless named); redacted wherever they appear",
    "reuse": "replay an earlier output for the same role, agent and prompt",
    "sandbox": "false: a process group only, no bubblewrap",
    "network": "false: loopback only",
    "writable": "paths it may write besides the workspace",
    "readable": "paths under /tmp it may read",
    "hide": "workspace files shown empty to it",
    "state": "its CLI's state directories, a private copy each run",
    "git": "the workspace's .git: `read`, `commit` or `write`",
    "python": "`module:function` (or `/path/file.py:function`): a function as the agent",
    "isolate": "`process`: the function in a child process of its own",
}
AGENT_ENVIRONMENT = {
    "UWF_THREAD": "the thread's id",
    "UWF_ROLE": "the role it answers as",
    "UWF_HEAD": "the step it follows (the thread's head)",
    "UWF_WORKFLOW": "the workflow's hash",
    "UWF_WORKSPACE": "the workspace (also its working directory)",
    "UWF_INSTRUCTION": "the moderator's instruction for this step, when there is one",
}



def render(topic: str | None) -> str:
    if topic is None:
        rows = "\n".join(f"- `uwf skill {name}`: {text}" for name, text in TOPICS.items())
        return f"# uwf skills\n\nMarkdown for an agent that drives uwf. Topics:\n\n{rows}\n"
    return {"cli": _cli, "author": _author, "develop": _develop}[topic]()


def _cli() -> str:
    from .parser import GROUPS, build_parser

    lines = [
        "# uwf: the command line",
        "",
        "Data commands print JSON on stdout. An error is one line on stderr (`uwf: error: ...`) and exit code 1;",
        "a usage error exits 2. A workflow is named by its registry name or hash, a thread by its id or a unique",
        "prefix, a node by its hash or a unique prefix. `--root DIR` (before the command) or `$UWF_STORAGE_ROOT`",
        "chooses the root: a directory or a `postgresql://` URL. The same operations are MCP tools under `uwf mcp`.",
        "",
    ]
    for group in GROUPS:
        parser = build_parser([group])
        for name, command in _commands(parser):
            if not name.split()[0] == group:
                continue
            lines += [f"## uwf {name}", "", command.description or (command.format_usage().strip()), "",
                      "```", command.format_usage().strip(), "```", ""]
            for action in command._actions:
                if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.dest == "root":
                    continue  # --root: said once, above
                flags = ", ".join(action.option_strings) or (action.metavar or action.dest)
                lines.append(f"- `{flags}`: {action.help}" if action.help else f"- `{flags}`")
            lines.append("")
    return "\n".join(lines)


def _commands(parser: argparse.ArgumentParser):
    """(the command's words, its parser) for every command in the tree that is not a group."""
    from .parser import is_group, walk

    return [(words, command) for words, command in walk(parser) if not is_group(command)]


def _author() -> str:
    lines = ["# uwf: authoring a workflow", "",
             "A workflow is a YAML file: roles whose agents answer a structured output (a JSON Schema), and a graph",
             "that routes on it. Check it with `uwf workflow lint FILE` (every problem with its line), register it",
             "with `uwf workflow put FILE` (a new version when the name exists), start a thread with",
             "`uwf thread start NAME -p PROMPT`.", "", "## The workflow's fields", ""]
    lines += [f"- `{name}`: {text}" for name, text in WORKFLOW_FIELDS.items()]
    lines += ["", "## A role's fields", ""] + [f"- `{name}`: {text}" for name, text in ROLE_FIELDS.items()]
    lines += ["", "## A map role (a child thread per item)", ""] + [f"- `{name}`: {text}" for name, text in MAP_FIELDS.items()]
    from ..workflow.scaffold_files import REVIEW_LOOP

    lines += ["", "## A complete example (`uwf init` writes it, with its offline answers)", "", "```yaml", REVIEW_LOOP.rstrip(), "```", ""]
    return "\n".join(lines)


def _develop() -> str:
    lines = ["# uwf: writing an agent", "",
             "An agent is any command (or a Python function) that config.yaml names. For each step uwf runs it",
             "once, contained (bubblewrap: it writes only its workspace; every process it starts ends with the step),",
             "and reads its answer. `uwf agent add NAME -- COMMAND ...` adds one; `uwf agent test NAME` runs one",
             "tiny step as a real one runs.", "",
             "## The text protocol", "",
             "The prompt comes on stdin (and in `/tmp/uwf-prompt.md`). The answer is printed on stdout: a YAML",
             "frontmatter block with the role's output (its `meta` schema), then prose. uwf extracts and checks it,",
             "and asks again with the schema's errors when it does not hold. Lines on stderr are the step's live log.", "",
             "## The step protocol", "",
             "A kit agent (`uwf_core.agent_kit`) reads its context and writes its own step node; uwf checks the",
             "node and moves the head by compare-and-set.", "",
             "## What an agent is given", ""]
    lines += [f"- `{name}`: {text}" for name, text in AGENT_ENVIRONMENT.items()]
    lines += ["", "and only the `.env` keys its entry names in `secrets`.", "", "## An agent's entry in config.yaml", ""]
    lines += [f"- `{name}`: {text}" for name, text in AGENT_FIELDS.items()]
    lines.append("")
    return "\n".join(lines)
