"""The `human` agent from the CLI: $EDITOR on a frontmatter template."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

COMMENT = "<!-- uwf: fill in the frontmatter above and write your answer here. Everything from this line on is your prompt, for reference; it is removed. -->"


def editor_answer(request, scratch_dir: str) -> str | None:
    """Open $EDITOR (or vi) on a template in `scratch_dir`; None when the person leaves it unchanged or empty."""
    from ..errors import UwfError
    from ..store.files import atomic_write, read_text, temp_path_for

    if not sys.stdin.isatty():
        raise UwfError(f"role '{request.role}' is assigned to a human: answer it in uwf-tui, or run `uwf thread step` on a terminal (it opens $EDITOR)")
    path = temp_path_for(os.path.join(scratch_dir, f"human-{request.role}")) + ".md"
    template = request.template + "\n\n" + COMMENT + "\n\n" + request.prompt
    atomic_write(path, template.encode("utf-8"), mode=0o600, sync=False)
    try:
        editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
        try:
            subprocess.run([*editor, path], check=False)
        except OSError as exc:
            raise UwfError(f"cannot start the editor '{editor[0]}' ($VISUAL/$EDITOR): {exc.strerror}") from None
        text = read_text(path) or ""
    finally:
        os.unlink(path)
    answer = text.split(COMMENT, 1)[0].strip()
    if not answer or answer == request.template.strip():
        return None
    return answer + "\n"
