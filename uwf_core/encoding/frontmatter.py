"""The frontmatter block of an answer: YAML between `---` lines, then a markdown body."""

from __future__ import annotations


def split_frontmatter(text: str) -> tuple[str, str] | None:
    """(yaml, body) of the first `---` ... `---` block, or None."""
    lines = text.lstrip("\ufeff").splitlines()
    try:
        first = next(i for i, line in enumerate(lines) if line.strip() == "---")
        last = next(i for i in range(first + 1, len(lines)) if lines[i].strip() in ("---", "..."))
    except StopIteration:
        return None
    return "\n".join(lines[first + 1 : last]), "\n".join(lines[last + 1 :]).strip("\n")
