"""Entry point of `uwf-tui` (the workbench is not built yet)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    sys.stderr.write("uwf-tui: error: the terminal workbench is not built yet; use the `uwf` command for now\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
