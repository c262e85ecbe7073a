"""The server: the tools and resources over one opened root, on stdio (a client starts `uwf mcp`
as its subprocess) or streamable HTTP (127.0.0.1 by default, every request with the bearer token)."""

from __future__ import annotations

import hmac
import os
import re
import secrets
import sys
from contextlib import asynccontextmanager

from ..errors import UwfError
from ..version import __version__
from .gate import Gate

TOKEN_ENV = "UWF_MCP_TOKEN"
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{16,}")
INSTRUCTIONS = (
    "uwf runs multi-role agent workflows as threads of content-addressed steps. List workflows and "
    "threads, read a thread (the resource uwf://thread/ID, or thread_read), start one and step it "
    "(thread_step streams its agent's output as progress). {access}"
)


def build_server(gate: Gate):
    """An MCPServer whose tools and resources read (and, if allowed, write) `gate.repo`."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.subscriptions import InMemorySubscriptionBus

    from . import resources, tools

    bus = InMemorySubscriptionBus()

    @asynccontextmanager
    async def lifespan(_server):
        async with resources.watching(gate, bus):
            yield {}

    access = ("Writes are allowed." if gate.writes else
              "This server is read-only: the tools that write refuse (the user starts it with --allow write).")
    arguments: dict[str, frozenset[str]] = {}

    async def unknown_arguments(ctx, call_next):
        """An argument a tool does not take is refused, not passed over: a client that sent
        `maxSteps` for `max_steps` would otherwise run ten steps for the one it asked. Said by the
        tool itself (tools.REFUSAL), so that the answer has the SDK's own shape."""
        params = ctx.params if isinstance(ctx.params, dict) else {}
        if ctx.method == "tools/call" and params.get("name") in arguments and isinstance(params.get("arguments"), dict):
            taken = arguments[params["name"]]
            unknown = sorted(set(params["arguments"]) - taken)
            if unknown:
                token = tools.REFUSAL.set(f"no argument {', '.join(map(repr, unknown))} (it takes {', '.join(sorted(taken)) or 'none'})")
                try:
                    return await call_next(ctx)
                finally:
                    tools.REFUSAL.reset(token)
        return await call_next(ctx)

    server = MCPServer(
        "uwf", version=__version__, instructions=INSTRUCTIONS.format(access=access), subscriptions=bus, lifespan=lifespan,
        log_level="WARNING", middleware=[_one_line_errors, unknown_arguments],
    )
    arguments.update(tools.register(server, gate))
    resources.register(server, gate)
    return server


async def _one_line_errors(ctx, call_next):
    """A tool's error as one line, the SDK's own included: its check of the arguments answers
    with pydantic's report, several lines with a link on each."""
    result = await call_next(ctx)
    if ctx.method == "tools/call" and isinstance(result, dict) and result.get("isError"):  # the wire form, here
        for item in result.get("content") or ():
            if item.get("type") == "text" and "\n" in item.get("text", ""):
                item["text"] = _arguments_line(item["text"])
    return result


def _arguments_line(text: str) -> str:
    """'Error executing tool T: 1 validation error for TArguments / thread / Field required [type=...]'
    as 'Error executing tool T: bad arguments: thread: Field required'."""
    lines = text.splitlines()
    if "validation error" not in lines[0]:
        return " ".join(line.strip() for line in lines if line.strip())
    head = lines[0].split(": ", 1)[0]
    problems, where = [], None
    for line in lines[1:]:
        if not line.startswith(" "):
            where = line.strip()
        elif line.startswith("  ") and not line.startswith("    ") and where is not None:
            problems.append(f"{where}: {line.strip().split(' [type=', 1)[0]}")
            where = None
    return f"{head}: bad arguments: {'; '.join(problems) or lines[0]}"


def serve_stdio(gate: Gate) -> None:
    import signal

    signal.signal(signal.SIGINT, _interrupted)
    build_server(gate).run("stdio")


def _interrupted(signum, frame) -> None:
    """Ctrl-C: the steps in flight cancelled and recorded, then the server ends. (Left to the event
    loop, it cancels them but then waits on its thread blocked reading stdin, and never ends.)"""
    import threading

    from .stepping import stop_all

    def stop() -> None:
        stop_all("the MCP server was interrupted", 10.0)
        os._exit(130)

    threading.Thread(target=stop, daemon=True).start()


def serve_http(gate: Gate, host: str, port: int, token: str, *, made: bool) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp; a request without `Authorization: Bearer TOKEN` is
    answered 401 before the SDK sees it. `made`: the token is a new one, printed once (one the
    user gave is not echoed)."""
    import anyio
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    # The SDK's guard against DNS rebinding knows only loopback names: on another address every
    # request would be refused (421). The token is what a page a browser was lured to lacks.
    loopback = host in ("127.0.0.1", "localhost", "::1")
    security = None if loopback else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    _check_free(host, port)  # said in one line before anything is printed as served
    app = _guarded(build_server(gate).streamable_http_app(host=host, transport_security=security), token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    shown = f"Authorization: Bearer {token}" if made else "the bearer token given"
    print(f"uwf mcp: http://{'[' + host + ']' if ':' in host else host}:{port}/mcp ({shown})", file=sys.stderr, flush=True)
    anyio.run(uvicorn.Server(config).serve)


def _check_free(host: str, port: int) -> None:
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UwfError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None


def pick_token(given: str | None) -> tuple[str, bool]:
    """(--token, else $UWF_MCP_TOKEN, else a random one; whether it was made here), its shape checked."""
    token = given or os.environ.get(TOKEN_ENV)
    made = not token
    token = token or secrets.token_urlsafe(24)
    if not TOKEN_SHAPE.fullmatch(token):
        raise UwfError("the token must be at least 16 characters, letters, digits, - and _ only")
    return token, made


def _guarded(app, token: str):
    expected = f"Bearer {token}".encode()

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"uwf mcp: no bearer token, or not this server's (Authorization: Bearer TOKEN)\n"})
                return
        await app(scope, receive, send)

    return guarded
