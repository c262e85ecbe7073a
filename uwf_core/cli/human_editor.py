"""The `human` agent from the CLI: $EDITOR on a frontmatter template."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

COMMENT = "<!-- uwf: fill in the frontmatter above and write your answer here. Everything from this line on is your prompt, for reference; it is removed. -->"


def editor_answer(request) -> str | None:
    """Open $EDITOR (or vi) on a template; None when the person leaves it unchanged or empty."""
    if not sys.stdin.isatty():
        return None
    from ..storage import atomic_write, temp_path_for

    path = temp_path_for(os.path.join(os.getcwd(), f"uwf-{request.role}.md")).removesuffix(".tmp") + ".md"
    template = request.template + "\n\n" + COMMENT + "\n\n" + request.prompt
    atomic_write(path, template.encode("utf-8"), mode=0o600, sync=False)
    try:
        editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
        subprocess.run([*editor, path], check=False)
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    finally:
        os.unlink(path)
    answer = text.split(COMMENT, 1)[0].strip()
    if not answer or answer == request.template.strip():
        return None
    return answer + "\n"
