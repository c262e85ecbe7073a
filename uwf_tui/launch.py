"""`uwf-tui` and `python -m uwf_tui`: the arguments, the root opened once (or the demo root set up),
refused in one line when it cannot be used, then the workbench in this terminal or, with --serve,
served to a browser (serve.py, imported only then)."""

from __future__ import annotations

import argparse
import os
import sys

from uwf_core.api import Repo, UwfError, not_a_directory, set_trace_warning_handler

from .app import UwfApp
from .runner import WorkerThreads


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="uwf-tui", description="The uwf workbench: workflows, threads and the CAS in a terminal, or served to a browser.")
    parser.add_argument("--root", metavar="ROOT", help="storage root: a directory or a postgresql:// URL (default: $UWF_STORAGE_ROOT, else ~/.uwf)")
    parser.add_argument(
        "--demo",
        action="store_true",
        help="set up a demo root (./.uwf-demo unless --root) with the examples and the scripted agent, and open it",
    )
    serving = parser.add_argument_group("in a browser")
    serving.add_argument("--serve", action="store_true", help="serve the workbench to a browser (textual-serve); prints the URL to open")
    serving.add_argument("--host", help="the address to listen on (default: 127.0.0.1, this machine only)")
    serving.add_argument("--port", type=int, help="the port to listen on (default: 8765; 0 picks a free one)")
    serving.add_argument("--token", help="the token every request needs (default: $UWF_SERVE_TOKEN, else a random one)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from uwf_core.api import speak_cli

    speak_cli()  # its users read commands and flags: --root, `uwf thread ...`
    if not args.serve and (args.host is not None or args.port is not None or args.token is not None):
        parser.error("--host, --port and --token go with --serve")
    try:
        if args.demo:
            from .demo import default_demo_root, setup_demo

            repo = setup_demo(args.root or default_demo_root())
        else:
            repo = Repo.open(args.root)
    except UwfError as exc:
        sys.stderr.write(f"uwf-tui: error: {exc.message}\n")
        return 1
    problem = _unusable_root(repo.location)
    if problem:
        sys.stderr.write(f"uwf-tui: error: {problem}\n")
        return 1
    os.environ["UWF_STORAGE_ROOT"] = repo.location  # the agents this session starts open the same root
    if args.serve:
        return _serve(repo.location, args)
    app = UwfApp(repo)
    app.run()
    set_trace_warning_handler(None)  # spans still queued go at exit; a warning then is the terminal's again
    if len(app.runner) and app.worker_threads.alive():  # a python agent's function that neither returned nor checked its context
        sys.stderr.write(
            f"uwf-tui: a step running in this process did not stop within {WorkerThreads.GRACE_SECONDS:g}s (a python agent's "
            f"function stops when it returns or calls ctx.check()); leaving without it: its attempt is recorded as killed "
            f"when its thread next steps\n"
        )
    return 0


def _serve(location: str, args: argparse.Namespace) -> int:
    from .serve import (  # aiohttp and textual-serve, only here
        ServeError,
        ServeOptions,
        serve,
    )

    try:
        return serve(ServeOptions(location, host=args.host or "127.0.0.1", port=8765 if args.port is None else args.port, token=args.token))
    except ServeError as exc:
        sys.stderr.write(f"uwf-tui: error: {exc}\n")
        return 1


def _unusable_root(location: str) -> str | None:
    """What makes a root impossible to open at all: not a directory, unreadable, or (when it does
    not exist yet) impossible to create. A damaged root still opens, showing the damage. (A
    PostgreSQL root was reached when it was opened.)"""
    if "://" in location:
        return None
    if os.path.isdir(location):
        return None if os.access(location, os.R_OK | os.X_OK) else f"the root {location} cannot be read (permission denied)"
    problem = not_a_directory(location)  # a file, or a symbolic link that leads nowhere (a loop)
    if problem:
        return problem
    parent = os.path.dirname(location.rstrip(os.sep)) or os.sep
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        return f"the root {location} cannot be created: {parent} is a file, not a directory"
    return _creatable(location, parent)


def _creatable(location: str, parent: str) -> str | None:
    """A missing root opens empty, to be created by the first write: check now that it can be
    (os.access is not enough: root passes it on /proc), with a directory made and removed at once."""
    import tempfile

    try:
        os.rmdir(tempfile.mkdtemp(prefix=".uwf-tui-probe-", dir=parent))
    except OSError as exc:
        return f"the root {location} cannot be created in {parent}: {exc.strerror or exc}"
    return None
