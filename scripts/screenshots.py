"""Regenerate screenshots/ from the fixed demo root: SVG (Textual's export) and,
when rsvg-convert is installed (Debian's librsvg2-bin), PNG; and browser.png, the
workbench served by `uwf-tui --serve --demo` in headless Chromium, once a thread was
stepped by keypress (when Debian's chromium and playwright are installed).

    .venv/bin/python scripts/screenshots.py            # all of them
    .venv/bin/python scripts/screenshots.py browser    # browser.png only
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "support"))

from inbox_capture import capture_inbox  # noqa: E402
from tui_capture import SMALL, SIZE, capture  # noqa: E402

VIEWS = ["workflows", "threads", "attempt", "cas", "help", "diff", "running"]


def main() -> None:
    out = REPO / "screenshots"
    out.mkdir(exist_ok=True)
    if sys.argv[1:] != ["browser"]:
        terminal(out)
    browser(out)


def terminal(out: Path) -> None:
    with tempfile.TemporaryDirectory() as work:
        shots = capture(VIEWS, work, slow_agent=True)
    with tempfile.TemporaryDirectory() as work:
        shots.update({f"{name}-80x24": svg for name, svg in capture(["threads", "diff", "running"], work, slow_agent=True, size=SMALL).items()})
    for suffix, size in (("", SIZE), ("-80x24", SMALL)):  # the Inbox, on a root of its own where two threads ask a person
        with tempfile.TemporaryDirectory() as work:
            shots[f"inbox{suffix}"] = capture_inbox(work, size)
    converter = shutil.which("rsvg-convert")
    for name, svg in shots.items():
        path = out / f"{name}.svg"
        path.write_text(svg)
        if converter:
            subprocess.run([converter, str(path), "-o", str(out / f"{name}.png")], check=True)
        print(f"wrote {path}" + (" and .png" if converter else ""))


def browser(out: Path) -> None:
    """What a new user sees: the demo served, opened in Chromium, `2` then `s` pressed."""
    from browser import VIEWPORT, chromium_path, launch, open_workbench, served

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("skipped browser.png: playwright is not installed (pip install -e '.[test]')")
        return
    if chromium_path() is None:
        print("skipped browser.png: Chromium is not installed (apt-get install chromium)")
        return
    with tempfile.TemporaryDirectory() as work, served(
        "--demo", "--root", f"{work}/.uwf-demo", "--port", "0", env={**os.environ, "HOME": work}
    ) as server:
        root = f"{work}/.uwf-demo"  # the title bar shows it as ~/.uwf-demo, as it would be in a home
        before = _heads(root)
        with sync_playwright() as playwright:
            chromium = launch(playwright)
            page = chromium.new_page(viewport=VIEWPORT)
            open_workbench(page, server.url)
            page.keyboard.press("2")
            page.keyboard.press("s")
            deadline = time.monotonic() + 30
            while _heads(root) == before and time.monotonic() < deadline:
                time.sleep(0.2)
            page.wait_for_timeout(1500)  # the poll and the redraw after the step
            page.screenshot(path=str(out / "browser.png"))
            chromium.close()
    print(f"wrote {out / 'browser.png'}")


def _heads(root: str) -> dict[str, str]:
    uwf = Path(sys.executable).with_name("uwf")
    listed = subprocess.run([str(uwf), "--root", root, "thread", "list", "--all"], capture_output=True, text=True, check=True)
    return {thread["thread"]: thread["head"] for thread in json.loads(listed.stdout)}


if __name__ == "__main__":
    main()
