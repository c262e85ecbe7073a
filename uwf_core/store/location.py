"""A root's location as text people may see: below store/open.py and the backends, which both
show it (a PostgreSQL URL's password must never reach a message)."""

from __future__ import annotations


def display_location(location: str) -> str:
    """A root's location as people may see it: a URL's password hidden."""
    import re

    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", location)
