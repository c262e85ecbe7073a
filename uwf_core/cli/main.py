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
    from .output import EXIT_ERROR, error
    from .parser import build_parser

    parser = build_parser(args)
    namespace = parser.parse_args(args)
    if not hasattr(namespace, "handler"):
        parser.print_help(sys.stderr)
        return 2
    from ..errors import UwfError

    try:
        return namespace.handler(namespace) or 0
    except UwfError as exc:
        return error(exc.message)
    except KeyboardInterrupt:
        sys.stderr.write("uwf: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
