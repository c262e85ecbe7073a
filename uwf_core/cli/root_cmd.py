"""`uwf root copy SRC DST`: a whole root from one backend to another (directory <-> PostgreSQL)."""

from __future__ import annotations


def register(groups, common) -> None:
    from .common import group

    sub = group(groups, common, "root", "whole roots: copy one to another place or backend")
    copy = sub.add_parser("copy", help="copy every node, head, archived thread, run, workflow and config", parents=[common])
    copy.add_argument("source", help="a directory or a postgresql:// URL")
    copy.add_argument("destination", help="a directory or a postgresql:// URL")
    copy.set_defaults(handler=cmd_copy)


def cmd_copy(args) -> int:
    from ..store.copy import copy_root
    from .output import emit_json

    emit_json(copy_root(args.source, args.destination, progress=True).to_json())
    return 0
