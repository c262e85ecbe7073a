"""`python -m uwf_core.telemetry.ship`: the one shipper of this host's spool for a collector.

A `uwf thread step` starts it at exit, handing it the spool's lock (telemetry/spool.py) and, on
stdin, the collector's URL and the OTEL_* variables (its headers among them: never written to
the spool). It imports the SDK, sends the spool's files oldest first in batches, deletes what it
sent, waits a moment for more, and ends. A batch the collector does not take is dropped and
counted, and the shipper ends: the rest waits for the next one. It has no terminal: what it finds
goes to the collector's status file, and the next step says it.
"""

from __future__ import annotations

import json
import os
import sys
import time

LINGER_SECONDS = 1.0  # with the spool empty, looked at again this long before ending
LOOK_EVERY_SECONDS = 0.1


def main() -> int:
    from .collector import FAILED, write_status
    from .export import span_count
    from .settings import TraceSettings
    from .spool import claim, count_dropped, spool_dir, waiting

    data = json.loads(sys.stdin.buffer.read())
    settings = TraceSettings(url=data["url"], source=data["source"], variables=tuple(tuple(pair) for pair in data["variables"]))
    lock, where = int(data["lock"]), spool_dir(settings.url)
    try:
        from .sdk import Sdk

        sdk = Sdk(settings, lambda message: None)
    except Exception as exc:  # noqa: BLE001 — nobody to tell but the next step
        write_status(settings.url, FAILED, f"{type(exc).__name__}: {exc}".splitlines()[0])
        return 1
    quiet_since = time.monotonic()
    while True:
        batch = _batch(waiting(where))
        if not batch:
            if time.monotonic() - quiet_since < LINGER_SECONDS:
                time.sleep(LOOK_EVERY_SECONDS)
                continue
            os.close(lock)  # let go, then look once more: a step that left spans meanwhile found the lock held
            if not waiting(where) or (lock := claim(settings.url)) is None:
                return 0
            continue
        spans, paths = batch
        try:
            readables = [readable for item in spans for readable in sdk.readables(item["span"], item["trace"])]
            taken = sdk.exporter.export(readables) == sdk.exporter.results.SUCCESS
        except Exception as exc:  # noqa: BLE001 — a file of another shape, or the SDK's own failure
            write_status(settings.url, FAILED, f"{type(exc).__name__}: {exc}".splitlines()[0])
            taken = False
        for path in paths:
            _remove(path)
        if not taken:
            count_dropped(where, sum(span_count(item.get("span") or {}) for item in spans))
            return 1  # the rest waits for the next step's shipper
        quiet_since = time.monotonic()


def _batch(paths: list[str]) -> tuple[list[dict], list[str]] | None:
    """The oldest files up to one request's size: their spans and their paths (a file that is not
    a spool file's shape is removed)."""
    from .spool import MAX_BATCH_BYTES

    spans: list[dict] = []
    taken: list[str] = []
    size = 0
    for path in paths:
        try:
            with open(path, "rb") as file:
                raw = file.read()
            found = [item for item in json.loads(raw)["spans"] if isinstance(item, dict)]
        except FileNotFoundError:
            continue
        except Exception:  # noqa: BLE001 — not a file a step wrote (nested past the parser, of another shape): never sent
            _remove(path)
            continue
        if taken and size + len(raw) > MAX_BATCH_BYTES:
            break
        spans += found
        taken.append(path)
        size += len(raw)
    return (spans, taken) if taken else None


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
