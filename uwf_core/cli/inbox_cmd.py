"""`uwf inbox` (every thread waiting for a person, on any backend) and `uwf thread answer`
(answer one from any host: a file, stdin or $EDITOR)."""

from __future__ import annotations

import sys

from .common import command, repo_of
from .output import age_text, emit_json, emit_text


def register(groups, common) -> None:
    parser = groups.add_parser(
        "inbox",
        help="threads waiting for a person (a role whose agent is `human`), on every host",
        description="Every active thread whose next role is a person's: its workflow, role, since when, and the prompt. "
        "Answer one with `uwf thread answer THREAD`.",
        parents=[common],
    )
    parser.add_argument("--json", action="store_true", help="JSON (with each prompt) instead of a table")
    parser.set_defaults(handler=cmd_inbox)


def register_answer(sub, common) -> None:
    answer = command(sub, common, "answer", cmd_answer, "answer the person's role a thread waits for (`uwf inbox`), from any host")
    answer.add_argument("thread")
    answer.add_argument(
        "--output", metavar="FILE",
        help="the answer: frontmatter markdown, or the output as a JSON or YAML mapping (- for stdin); default: $EDITOR on a template",
    )


def cmd_inbox(args) -> int:
    from ..engine.queue.inbox import inbox

    items = inbox(repo_of(args))
    if args.json:
        emit_json([item.to_json() for item in items])
        return 0
    if not items:
        emit_text("nobody is asked anything")
        return 0
    import time

    now = int(time.time() * 1000)
    for item in items:
        queued = "  queued" if item.queued else ""
        emit_text(f"{item.thread}  {item.workflow}  {item.role}  waiting {age_text(now - item.since)}{queued}")
        emit_text(f"    {_first_line(item.instruction or item.task or item.description)}")
    return 0


def cmd_answer(args) -> int:
    from ..engine.queue.inbox import answer_thread
    from ..errors import UwfError

    repo = repo_of(args)
    text = _answer_text(args, repo)
    if text is None:
        raise UwfError("the answer was left empty or unchanged: nothing was written")
    try:
        result = answer_thread(repo, args.thread, text)
    except UwfError as exc:
        if not args.output:  # written in $EDITOR: kept, not thrown away with the refusal
            exc.message = f"{exc.message} (your answer is kept in {_keep(repo, args.thread, text)}: fix it and answer with --output that file)"
            exc.args = (exc.message,)
        raise
    data = result.to_json()
    data["queued"] = any(entry.thread == result.thread for entry in repo.backend.queue.entries())
    emit_json(data)
    return 0


def _answer_text(args, repo) -> str | None:
    if args.output:
        from ..errors import UwfError
        from ..store.files import read_text

        text = sys.stdin.read() if args.output == "-" else read_text(args.output)
        if text is None:
            raise UwfError(f"cannot read {args.output}: no such file")
        return text
    from ..engine.attempt import HumanRequest
    from ..engine.queue.inbox import waiting_item
    from ..engine.prompt import frontmatter_template
    from ..errors import UwfError
    from .human_editor import editor_answer

    item = waiting_item(repo, args.thread)
    if not sys.stdin.isatty():
        raise UwfError(f"no terminal for $EDITOR: give the answer to {item.role} with --output FILE (or --output - to read it from stdin)")
    request = HumanRequest(item.thread, item.workflow, item.role, item.prompt, item.schema, frontmatter_template(item.schema), item.instruction)
    return editor_answer(request, repo.backend.scratch_dir)


def _keep(repo, thread: str, text: str) -> str:
    """A refused answer written in $EDITOR, saved where the person can find it again."""
    import os

    from ..store.files import atomic_write

    path = os.path.join(repo.backend.scratch_dir, f"answer-{thread}.md")
    os.makedirs(repo.backend.scratch_dir, exist_ok=True)
    atomic_write(path, text.encode("utf-8"), mode=0o600, sync=False)
    return path


def _first_line(text: str) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= 100 else line[:99] + "…"
