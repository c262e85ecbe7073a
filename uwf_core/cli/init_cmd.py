"""`uwf init [DIR] [--template T]`: a workflow project that runs offline at once."""

from __future__ import annotations

from .output import emit_json, note


def register(groups, common) -> None:
    from ..workflow.scaffold import TEMPLATES

    parser = groups.add_parser(
        "init",
        help="a new workflow project (workflow, offline answers or python agents, README, test) in DIR",
        description="Write a workflow project into DIR (new or empty): " + "; ".join(f"{name}: {text}" for name, text in TEMPLATES.items()) + ".",
        parents=[common],
    )
    parser.add_argument("directory", nargs="?", default=".", metavar="DIR", help="where (default: the current directory, if empty)")
    parser.add_argument("--template", choices=list(TEMPLATES), default="review-loop", help="the project (default: review-loop)")
    parser.set_defaults(handler=cmd_init)


def cmd_init(args) -> int:
    import os

    from ..workflow.scaffold import init_project

    written = init_project(args.directory, args.template)
    note(f"a {args.template} project in {os.path.abspath(args.directory)}: its README.md says how to run it")
    emit_json({"directory": os.path.abspath(args.directory), "template": args.template, "files": written})
    return 0
