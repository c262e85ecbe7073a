"""Regenerate screenshots/ from the fixed demo root: SVG (Textual's export) and,
when rsvg-convert is installed (Debian's librsvg2-bin), PNG.

    .venv/bin/python scripts/screenshots.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "support"))

from tui_capture import SMALL, capture  # noqa: E402

VIEWS = ["workflows", "threads", "attempt", "cas", "help", "diff", "running"]


def main() -> None:
    out = REPO / "screenshots"
    out.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        shots = capture(VIEWS, work, slow_agent=True)
    with tempfile.TemporaryDirectory() as work:
        shots.update({f"{name}-80x24": svg for name, svg in capture(["threads", "diff", "running"], work, slow_agent=True, size=SMALL).items()})
    converter = shutil.which("rsvg-convert")
    for name, svg in shots.items():
        path = out / f"{name}.svg"
        path.write_text(svg)
        if converter:
            subprocess.run([converter, str(path), "-o", str(out / f"{name}.png")], check=True)
        print(f"wrote {path}" + (" and .png" if converter else ""))


if __name__ == "__main__":
    main()
