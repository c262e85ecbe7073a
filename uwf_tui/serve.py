"""`uwf-tui --serve`: the same workbench in a browser tab, through textual-serve.

Each browser session runs its own `uwf-tui` process on the server (textual-serve's
model), opening the same root. The workbench runs agents, which run commands, so
serving is guarded: it listens on 127.0.0.1 unless told otherwise, and every
request (the page, its assets, the websocket, downloads) must carry a token as
the first segment of its path. textual-serve builds every URL it hands the
browser from its router, so mounting its whole application under `/<token>/`
puts the token in all of them; a middleware on the outer application answers
anything else with a bare 403. Imported only by `--serve`: plain `uwf-tui` never
loads aiohttp.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import re
import secrets
import shlex
import signal
import socket
import sys
from dataclasses import dataclass

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from textual_serve.app_service import AppService
from textual_serve.server import Server

from uwf_core.api import display_location

TOKEN_ENV = "UWF_SERVE_TOKEN"
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{16,}")  # one path segment, needing no escaping, long enough to guess never
WILDCARD_HOSTS = {"", "0.0.0.0", "::"}
QUIT_GRACE = 10.0  # seconds a session's uwf-tui has to exit once told to quit, before it is killed:
# more than its own wait for a running step to cancel (WorkerThreads.GRACE_SECONDS), so a step ends in order
log = logging.getLogger("textual-serve")


class ServeError(Exception):
    """A problem the user can fix (a bad token, a port in use): one line, exit code 1."""


@dataclass(frozen=True)
class ServeOptions:
    location: str  # the opened root, already resolved
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None  # None: a fresh random one


def pick_token(given: str | None) -> str:
    """--token, else $UWF_SERVE_TOKEN, else a random one; checked for its shape."""
    token = given or os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(24)
    if not TOKEN_SHAPE.fullmatch(token):
        raise ServeError("the token must be at least 16 characters, letters, digits, - and _ only")
    return token


def served_command(location: str) -> str:
    """The shell command textual-serve starts per browser session: this interpreter (the
    venv's, not whatever `python` is on PATH) running the workbench over the same root. A
    URL with a password stays out of the command line, where `ps` would show it: the child
    gets it from UWF_STORAGE_ROOT, which main() has set. textual-serve runs it through a shell,
    which `exec` replaces, so the session's process is uwf-tui itself. `-P`: the server's current
    directory (a thread's workspace, say, where an agent may have written a `uwf_tui/` or a
    `json.py`) is not put first on sys.path, so nothing an agent wrote runs here."""
    argv = [sys.executable, "-P", "-m", "uwf_tui"]
    if display_location(location) == location:
        argv += ["--root", location]
    return "exec " + shlex.join(argv)  # the shell becomes uwf-tui: the process the server waits for


class GuardedServer(Server):
    """textual-serve's Server, its application mounted under `/<token>/` behind a 403 guard."""

    def __init__(self, command: str, *, host: str, port: int, token: str, title: str) -> None:
        super().__init__(command, host=host, port=port, title=title)
        self.token = token
        self.prefix = f"/{token}/"
        self._sessions: set[asyncio.Task] = set()  # the websockets' handlers
        self._endings: set[asyncio.Future] = set()  # sessions ending: each until its uwf-tui has exited

    def initialize_logging(self) -> None:
        """textual-serve's logging (requests, sessions started and ended), on stderr: stdout is
        where the URL to open is printed."""
        from rich.console import Console

        self.console = Console(stderr=True)
        super().initialize_logging()

    async def _make_app(self) -> web.Application:
        """textual-serve's routes, its static files served without a directory listing."""
        import aiohttp_jinja2
        import jinja2

        app = web.Application()
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws", self.handle_websocket, name="websocket"),
            web.get("/download/{key}", self.handle_download, name="download"),
            web.static("/static", self.statics_path, show_index=False, name="static"),
        ])
        app.on_startup.append(self.on_startup)
        app.on_shutdown.append(self.on_shutdown)
        return app

    async def make_app(self) -> web.Application:
        served = await self._make_app()
        outer = web.Application(middlewares=[self._require_token])
        outer.add_subapp(self.prefix, served)
        return outer

    @web.middleware
    async def _require_token(self, request: web.Request, handler):
        # The first path segment, compared in constant time; anything else learns nothing.
        first = request.path[: len(self.prefix)]
        if len(first) == len(self.prefix) and hmac.compare_digest(first.encode(), self.prefix.encode()):
            return await handler(request)
        if len(request.path) == len(self.prefix) - 1 and hmac.compare_digest(request.path.encode(), self.prefix[:-1].encode()):
            raise web.HTTPPermanentRedirect(self.prefix)  # the URL without its last slash: it knows the token
        return web.Response(status=403)

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        # The page tells the browser where the assets and the websocket are, from public_url:
        # build it from the address the browser used, which also works behind --host 0.0.0.0,
        # and behind a TLS proxy, which says so in X-Forwarded-Proto / -Host (https and wss, then).
        # (The base handler reads it before its first await, so sessions cannot mix theirs.)
        self.public_url = public_url_of(request)
        return await super().handle_index(request)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        # textual-serve's, with a Session in place of its AppService: the server tracks each
        # session until its uwf-tui process has ended, so that shutting down can end them all.
        websocket = web.WebSocketResponse(heartbeat=15)
        session = Session(
            self.command,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,
            download_manager=self.download_manager,
            debug=self.debug,
        )
        task = asyncio.current_task()
        self._sessions.add(task)
        try:
            await websocket.prepare(request)
            await session.start(_size(request, "width", 80), _size(request, "height", 24))
            await self._process_messages(websocket, session)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # as textual-serve does: one session's trouble is logged, the server goes on
            log.exception(error)
        finally:
            self._sessions.discard(task)
            ending = asyncio.ensure_future(session.end())
            self._endings.add(ending)
            ending.add_done_callback(self._endings.discard)
            await asyncio.shield(ending)  # shutting down cancels this task, never the ending: it waits for it
        return websocket

    async def on_startup(self, app: web.Application) -> None:
        pass  # serve() prints the URL once it listens; the banner would print the command

    async def on_shutdown(self, app: web.Application) -> None:
        sessions = list(self._sessions)
        for task in sessions:
            task.cancel()
        await asyncio.gather(*sessions, return_exceptions=True)  # each has begun to end its session
        await asyncio.gather(*list(self._endings), return_exceptions=True)


class Session(AppService):
    """One browser's uwf-tui process. textual-serve's stop() returns once the process has closed
    its output, which is before it has exited: a server stopped then would leave it running on
    its own. end() waits for the exit itself, and kills a process that does not quit in time."""

    async def end(self) -> None:
        process = self._process
        if process is None:
            return  # the websocket closed before the process was started
        stopping = asyncio.ensure_future(self.stop())  # "quit" on its stdin, its output read to the end
        try:
            await asyncio.wait_for(process.wait(), QUIT_GRACE)
        except asyncio.TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
        # Its output ends with it, unless something it started holds it open: read no longer then.
        # (wait(), not await: stop() may end in a CancelledError of textual-serve's own.)
        if not (await asyncio.wait({stopping}, timeout=QUIT_GRACE))[0]:
            stopping.cancel()


def _size(request: web.Request, name: str, default: int) -> int:
    try:
        return int(request.query.get(name, default))
    except ValueError:
        return default


def access_log(token: str) -> type[AbstractAccessLogger]:
    """One short line per request, 403s included, so whoever serves sees who tries; the token is
    shown as <token>, since a terminal's scrollback or a captured log is no place for it."""

    class AccessLog(AbstractAccessLogger):
        def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
            line = f'{request.remote} "{request.method} {request.path_qs}" {response.status}'
            self.logger.info(line.replace(token, "<token>"))

    return AccessLog


def url_for(host: str, port: int, token: str) -> str:
    if host in WILDCARD_HOSTS:
        host = socket.gethostname()
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/{token}/"


def serve(options: ServeOptions) -> int:
    """Serve until SIGINT or SIGTERM; print the URL to open once listening."""
    token = pick_token(options.token)
    os.environ.pop(TOKEN_ENV, None)  # the sessions and the agents they start have no use for it
    server = GuardedServer(
        served_command(options.location),
        host=options.host,
        port=options.port,
        token=token,
        title=f"uwf · {display_location(options.location)}",
    )
    server.initialize_logging()  # textual-serve's: requests, sessions started and ended
    asyncio.run(_run(server, options))
    return 0


async def _run(server: GuardedServer, options: ServeOptions) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    runner = web.AppRunner(await server.make_app(), shutdown_timeout=5, access_log_class=access_log(server.token))
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, options.host, options.port).start()
        except OSError as exc:
            raise ServeError(f"cannot listen on {options.host}:{options.port}: {exc.strerror or exc}") from exc
        port = runner.addresses[0][1]  # the bound one, for --port 0
        sys.stdout.write(
            f"uwf-tui: serving the workbench of {display_location(options.location)}\n"
            f"open {url_for(options.host, port, server.token)}\n"
            "(anyone with this URL can run agents as you; ctrl+c stops)\n"
        )
        sys.stdout.flush()
        await stop.wait()
    finally:
        await runner.cleanup()


_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")


def public_url_of(request: web.BaseRequest) -> str:
    """Where the browser reached the page: a proxy's forwarded scheme and host first (the first of
    each when proxies chain), else the request's own. Only what a URL may hold is taken: the page
    is built from it."""
    forwarded_proto = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    forwarded_host = request.headers.get("X-Forwarded-Host", "").split(",")[0].strip()
    scheme = forwarded_proto if forwarded_proto in ("http", "https") else request.scheme
    host = forwarded_host if _HOST.match(forwarded_host) else request.host
    return f"{scheme}://{host}"
