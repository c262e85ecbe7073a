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
        batch = _batch(waiting(where), sdk)
        if not batch:
            if time.monotonic() - quiet_since < LINGER_SECONDS:
                time.sleep(LOOK_EVERY_SECONDS)
                continue
            os.close(lock)  # let go, then look once more: a step that left spans meanwhile found the lock held
            if not waiting(where) or (lock := claim(settings.url)) is None:
                return 0
            continue
        readables, paths = batch
        try:
            taken = sdk.exporter.export(readables) == sdk.exporter.results.SUCCESS
        except Exception as exc:  # noqa: BLE001 — the SDK's own failure: nobody to tell but the next step
            write_status(settings.url, FAILED, f"{type(exc).__name__}: {exc}".splitlines()[0])
            taken = False
        for path in paths:
            _remove(path)
        if not taken:
            count_dropped(where, len(readables))
            return 1  # the rest waits for the next step's shipper
        quiet_since = time.monotonic()


def _batch(paths: list[str], sdk) -> tuple[list, list[str]] | None:
    """The oldest files up to one request's size, as the SDK's spans, and their paths. A file that
    is not one a step wrote (another shape, nested past the parser) is removed, and the others go."""
    from .spool import MAX_BATCH_BYTES

    readables: list = []
    taken: list[str] = []
    size = 0
    for path in paths:
        try:
            with open(path, "rb") as file:
                raw = file.read()
            found = [readable for item in json.loads(raw)["spans"] for readable in sdk.readables(item["span"], item["trace"])]
        except FileNotFoundError:
            continue
        except Exception:  # noqa: BLE001
            _remove(path)
            continue
        if taken and size + len(raw) > MAX_BATCH_BYTES:
            break
        readables += found
        taken.append(path)
        size += len(raw)
    return (readables, taken) if taken else None


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
