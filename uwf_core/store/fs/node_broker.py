"""A sandboxed step agent reads nodes through uwf, never from the node file itself.

SQLite readers of a WAL-mode file share its `-shm` (the WAL index, and lock bytes in it): an agent
given the file read-only and the `-shm` to write could take those locks and stall every other
step of the root (a step failed after 10 s, "locking protocol"), rewind the index (nodes lost) or
truncate it (uwf's readers died of SIGBUS). So the root's `cas/` and `locks/` are hidden from a
step agent, and uwf serves its reads on a Unix socket in the agent's staging directory
(`UWF_NODES`), one connection per kit process, for as long as the agent runs. What the agent
writes still goes to its staging file (staged.py), which uwf checks and takes in after it answers.

One request per line, `<op> <argument>`; each answer a 4-byte big-endian length (0xFFFFFFFF:
none) and that many bytes.
"""

from __future__ import annotations

import os
import socket
import struct
import threading

NODES_ENV = "UWF_NODES"
SOCKET_NAME = "nodes.sock"
NONE = 0xFFFFFFFF
MAX_REQUEST = 4096


class NodeBroker:
    """uwf's side: serves `nodes` (an FsNodeStore) on `<stage>/nodes.sock` until closed."""

    def __init__(self, nodes, stage: str) -> None:
        self.nodes = nodes
        self.path = socket_path(stage)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        _at(self.path, self.server.bind)
        self.server.listen(16)
        self.closed = False
        threading.Thread(target=self._accept, daemon=True, name="uwf-node-broker").start()

    def close(self) -> None:
        self.closed = True
        try:
            self.server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.server.close()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True, name="uwf-node-reader").start()

    def _serve(self, conn: socket.socket) -> None:
        """Answer one kit process's requests; anything malformed ends its connection."""
        reader = conn.makefile("rb")
        try:
            while not self.closed:
                line = reader.readline(MAX_REQUEST)
                if not line.endswith(b"\n"):
                    return
                op, _, argument = line.decode("ascii", "replace").strip().partition(" ")
                answer = self._answer(op, argument)
                conn.sendall(struct.pack(">I", NONE) if answer is None else struct.pack(">I", len(answer)) + answer)
        except (OSError, ValueError):
            return
        finally:
            reader.close()
            conn.close()
            self.nodes.db.close()  # this thread's connection to the node file

    def _answer(self, op: str, argument: str) -> bytes | None:
        nodes = self.nodes
        if op == "read":
            return nodes.read(argument)
        if op == "exists":
            return b"1" if nodes.exists(argument) else b""
        if op == "touched":
            touched = nodes.touched_at(argument)
            return None if touched is None else repr(touched).encode()
        if op == "hashes":
            return "\n".join(nodes.hashes()).encode()
        if op == "type":
            return "\n".join(nodes.of_type(argument)).encode()
        if op == "derived":
            return nodes.derived(argument)
        raise ValueError(op)


class BrokeredNodes:
    """The agent's side: the root's nodes, read through uwf's broker (`UWF_NODES`). Read-only:
    its writes go to the staging file (staged.py)."""

    def __init__(self, path: str, location: str) -> None:
        self.path = path
        self.location = location
        self._conn: socket.socket | None = None
        self._reader = None
        self._lock = threading.Lock()

    def _ask(self, op: str, argument: str = "-") -> bytes | None:
        from ...errors import UwfError

        if "\n" in argument or " " in argument:
            return None
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    _at(self.path, self._conn.connect)
                    self._reader = self._conn.makefile("rb")
                self._conn.sendall(f"{op} {argument}\n".encode("ascii", "replace"))
                (size,) = struct.unpack(">I", _exactly(self._reader, 4))
                return None if size == NONE else _exactly(self._reader, size)
            except (OSError, struct.error, EOFError) as exc:
                self._conn = None
                raise UwfError(f"cannot read the root's nodes through uwf ({self.path}): {exc}") from None

    def read(self, hash_: str) -> bytes | None:
        return self._ask("read", hash_)

    def exists(self, hash_: str) -> bool:
        return bool(self._ask("exists", hash_))

    def touched_at(self, hash_: str) -> float | None:
        answer = self._ask("touched", hash_)
        return None if answer is None else float(answer)

    def hashes(self) -> list[str]:
        return (self._ask("hashes") or b"").decode().split()

    def of_type(self, type_hash: str) -> list[str]:
        return (self._ask("type", type_hash) or b"").decode().split()

    def derived(self, key: str) -> bytes | None:
        return self._ask("derived", key)

    def touched_all(self) -> dict[str, float]:
        return {}  # gc's: not a step agent's

    def damage(self) -> tuple[str, str] | None:
        return None  # uwf's reads say it


def socket_path(stage: str) -> str:
    return os.path.join(stage, SOCKET_NAME)


def _at(path: str, act) -> None:
    """bind() or connect() at `path`, also past the 107 bytes a socket's address holds: through
    the directory's descriptor in /proc."""
    if len(os.fsencode(path)) < 100:
        act(path)
        return
    fd = os.open(os.path.dirname(path), os.O_PATH | os.O_DIRECTORY)
    try:
        act(f"/proc/self/fd/{fd}/{os.path.basename(path)}")
    finally:
        os.close(fd)


def _exactly(reader, size: int) -> bytes:
    data = reader.read(size)
    if data is None or len(data) != size:
        raise EOFError("the broker closed the connection")
    return data
