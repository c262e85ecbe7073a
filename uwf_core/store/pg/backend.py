"""A root that is a PostgreSQL database: the parts of store/base.py's Backend over one Database.
Secrets and scratch files stay on each host: `.env` is `$UWF_ENV_FILE`, else `~/.uwf/.env`."""

from __future__ import annotations

import os
from functools import cached_property

from .db import CHANGES_CHANNEL, Database, display


def socket_dirs(url: str) -> tuple[str, ...]:
    """The Unix-socket directories a URL connects through (`?host=/run/postgresql`, or a host
    written %2F...): a step agent's sandbox must show them to let it reach the database."""
    from urllib.parse import parse_qs, unquote, urlsplit

    parts = urlsplit(url)
    hosts = [unquote(parts.hostname or "")] + [h for value in parse_qs(parts.query).get("host", []) for h in value.split(",")]
    return tuple(dict.fromkeys(host for host in hosts if host.startswith("/")))


class PgBackend:
    notifies = True  # wait_for_change is woken by NOTIFY, not polled

    def __init__(self, url: str) -> None:
        self.db = Database(url)
        self.location = url  # what agents get in UWF_STORAGE_ROOT to open it again
        self.env_path = os.environ.get("UWF_ENV_FILE") or os.path.join(os.path.expanduser("~"), ".uwf", ".env")
        self.scratch_dir = os.path.join(os.environ.get("TMPDIR") or "/tmp", f"uwf-{os.getuid()}")
        self.cache_dir = os.path.join(self.scratch_dir, "cache")  # host-local, as the workspaces are
        self.store_dirs: tuple[str, ...] = ()  # nothing of the store is a directory here
        self.node_dirs: tuple[str, ...] = ()
        self.private_dirs: tuple[str, ...] = ()
        self.socket_dirs = socket_dirs(url)

    def __repr__(self) -> str:
        return f"PgBackend({display(self.location)})"

    def new_stage(self) -> str | None:
        """No staging: a step agent reaches the database itself (docs/explanation/containment.md)."""
        return None

    def stage_env(self, stage: str) -> dict[str, str]:
        return {}

    def serve_nodes(self, stage: str):
        return None

    def staged(self, stage: str) -> dict[str, bytes]:
        return {}

    def staged_derived(self, stage: str) -> dict[str, bytes]:
        return {}

    def drop_stage(self, stage: str) -> None:
        pass

    def publishing(self):
        from .locks import PgPublishing

        return PgPublishing(self.db)

    def sweeping(self, timeout: float):
        from .locks import PgSweeping

        return PgSweeping(self.db, timeout)

    def repair_nodes(self):
        from ...errors import UwfError

        raise UwfError("--repair rebuilds a directory root's node file; a PostgreSQL root keeps its nodes in the database, which checks its own pages")

    def idle_locks(self, active: set[str], cutoff: float) -> list[str]:
        return []  # advisory locks: nothing is left when a session ends

    def drop_idle_lock(self, path: str) -> bool:
        return False

    def config_lock(self):
        from .locks import PgHeld

        return PgHeld(self.db, "config")

    def set_aside(self) -> list[str]:
        return []

    def kept_aside(self) -> list[str]:
        return []

    def repair_state(self) -> list[str]:
        """Rows are whole or not there: nothing to set aside."""
        return []

    def check(self) -> None:
        """Connect once (creating or migrating the schema): an unreachable URL is one clear error."""
        self.db.conn()

    @cached_property
    def nodes(self):
        from .nodes import PgNodeStore

        return PgNodeStore(self.db)

    @cached_property
    def threads(self):
        from .state import PgThreadIndex

        return PgThreadIndex(self.db)

    @cached_property
    def registry(self):
        from .state import PgRegistry

        return PgRegistry(self.db)

    @cached_property
    def runs(self):
        from .state import PgRunLog

        return PgRunLog(self.db)

    @cached_property
    def config(self):
        from .state import PgConfig

        return PgConfig(self.db)

    @cached_property
    def locks(self):
        from .locks import PgStepLocks

        return PgStepLocks(self.db)

    @cached_property
    def queue(self):
        from .locks import PgWorkQueue

        return PgWorkQueue(self.db)

    def live_feed(self, thread: str):
        from .live import PgLiveFeed

        return PgLiveFeed(self.db, thread)

    def change_token(self):
        return self.db.query("select value from uwf_meta where key = 'changes'")[0][0]

    def wait_for_change(self, token, timeout: float):
        """LISTEN on the change channel (every change notifies it), with the counter as the truth:
        a notification missed between two waits is seen in the counter."""
        current = self.change_token()
        if current != token:
            return current
        conn = self._listener()
        with self.db.errors("listen to"):
            for _ in conn.notifies(timeout=timeout, stop_after=1):
                break
        return self.change_token()

    def _listener(self):
        """This thread's listening session (a worker's lanes wait at once: one each)."""
        return self.db.listener(CHANGES_CHANNEL)

    def temp_files(self) -> list[tuple[str, float]]:
        return []  # nothing is rewritten through temp files here

    def delete_temp_file(self, name: str) -> None:
        from ...errors import UwfError

        raise UwfError(f"{name!r} is not a temp file of a PostgreSQL root")
