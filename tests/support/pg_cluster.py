"""A private PostgreSQL cluster for the tests: initdb in a temp directory, a Unix socket only,
fsync off, started once per test session (~2 s) and stopped at the end. initdb refuses to run
as root, so as root the cluster runs as the `postgres` user the Debian package creates."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile


def binaries() -> str | None:
    """The directory of initdb and pg_ctl, or None when PostgreSQL is not installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if found and os.path.exists(os.path.join(found[-1], "initdb")):
        return found[-1]
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


def _as_owner(argv: list[str], owner: str | None) -> list[str]:
    return ["runuser", "-u", owner, "--", *argv] if owner else argv


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Cluster:
    def __init__(self) -> None:
        self.bin = binaries()
        if self.bin is None:
            raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
        self.owner = "postgres" if os.geteuid() == 0 else None
        self.dir = tempfile.mkdtemp(prefix="uwf-pg-", dir="/tmp")
        os.chmod(self.dir, 0o755)
        if self.owner:
            shutil.chown(self.dir, self.owner, self.owner)
        self.port = _free_port()
        self.data = os.path.join(self.dir, "data")

    def run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        argv = _as_owner([os.path.join(self.bin, tool), *args], self.owner)
        return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=120)

    def start(self) -> Cluster:
        self.run("initdb", "-D", self.data, "-U", "postgres", "--auth", "trust", "-E", "UTF8")
        self._pg_ctl_start()
        return self

    def _pg_ctl_start(self) -> None:
        options = f"-c listen_addresses='' -c unix_socket_directories={self.dir} -p {self.port} -c fsync=off -c max_connections=300"
        self.run("pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "log"), "-w", "-o", options, "start")

    def restart(self, down_for: float = 0.0) -> None:
        """An immediate stop (every session cut), `down_for` seconds of no server, a start."""
        import time

        self.run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop", check=False)
        time.sleep(down_for)
        self._pg_ctl_start()

    def stop(self) -> None:
        self.run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def create_database(self, name: str) -> str:
        self.run("createdb", "-h", self.dir, "-p", str(self.port), "-U", "postgres", name)
        return self.url(name)

    def url(self, name: str) -> str:
        return f"postgresql:///{name}?host={self.dir}&port={self.port}&user=postgres"
