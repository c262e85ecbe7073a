"""Entry point of `uwf`. Parses arguments, calls one command handler, maps
user errors to `uwf: error: ...` and exit code 1.

Start-up is the hot path (`uwf` runs once per step): this module imports
only argparse, and `--version` is answered before even that.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        from ..version import __version__

        sys.stdout.write(f"uwf {__version__}\n")
        return 0
    from ..errors import speak_cli
    from .output import EXIT_ERROR, EXIT_USAGE, error
    from .parser import build_parser

    speak_cli()
    parser = build_parser(args)
    namespace = _parse(parser, args)
    if not hasattr(namespace, "handler"):
        parser.print_help(sys.stderr)
        return 2
    from ..errors import UsageError, UwfError

    try:
        return namespace.handler(namespace) or 0
    except UsageError as exc:
        error(exc.message)
        return EXIT_USAGE
    except UwfError as exc:
        return error(exc.message)
    except KeyboardInterrupt:
        sys.stderr.write("uwf: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_ERROR


def _parse(parser, args: list[str]):
    """A command that takes a command line of its own (`uwf agent add NAME [options] -- CMD ...`)
    gets everything after the first `--` as `tail`, wherever its options stand; any other
    command parses `--` as argparse always does."""
    if "--" in args:
        cut = args.index("--")
        namespace = parser.parse_args(args[:cut])
        if getattr(namespace, "takes_tail", False):
            namespace.tail = args[cut + 1 :]
            return namespace
    return parser.parse_args(args)


if __name__ == "__main__":
    sys.exit(main())
