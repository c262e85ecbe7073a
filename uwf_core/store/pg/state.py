"""The mutable state of a PostgreSQL root: heads (moved only by compare-and-set), the archive,
the runs log, the workflow registry and config.yaml's text. Each change is one transaction that
also bumps the change counter and notifies listeners."""

from __future__ import annotations

import json
import time
from contextlib import contextmanager

from ...errors import ConflictError, NotFoundError
from ..records import ArchivedThread, RunRecord
from ..registry_model import RegistryEntry, Version
from .db import Database, display


class PgThreadIndex:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.location = display(db.url)

    def heads(self) -> dict[str, str]:
        return dict(self.db.query("select thread, head from uwf_heads order by added"))

    def workspaces(self) -> dict[str, str]:
        return dict(self.db.query("select thread, path from uwf_workspaces"))

    def set_workspace(self, thread: str, path: str) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "insert into uwf_workspaces (thread, path) values (%s, %s) on conflict (thread) do update set path = excluded.path",
                (thread, path),
            )

    def paused(self) -> dict[str, int]:
        return dict(self.db.query("select thread, since from uwf_paused"))

    def set_paused(self, thread: str, since: int | None) -> bool:
        with self.db.transaction() as conn:
            if since is None:
                changed = conn.execute("delete from uwf_paused where thread = %s", (thread,)).rowcount
            else:
                changed = conn.execute(  # only while it is active, checked in the same statement
                    "insert into uwf_paused (thread, since) select %s, %s where exists (select 1 from uwf_heads where thread = %s)"
                    " on conflict do nothing", (thread, since, thread)).rowcount
            if changed:
                self.db.bump(conn)
            return bool(changed)

    def add(self, thread: str, head: str) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "insert into uwf_heads (thread, head) values (%s, %s) on conflict (thread) do update set head = excluded.head",
                (thread, head),
            )
            self.db.bump(conn)

    def compare_and_set(self, thread, expected, new, *, archive_reason=None, workflow=None, check=None, summary=None) -> None:
        with self.db.transaction() as conn:
            row = conn.execute("select head from uwf_heads where thread = %s for update", (thread,)).fetchone()
            if check is not None:
                check()
            if row is None:
                record = self.last_archived(thread)
                reason = f" ({record.reason})" if record else ""
                raise ConflictError(f"thread {thread} was archived{reason} while the step ran; its head stays at {expected}")
            if row[0] != expected:
                raise ConflictError(
                    f"thread {thread} moved from {expected} to {row[0]} while the step ran; the new step {new} stays in CAS (fork it to keep it)"
                )
            if archive_reason is not None:
                self._archive(conn, thread, workflow, new, archive_reason, summary)
            else:
                conn.execute("update uwf_heads set head = %s where thread = %s and head = %s", (new, thread, expected))
            self.db.bump(conn)

    def archive(self, thread: str, workflow: str | None, reason: str, expected: str | None = None, summary: str | None = None) -> str:
        with self.db.transaction() as conn:
            row = conn.execute("select head from uwf_heads where thread = %s for update", (thread,)).fetchone()
            if row is None:
                raise ConflictError(f"thread {thread} is not active")
            if expected is not None and row[0] != expected:
                raise ConflictError(f"thread {thread} moved from {expected} to {row[0]}; not archived")
            self._archive(conn, thread, workflow, row[0], reason, summary)
            self.db.bump(conn)
            return row[0]

    def _archive(self, conn, thread: str, workflow: str | None, head: str, reason: str, summary: str | None = None) -> None:
        conn.execute(
            "insert into uwf_history (thread, workflow, head, reason, completed_at, summary) values (%s, %s, %s, %s, %s, %s)",
            (thread, workflow, head, reason, int(time.time() * 1000), summary),
        )
        # an ended thread is not paused any more: a resume of it steps at once
        conn.execute("with unpaused as (delete from uwf_paused where thread = %s) delete from uwf_heads where thread = %s", (thread, thread))

    @contextmanager
    def exclusive(self):
        """Heads held still (gc's sweep): an exclusive table lock, held on a connection of its own,
        makes compare_and_set and archive wait while plain reads go on."""
        conn = self.db.connect()
        try:
            with self.db.errors("lock the heads of"), conn.transaction():
                conn.execute("lock table uwf_heads in exclusive mode")
                yield
        finally:
            conn.close()

    def restore_archived(self, record: ArchivedThread) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "insert into uwf_history (thread, workflow, head, reason, completed_at, summary) values (%s, %s, %s, %s, %s, %s)",
                (record.thread, record.workflow, record.head, record.reason, record.completed_at, record.summary),
            )
            self.db.bump(conn)

    def remove(self, thread: str) -> list[str]:
        with self.db.transaction() as conn:
            heads = [row[0] for row in conn.execute("delete from uwf_heads where thread = %s returning head", (thread,)).fetchall()]
            heads += [row[0] for row in conn.execute("delete from uwf_history where thread = %s returning head", (thread,)).fetchall()]
            if heads:
                conn.execute("delete from uwf_workspaces where thread = %s", (thread,))
                conn.execute("delete from uwf_paused where thread = %s", (thread,))
            self.db.bump(conn)
            return heads

    def damaged(self) -> list:
        """Nothing: rows are typed and written in transactions (a directory root's lines can tear)."""
        return []

    def history(self) -> list[ArchivedThread]:
        rows = self.db.query("select thread, workflow, head, reason, completed_at, summary from uwf_history order by seq")
        return [ArchivedThread(*row) for row in rows]

    def last_archived(self, thread: str) -> ArchivedThread | None:
        rows = self.db.query(
            "select thread, workflow, head, reason, completed_at, summary from uwf_history where thread = %s order by seq desc limit 1", (thread,)
        )
        return ArchivedThread(*rows[0]) if rows else None


class PgRunLog:
    def __init__(self, db: Database) -> None:
        self.db = db

    def append(self, record: RunRecord) -> None:
        self.db.change("insert into uwf_runs (thread, record) values (%s, %s)", (record.thread, record.to_json()))

    def damaged(self) -> list:
        return []

    def read(self, thread: str | None = None) -> list[RunRecord]:
        if thread is None:
            rows = self.db.query("select record from uwf_runs order by seq")
        else:
            rows = self.db.query("select record from uwf_runs where thread = %s order by seq", (thread,))
        return self._records(rows)

    def of_step(self, step: str) -> list[RunRecord]:
        rows = self.db.query("select record from uwf_runs where strpos(record, %s) > 0 order by seq", (step,))
        return [record for record in self._records(rows) if record.step == step]

    @staticmethod
    def _records(rows) -> list[RunRecord]:
        records = []
        for (text,) in rows:
            try:
                record = RunRecord.from_dict(json.loads(text))
            except ValueError:
                continue
            if record is not None:
                records.append(record)
        return records


class PgRegistry:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.location = display(db.url)

    def entries(self) -> dict[str, RegistryEntry]:
        return {name: _entry(name, text) for name, text in self.db.query("select name, entry from uwf_registry order by name")}

    def register(self, name: str, hash_: str, source: str | None) -> bool:
        with self.db.transaction() as conn:
            row = conn.execute("select entry from uwf_registry where name = %s for update", (name,)).fetchone()
            entry = _entry(name, row[0]) if row else None
            if entry is not None and entry.current.hash == hash_:
                return False
            version = Version(hash_, int(time.time() * 1000), source)
            entry = RegistryEntry(name, version, [] if entry is None else [entry.current, *entry.history])
            self._save(conn, entry)
            return True

    def rollback(self, name: str, hash_prefix: str | None = None) -> RegistryEntry:
        with self.db.transaction() as conn:
            row = conn.execute("select entry from uwf_registry where name = %s for update", (name,)).fetchone()
            if row is None:
                raise NotFoundError(f"no workflow named '{name}'")
            entry = _entry(name, row[0])
            if not entry.history:
                raise NotFoundError(f"workflow '{name}' has no earlier version to roll back to")
            index = 0
            if hash_prefix:
                matches = [i for i, version in enumerate(entry.history) if version.hash.startswith(hash_prefix.upper())]
                if not matches:
                    raise NotFoundError(f"workflow '{name}' has no earlier version {hash_prefix}")
                index = matches[0]
            chosen = entry.history[index]
            entry = RegistryEntry(name, chosen, [entry.current, *entry.history[:index], *entry.history[index + 1 :]])
            self._save(conn, entry)
            return entry

    def restore(self, entry: RegistryEntry) -> None:
        with self.db.transaction() as conn:
            self._save(conn, entry)

    def remove(self, name: str) -> RegistryEntry:
        with self.db.transaction() as conn:
            row = conn.execute("delete from uwf_registry where name = %s returning entry", (name,)).fetchone()
            if row is None:
                raise NotFoundError(f"no workflow named '{name}'")
            self.db.bump(conn)
            return _entry(name, row[0])

    def _save(self, conn, entry: RegistryEntry) -> None:
        conn.execute(
            "insert into uwf_registry (name, entry) values (%s, %s) on conflict (name) do update set entry = excluded.entry",
            (entry.name, json.dumps(entry.to_dict())),
        )
        self.db.bump(conn)


def _entry(name: str, text: str) -> RegistryEntry:
    data = json.loads(text)

    def version(item: dict) -> Version:
        return Version(item["hash"], int(item["timestamp"]), item.get("source"))

    return RegistryEntry(name, version(data), [version(item) for item in data.get("history") or []])


class PgConfig:
    """config.yaml's text, one row shared by every host (secrets never: each host's .env)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.location = f"{display(db.url)} (table uwf_config)"

    def read(self) -> str | None:
        rows = self.db.query("select text from uwf_config where id = 1")
        return rows[0][0] if rows else None

    def write(self, text: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("insert into uwf_config (id, text) values (1, %s) on conflict (id) do update set text = excluded.text", (text,))
            self.db.bump(conn)
