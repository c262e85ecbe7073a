"""`python -m uwf_core.telemetry.ship`: the shipper a `uwf thread step` hands its spans to at exit.

It reads them on stdin (already redacted, with the collector's URL and the OTEL_* variables,
its headers among them), imports the
SDK, sends them in one request and ends. It has no terminal: what it finds (the collector took
them, or why not) goes to the collector's status file, and the next step says it.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    from .collector import FAILED, write_status
    from .settings import TraceSettings

    data = json.loads(sys.stdin.buffer.read())
    settings = TraceSettings(url=data["url"], source=data["source"], variables=tuple(tuple(pair) for pair in data["variables"]))
    try:
        from .sdk import Sdk

        sdk = Sdk(settings, lambda message: None)
        readables = [readable for item in data["spans"] for readable in sdk.readables(item["span"], item["trace"])]
        sdk.exporter.export(readables)
    except Exception as exc:  # noqa: BLE001 — nobody to tell but the next step
        write_status(settings.url, FAILED, f"{type(exc).__name__}: {exc}".splitlines()[0])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
