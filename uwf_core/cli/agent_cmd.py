"""`uwf agent list | presets | add | remove | test`: the agents a root's config names."""

from __future__ import annotations

import sys

from .common import command, group, positive_number, repo_of
from .output import EXIT_ERROR, emit_json, note, stream, warn


def register(groups, common) -> None:
    sub = group(groups, common, "agent", "list, add, remove and test the agents in config.yaml")
    command(
        sub, common, "list", cmd_list,
        "configured and built-in agents (JSON: name, command, args, protocol, timeout, secrets, source, sandbox, network, containment)",
    )
    command(sub, common, "presets", cmd_presets, "the ready-made entries for known agent CLIs (add one with `uwf setup --agent-preset NAME`)")
    add = command(sub, common, "add", cmd_add, "add an agent: uwf agent add NAME [options] -- COMMAND [ARG...], or --python MODULE:FUNCTION")
    add.usage = "uwf agent add NAME [options] -- COMMAND [ARG...]  |  uwf agent add NAME --python MODULE:FUNCTION [options]"
    add.add_argument("name", help="the alias roles and --agent use")
    add.add_argument(
        "--protocol",
        choices=("text", "step"),
        help="text: the CLI reads a prompt and prints an answer (the default); step: a uwf step-protocol agent "
        "(the default for uwf-script, uwf-builtin and uwf-subflow)",
    )
    add.add_argument(
        "--python", metavar="MODULE:FUNCTION",
        help="a Python function as the agent (no command): a module on the Python path, or /path/to/file.py:function",
    )
    add.add_argument(
        "--isolate", action="store_true",
        help="python: call the function in a child process of its own (contained; killed at its timeout)",
    )
    add.add_argument("--timeout", type=positive_number, metavar="S", help="the step's time limit in seconds")
    add.add_argument(
        "--secret", action="append", default=[], metavar="VAR", help="a .env key the agent receives (repeatable; none by default)"
    )
    add.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="a fixed environment variable (repeatable)")
    add.add_argument(
        "--writable", action="append", default=[], metavar="PATH",
        help="a path besides the workspace the agent may write, e.g. its CLI's state directory (repeatable; ~ and $VAR expand)",
    )
    add.add_argument(
        "--readable", action="append", default=[], metavar="PATH",
        help="a path the agent may only read: one under /tmp, or a file inside a --writable directory (repeatable)",
    )
    add.add_argument("--hide", action="append", default=[], metavar="FILE", help="a workspace file the agent is shown empty (repeatable)")
    add.add_argument(
        "--state", action="append", default=[], metavar="DIR",
        help="its CLI's state directory, given to it as a private copy each run: nothing it writes there reaches yours (repeatable)",
    )
    add.add_argument(
        "--git", choices=("read", "commit", "write"), default="read",
        help="the workspace's .git: read (a private copy, thrown away; the default), commit (its own commits are kept), "
        "write (the real one: an agent you trust)",
    )
    add.add_argument("--no-network", dest="network", action="store_false", help="no network in its sandbox (loopback only)")
    add.add_argument(
        "--no-sandbox", dest="sandbox", action="store_false",
        help="run it without a sandbox (a process group only): it can then write anywhere you can",
    )
    add.add_argument("--replace", action="store_true", help="replace an agent of that name")
    add.add_argument(
        "misplaced", nargs="*", metavar="-- COMMAND [ARG...]",
        help="the command line, after --; in text agents {prompt}, {prompt_file}, {thread} and {role} are filled in (else the prompt is on stdin)",
    )
    add.set_defaults(takes_tail=True, tail=None)
    remove = command(sub, common, "remove", cmd_remove, "remove an agent from config.yaml")
    remove.add_argument("name")
    test = command(sub, common, "test", cmd_test, "send a tiny prompt through an agent as a real step would; leaves no trace")
    test.add_argument("name", help="an agent alias (or a command line, run with the step protocol)")
    test.add_argument("--timeout", type=positive_number, metavar="S", help="time limit (default: the entry's timeout up to 300, else 120)")


def cmd_list(args) -> int:
    from ..config.agents import agent_entries

    emit_json([_with_containment(entry) for entry in agent_entries(repo_of(args).config)])
    return 0


def _with_containment(entry) -> dict:
    """The entry, and how it would run here: in a bubblewrap sandbox, or a process group only."""
    from ..engine.contain.sandbox import BUBBLEWRAP, PROCESS_GROUP, containment

    data = entry.to_json()
    if entry.protocol == "python" and not entry.isolate:
        data["containment"] = "none"
        data["containmentReason"] = "a python function called in uwf's own process (isolate: process runs it contained)"
    elif entry.protocol != "human":
        box = containment()
        data["containment"] = BUBBLEWRAP if entry.sandbox and box.kind == BUBBLEWRAP else PROCESS_GROUP
        if data["containment"] == PROCESS_GROUP:
            data["containmentReason"] = "sandbox: false in its entry" if not entry.sandbox else box.reason
    return data


def cmd_presets(args) -> int:
    from ..config.agents import preset_entries

    emit_json([entry.to_json() for entry in preset_entries()])
    return 0


def cmd_add(args) -> int:
    from ..config.agents import add_agent, new_agent
    from ..engine.resolve import parse_assignments
    from ..errors import UsageError

    argv = args.tail
    if args.python and (argv or args.misplaced):
        raise UsageError("give --python MODULE:FUNCTION or a command after --, not both")
    if args.isolate and not args.python:
        raise UsageError("--isolate is for --python agents")
    if not args.python and (args.misplaced or not argv):
        raise UsageError(f"put the agent's command after --: uwf agent add {args.name} [options] -- COMMAND [ARG...]")
    env = parse_assignments(args.env, "KEY=VALUE") if args.env else {}
    agent = new_agent(
        args.name, argv or [], protocol=args.protocol, timeout=args.timeout, secrets=args.secret, env=env,
        sandbox=args.sandbox, network=args.network, writable=args.writable, readable=args.readable, hide=args.hide,
        state=args.state, git=args.git, python=args.python, isolate=args.isolate,
    )
    repo = repo_of(args)
    repo.edit_config(lambda config: add_agent(config, agent, replace_existing=args.replace))
    note(f"added agent '{agent.name}' to {repo.backend.config.location}; try it with `uwf agent test {agent.name}`")
    emit_json(agent.to_dict() | {"name": agent.name})
    return 0


def cmd_remove(args) -> int:
    from ..config.agents import remove_agent

    repo = repo_of(args)
    repo.edit_config(lambda config: remove_agent(config, args.name))
    note(f"removed agent '{args.name}' from {repo.backend.config.location}")
    return 0


def cmd_test(args) -> int:
    from ..engine.check import check_agent

    repo = repo_of(args)
    echo = (lambda line: stream(line, "  | ")) if sys.stderr.isatty() else None
    result = check_agent(repo, args.name, timeout=args.timeout, on_output=echo)
    emit_json(result.to_json())
    if result.warning:
        warn(result.warning)
    if result.ok:
        note(f"agent '{result.agent}' ok in {result.seconds:.1f}s")
        return 0
    note(f"agent '{result.agent}' failed after {result.seconds:.1f}s: {result.error}")
    return EXIT_ERROR
