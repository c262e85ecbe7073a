"""`uwf mcp`: serve the root to MCP clients (Claude Code, Codex, an IDE) on stdio, or over
streamable HTTP with --http."""

from __future__ import annotations

from .common import repo_of


def register(groups, common) -> None:
    parser = groups.add_parser(
        "mcp",
        help="serve this root to MCP clients (tools, resources; read-only unless --allow write)",
        description="A Model Context Protocol server over the root, on stdio (the client starts `uwf mcp` itself) or "
        "streamable HTTP (--http). Needs the mcp extra: pip install -e '.[mcp]' in uwf's checkout. See docs/how-to/mcp.md.",
        parents=[common],
    )
    parser.add_argument("--allow", choices=["write"], help="let clients put workflows and start, step, fork, kill and answer threads")
    parser.add_argument("--workspaces", metavar="DIR", help="the directory thread workspaces must be in (default: the current one)")
    parser.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    parser.add_argument("--token", metavar="TOKEN", help="the bearer token for --http (default $UWF_MCP_TOKEN, else a random one, printed)")
    parser.set_defaults(handler=cmd_mcp)


def cmd_mcp(args) -> int:
    import os
    from importlib.util import find_spec

    from ..errors import UsageError, UwfError

    if find_spec("mcp") is None:
        raise UwfError("uwf mcp needs the mcp extra: in uwf's checkout, .venv/bin/pip install -e '.[mcp]' (or pip install 'uwf[mcp]' from a package index)")
    if args.token and not args.http:
        raise UsageError("--token is for --http (a stdio server answers only the client that started it)")
    from ..mcp_server.gate import Gate

    workspaces = os.path.realpath(args.workspaces or os.getcwd())
    if not os.path.isdir(workspaces):
        raise UwfError(f"--workspaces {args.workspaces}: not a directory")
    gate = Gate(repo_of(args), writes=args.allow == "write", workspaces=workspaces)
    if args.http:
        from ..mcp_server.server import pick_token, serve_http

        host, port = _address(args.http)
        token, made = pick_token(args.token)
        serve_http(gate, host, port, token, made=made)
    else:
        from ..mcp_server.server import serve_stdio

        serve_stdio(gate)
    return 0


def _address(text: str) -> tuple[str, int]:
    from ..errors import UsageError

    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--http expects HOST:PORT (e.g. 127.0.0.1:8765), got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)
