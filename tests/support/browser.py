"""`uwf-tui --serve` in a real browser: start the server, open its URL in headless Chromium.

Shared by tests/tui/test_tui_serve.py and scripts/screenshots.py. Chromium is Debian's
(`apt-get install chromium`, which `.ci/run` does), driven by the `playwright` package
with `executable_path`: no browser is ever downloaded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 900}


def chromium_path() -> str | None:
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def uwf_tui() -> list[str]:
    script = Path(sys.executable).with_name("uwf-tui")
    return [str(script)] if script.exists() else [sys.executable, "-m", "uwf_tui"]


class Served:
    """A running `uwf-tui --serve`: its URL, its process (the leader of its own process group,
    so the sessions it starts can be found, and killed if it ever leaves them behind)."""

    def __init__(self, process: subprocess.Popen, url: str, output: list[str]) -> None:
        self.process = process
        self.url = url
        self.output = output

    @property
    def base(self) -> str:
        """The URL without the token: scheme, host and port."""
        return self.url.split("/", 3)[0] + "//" + self.url.split("/", 3)[2]

    def stop(self, timeout: float = 15) -> int:
        """SIGTERM, as ctrl+c would; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def group_alive(self) -> bool:
        try:
            os.killpg(self.process.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def _group(self) -> Iterator[tuple[int, str, int, str]]:
        """The processes of its group (from /proc): pid, state, parent and command line."""
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue  # gone meanwhile
            if int(fields[2]) == self.process.pid:
                yield int(stat.parent.name), fields[0], int(fields[1]), command

    def members(self) -> list[str]:
        """What is left of the group, for a failure message."""
        return [f"{pid} {state} ppid={parent} {command}" for pid, state, parent, command in self._group()]

    def sessions(self) -> list[str]:
        """The command lines of the uwf-tui processes the server started for browsers."""
        return [command for pid, _, _, command in self._group() if pid != self.process.pid and "-m uwf_tui" in command]


@contextlib.contextmanager
def served(*args: str, env: dict | None = None, timeout: float = 30, stderr=subprocess.STDOUT) -> Iterator[Served]:
    """Run `uwf-tui --serve ARGS` until it prints the URL to open; stop it afterwards. `stderr`:
    where its standard error goes (with its output, by default)."""
    process = subprocess.Popen(
        [*uwf_tui(), "--serve", *args],
        stdout=subprocess.PIPE,
        stderr=stderr,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )
    output: list[str] = []
    deadline = time.monotonic() + timeout
    url = None
    try:
        while url is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                raise AssertionError(f"uwf-tui --serve exited ({process.wait()}) without a URL:\n{''.join(output)}")
            output.append(line)
            if line.startswith("open http"):
                url = line.split()[1]
        if url is None:
            raise AssertionError(f"uwf-tui --serve printed no URL in {timeout}s:\n{''.join(output)}")
        yield Served(process, url, output)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # nothing of it outlives the test
        process.wait()
        process.stdout.close()
        if process.stderr is not None:
            process.stderr.close()


def launch(playwright):
    return playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)


class Screen:
    """What the served app has sent the page: xterm.js draws on a canvas, so the text to wait
    for is read from the websocket's frames (screen updates, escape sequences and all)."""

    def __init__(self, page) -> None:
        self.page = page
        self.frames: list[str] = []
        page.on("websocket", lambda socket: socket.on("framereceived", self._received))

    def _received(self, payload) -> None:
        self.frames.append(payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload)

    def mark(self) -> int:
        """Where the frames are now: wait_for(..., since=mark) ignores what came before."""
        return len(self.frames)

    def wait_for(self, *texts: str, since: int = 0, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            received = "".join(self.frames[since:])
            if all(text in received for text in texts):
                return
            self.page.wait_for_timeout(100)  # lets playwright deliver the frame events
        missing = [text for text in texts if text not in "".join(self.frames[since:])]
        raise AssertionError(f"the browser never received {missing!r} ({len(self.frames) - since} frames)")


def open_workbench(page, url: str) -> Screen:
    """Open the URL; return once the workbench has drawn its thread list, with the keyboard
    going to the terminal."""
    screen = Screen(page)
    page.goto(url, wait_until="domcontentloaded")  # "load" would wait for fonts.googleapis.com, offline here
    screen.wait_for("Threads", "workflow", "status")
    page.focus("textarea.xterm-helper-textarea")  # what a click on the terminal does
    return screen
