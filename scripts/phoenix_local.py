"""Arize Phoenix for uwf's traces, reachable from this host only: run it with Phoenix's own Python.

    python3 -m venv .venv-phoenix && .venv-phoenix/bin/pip install arize-phoenix
    .venv-phoenix/bin/python scripts/phoenix_local.py &      # UI and OTLP on http://127.0.0.1:6006

`phoenix serve` binds its UI to PHOENIX_HOST but its OTLP gRPC receiver to every interface
(`[::]`, whatever PHOENIX_HOST says), and keeps its database in ~/.phoenix. Here every listener
is on 127.0.0.1, the database in a directory of this user's under the temp directory (or
PHOENIX_WORKING_DIR), and Phoenix's own usage telemetry is off. uwf sends OTLP over HTTP, so the
gRPC receiver is only ever reached from this host.

    --port N        the UI and OTLP/HTTP port (default 6006; PHOENIX_PORT)
    --grpc-port N   the OTLP/gRPC port (default 4317; PHOENIX_GRPC_PORT)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

LOOPBACK = "127.0.0.1"


def main() -> int:
    parser = argparse.ArgumentParser(description="Arize Phoenix on 127.0.0.1 only, its data out of $HOME")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PHOENIX_PORT", "6006")))
    parser.add_argument("--grpc-port", type=int, default=int(os.environ.get("PHOENIX_GRPC_PORT", "4317")))
    args = parser.parse_args()
    working = os.environ.get("PHOENIX_WORKING_DIR") or os.path.join(tempfile.gettempdir(), f"uwf-phoenix-{os.getuid()}")
    os.makedirs(working, mode=0o700, exist_ok=True)
    os.environ.update(
        PHOENIX_HOST=LOOPBACK,
        PHOENIX_PORT=str(args.port),
        PHOENIX_GRPC_PORT=str(args.grpc_port),
        PHOENIX_WORKING_DIR=working,
        PHOENIX_TELEMETRY_ENABLED="false",
    )
    _grpc_on_loopback()
    sys.stderr.write(f"phoenix: http://{LOOPBACK}:{args.port} (OTLP: OTEL_EXPORTER_OTLP_ENDPOINT=http://{LOOPBACK}:{args.port}); data in {working}\n")
    from phoenix.server.main import main as serve

    sys.argv = ["phoenix", "serve"]
    return serve() or 0


def _grpc_on_loopback() -> None:
    """Every gRPC server Phoenix makes listens on 127.0.0.1, not on `[::]`."""
    from grpc.aio._server import Server

    insecure, secure = Server.add_insecure_port, Server.add_secure_port

    def add_insecure_port(self, address: str) -> int:
        return insecure(self, _loopback(address))

    def add_secure_port(self, address: str, credentials) -> int:
        return secure(self, _loopback(address), credentials)

    Server.add_insecure_port, Server.add_secure_port = add_insecure_port, add_secure_port


def _loopback(address: str) -> str:
    return f"{LOOPBACK}:{address.rpartition(':')[2]}"


if __name__ == "__main__":
    sys.exit(main())
