"""`uwf-tui --serve`: the workbench in real headless Chromium, and the token every request needs."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from browser import VIEWPORT, chromium_path, launch, open_workbench, served, uwf_tui

TOKEN = "t0ken-of-the-tests-0123456789"


def _heads(uwf, root) -> dict[str, str]:
    listed = uwf("--root", str(root), "thread", "list", "--all")  # a thread done in one step is archived
    assert listed.code == 0, listed.err
    return {thread["thread"]: thread["head"] for thread in json.loads(listed.out)}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _request(port: int, path: str, *, websocket: bool = False, extra: tuple[str, ...] = ()) -> tuple[int, bytes]:
    """One raw HTTP/1.1 request (a websocket handshake when asked): the status and the body."""
    headers = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", *extra]
    if websocket:
        headers += ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]
    else:
        headers.append("Connection: close")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(("\r\n".join(headers) + "\r\n\r\n").encode())
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(65536)
            if not chunk:
                break
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        status = int(head.split()[1])
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), None)
        if status != 101:
            while length is not None and len(body) < length:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                body += chunk
    return status, body


def _listening_addresses(port: int) -> set[str]:
    """The local addresses of the sockets listening on the port (from /proc/net/tcp)."""
    found = set()
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:
            found.add(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
    return found


@pytest.fixture
def chromium():
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    path = chromium_path()
    if path is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run does it)")
    return path


def test_step_by_keypress_in_a_real_browser(chromium, tmp_path, uwf):
    """The new user's path: `uwf-tui --serve --demo`, open the printed URL, press 2 then s."""
    from playwright.sync_api import sync_playwright

    root = tmp_path / "demo"
    with served("--demo", "--root", str(root), "--port", str(_free_port())) as server:
        assert server.url.startswith("http://127.0.0.1:")
        before = _heads(uwf, root)
        assert len(before) == 3  # the demo's threads, all active
        selected = next(iter(before))  # newest first, as the workbench lists them: the cursor's row
        with sync_playwright() as playwright:
            browser = launch(playwright)
            try:
                page = browser.new_page(viewport=VIEWPORT)
                screen = open_workbench(page, server.url)
                page.keyboard.press("2")
                mark = screen.mark()
                page.keyboard.press("s")
                screen.wait_for("analyst", since=mark)  # the step's role, drawn in the timeline
                deadline = time.monotonic() + 30
                while _heads(uwf, root)[selected] == before[selected] and time.monotonic() < deadline:
                    time.sleep(0.2)
                page.screenshot(path=str(tmp_path / "browser.png"))
            finally:
                browser.close()
        after = _heads(uwf, root)
        assert after[selected] != before[selected], "the selected thread's head did not move"
        assert {thread for thread in before if after[thread] != before[thread]} == {selected}
        assert server.stop() == 0
        # The server reaps its sessions before it exits: nothing of its group is left, at once.
        assert not server.group_alive(), f"a served uwf-tui outlived the server: {server.members()}"


def test_stopping_the_server_ends_the_open_sessions(chromium, tmp_path):
    """SIGTERM with a browser still connected: its uwf-tui quits, nothing is left running."""
    from playwright.sync_api import sync_playwright

    with served("--demo", "--root", str(tmp_path / "demo"), "--port", "0") as server:
        with sync_playwright() as playwright:
            browser = launch(playwright)
            try:
                open_workbench(browser.new_page(), server.url)
                assert server.sessions(), "no uwf-tui session was started for the browser"
                assert server.stop() == 0
                assert not server.group_alive(), f"a served uwf-tui outlived the server: {server.members()}"
            finally:
                browser.close()


def test_every_request_needs_the_token(tmp_path):
    """Page, assets and websocket: without the token, or with a wrong one, a bare 403."""
    env = {**os.environ, "UWF_SERVE_TOKEN": TOKEN}
    with served("--root", str(tmp_path / "root"), "--port", "0", env=env) as server:
        port = int(server.base.rsplit(":", 1)[1])
        assert server.url == f"http://127.0.0.1:{port}/{TOKEN}/"
        if os.path.exists("/proc/net/tcp"):
            assert _listening_addresses(port) == {"127.0.0.1"}  # this machine only, by default
        wrong = "x" * len(TOKEN)
        for path in ["/", "/ws", "/static/js/textual.js", "/favicon.ico", f"/{wrong}/", f"/{wrong}/static/js/textual.js",
                     f"/{TOKEN[:-1]}/", f"/{TOKEN[:-1]}", f"/{TOKEN}x/", f"/{TOKEN}x", f"/?token={TOKEN}"]:
            assert _request(port, path) == (403, b""), path
        assert _request(port, f"/{TOKEN}")[0] == 308  # the URL without its last slash: on to the page
        for path in ["/ws", f"/{wrong}/ws", "/ws?width=80&height=24", f"/{wrong}/ws?width=80&height=24"]:
            assert _request(port, path, websocket=True) == (403, b""), path
        status, page = _request(port, f"/{TOKEN}/")
        assert status == 200
        assert f"ws://127.0.0.1:{port}/{TOKEN}/ws".encode() in page  # every URL the page uses carries it
        assert _request(port, f"/{TOKEN}/static/js/textual.js")[0] == 200
        assert server.stop() == 0
        log = server.process.stdout.read()
        assert '"GET /<token>/static/js/textual.js" 200' in log and '"GET /favicon.ico" 403' in log
        assert TOKEN not in log  # the access log never repeats the token


def test_the_log_is_on_stderr_and_the_static_files_have_no_listing(tmp_path):
    """stdout says where to go; the requests go to stderr (as docs/how-to/tui-in-browser.md says); /static/ lists nothing."""
    import subprocess

    env = {**os.environ, "UWF_SERVE_TOKEN": TOKEN}
    with served("--root", str(tmp_path / "root"), "--port", "0", env=env, stderr=subprocess.PIPE) as server:
        port = int(server.base.rsplit(":", 1)[1])
        listing = [_request(port, f"/{TOKEN}/static/{folder}") for folder in ("", "js/")]
        assert _request(port, f"/{TOKEN}/static/js/textual.js")[0] == 200
        assert server.stop() == 0
        out, err = server.process.stdout.read(), server.process.stderr.read()
    assert all(status in (403, 404) and b"Index of" not in body for status, body in listing), listing
    assert '"GET /<token>/static/js/textual.js" 200' in err and "GET" not in out + "".join(server.output)


def test_behind_a_tls_proxy_the_page_uses_https_and_wss(tmp_path):
    """docs/how-to/tui-in-browser.md suggests a TLS proxy in front: the page's asset and websocket URLs follow the
    proxy's X-Forwarded-Proto and -Host, so the browser does not mix ws:// into an https page."""
    env = {**os.environ, "UWF_SERVE_TOKEN": TOKEN}
    with served("--root", str(tmp_path / "root"), "--port", "0", env=env) as server:
        port = int(server.base.rsplit(":", 1)[1])
        proxied = ("X-Forwarded-Proto: https", "X-Forwarded-Host: uwf.example.org")
        status, page = _request(port, f"/{TOKEN}/", extra=proxied)
        assert status == 200
        assert f"wss://uwf.example.org/{TOKEN}/ws".encode() in page and b"ws://127.0.0.1" not in page
        status, page = _request(port, f"/{TOKEN}/", extra=("X-Forwarded-Proto: javascript", 'X-Forwarded-Host: x"><script>'))
        assert status == 200 and f"ws://127.0.0.1:{port}/{TOKEN}/ws".encode() in page  # only what a URL may hold is taken
        assert b'x"><script>' not in page
        assert server.stop() == 0


def test_a_token_is_long_enough_and_fits_a_url(tmp_path):
    for token in ["short", "has a space in it, sixteen+", "slash/in/the/token/here"]:
        completed = subprocess.run([*uwf_tui(), "--serve", "--root", str(tmp_path), "--token", token], capture_output=True, text=True, timeout=30)
        assert completed.returncode == 1
        assert completed.stderr == "uwf-tui: error: the token must be at least 16 characters, letters, digits, - and _ only\n"


def test_serving_options_go_with_serve(tmp_path):
    completed = subprocess.run([*uwf_tui(), "--root", str(tmp_path), "--port", "9000"], capture_output=True, text=True, timeout=30)
    assert completed.returncode == 2
    assert "--host, --port and --token go with --serve" in completed.stderr


def test_a_port_in_use_is_one_error_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        completed = subprocess.run([*uwf_tui(), "--serve", "--root", str(tmp_path), "--port", str(port)], capture_output=True, text=True, timeout=30)
    assert completed.returncode == 1
    assert completed.stderr.startswith(f"uwf-tui: error: cannot listen on 127.0.0.1:{port}: ")
    assert completed.stderr.count("\n") == 1


def _session(command: str):
    from textual_serve.download_manager import DownloadManager

    from uwf_tui.serve import Session

    async def ignore(*args) -> None:
        pass

    return Session(command, write_bytes=ignore, write_str=ignore, close=ignore, download_manager=DownloadManager())


def test_a_session_ends_when_its_process_has_exited_not_when_its_output_closes():
    """textual-serve's stop() returns at the end of the output; the server must wait for the exit."""

    async def scenario() -> int | None:
        session = _session("echo __GANGLION__; sleep 0.2; exec 1>&-; sleep 1")  # closes its output, exits a second later
        await session.start(80, 24)
        await session.end()
        return session._process.returncode  # None had end() returned at the end of the output

    assert asyncio.run(scenario()) == 0


def test_a_session_that_does_not_quit_is_killed(monkeypatch):
    import uwf_tui.serve as serve

    monkeypatch.setattr(serve, "QUIT_GRACE", 0.5)

    async def scenario() -> int | None:
        session = _session("exec sleep 60")  # never reads its stdin, never closes its output
        await session.start(80, 24)
        await session.end()
        return session._process.returncode

    assert asyncio.run(scenario()) == -signal.SIGKILL


def test_the_served_command_names_this_python_and_the_root():
    from uwf_tui.serve import served_command

    assert served_command("/tmp/a root") == f"exec {sys.executable} -P -m uwf_tui --root '/tmp/a root'"
    # A password stays off the command line (ps shows it); the session reads UWF_STORAGE_ROOT.
    assert served_command("postgresql://me:secret@db/uwf") == f"exec {sys.executable} -P -m uwf_tui"
    assert served_command("postgresql:///uwf?host=/tmp/s") == f"exec {sys.executable} -P -m uwf_tui --root 'postgresql:///uwf?host=/tmp/s'"


def test_the_served_command_runs_no_module_from_the_directory_it_is_started_in(tmp_path):
    """textual-serve starts each session in the server's current directory: a workspace where an
    agent wrote a `uwf_tui` package (or a stdlib name) must not be what the session imports."""
    from uwf_tui.serve import served_command

    marker = tmp_path / "ran"
    planted = tmp_path / "ws" / "uwf_tui"
    planted.mkdir(parents=True)
    (planted / "__init__.py").write_text("")
    (planted / "__main__.py").write_text(f"open({str(marker)!r}, 'w').write('agent code ran')\nprint('hijacked')\n")
    (tmp_path / "ws" / "json.py").write_text(f"open({str(marker)!r}, 'w').write('agent code ran')\n")
    done = subprocess.run(["sh", "-c", served_command(str(tmp_path / "root")) + " --help"], cwd=tmp_path / "ws",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "usage: uwf-tui" in done.stdout and "hijacked" not in done.stdout
    assert not marker.exists()
