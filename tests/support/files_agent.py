"""A text-protocol test agent that works on files (tests only).

Each call reads count.txt in its working directory (0 when missing), writes the next number
there, adds step<N>.txt, appends a line to log.txt, and answers `n: N` in a frontmatter block.
With --delete NAME it also removes NAME when present.

    python files_agent.py [--delete NAME]
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    sys.stdin.read()
    here = Path.cwd()
    count_file = here / "count.txt"
    n = int(count_file.read_text()) + 1 if count_file.exists() else 1
    count_file.write_text(f"{n}\n")
    (here / f"step{n}.txt").write_text(f"made by step {n}\n")
    with open(here / "log.txt", "a") as log:
        log.write(f"step {n}\n")
    if "--delete" in sys.argv:
        target = here / sys.argv[sys.argv.index("--delete") + 1]
        if target.exists():
            target.unlink()
    print(f"---\nn: {n}\n---\nDid step {n}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
