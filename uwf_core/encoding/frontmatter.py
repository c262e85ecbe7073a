"""The frontmatter block of an answer: YAML between `---` lines at its start, then a markdown body."""

from __future__ import annotations


def split_frontmatter(text: str) -> tuple[str, str] | None:
    """(yaml, body) when the answer starts with a `---` ... `---` block (blank lines before it
    allowed), else None. A block after prose or inside a code fence is an agent quoting an
    example, not its answer (the reference reads it the same way)."""
    lines = text.lstrip("\ufeff").splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or lines[first].strip() != "---":
        return None
    last = next((i for i in range(first + 1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if last is None:
        return None
    return "\n".join(lines[first + 1 : last]), "\n".join(lines[last + 1 :]).strip("\n")
