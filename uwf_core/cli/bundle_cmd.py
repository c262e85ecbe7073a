"""`uwf bundle export | import`: threads and every node they reach, in one verified file."""

from __future__ import annotations

from .common import command, group, repo_of
from .output import emit_json, warn


def register(groups, common) -> None:
    sub = group(groups, common, "bundle", "share threads between roots: one file, every node verified on import")
    export = command(sub, common, "export", cmd_export, "write threads and every node they reach (their forks' shared history too) to one file")
    export.add_argument("threads", nargs="+", metavar="THREAD", help="thread ids (or unique prefixes), active or archived")
    export.add_argument("-o", "--output", required=True, metavar="FILE", help="the bundle file to write (a .tar.gz)")
    imported = command(sub, common, "import", cmd_import, "verify a bundle whole, then add its nodes, workflows and threads")
    imported.add_argument("file", metavar="FILE")


def cmd_export(args) -> int:
    from ..thread.bundle import export_bundle

    emit_json(export_bundle(repo_of(args), args.threads, args.output).to_json())
    return 0


def cmd_import(args) -> int:
    from ..thread.bundle import import_bundle

    report = import_bundle(repo_of(args), args.file)
    for item in report.threads:
        if item.status == "conflict":
            warn(
                f"thread {item.thread} is already in this root with head {item.existing_head}; it was kept, and the bundle's head "
                f"{item.head} was imported as nodes only (`uwf thread fork {item.head}` makes it a thread)"
            )
    emit_json(report.to_json())
    return 0
