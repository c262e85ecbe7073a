"""The document workflow's agents as Python functions over python-docx (`pip install 'uwf[document]'`):
a deterministic writer, so the workflow runs offline, and the differ. An LLM writer is the same
role with another agent (`--agent writer=claude`): it answers the same schema.

The task is the thread's prompt: plain text (generate mode), or JSON {"prompt": ..., "inputDocx":
PATH} (edit mode; PATH absolute, or in the workspace). Generate mode writes output.docx: the
prompt's first line is the title, each other line a paragraph. Edit mode copies the input to
original.docx (kept as it is) and modified.docx, then edits modified.docx a line of the prompt at
a time:

    replace "OLD" with "NEW"     in every paragraph that holds OLD
    append "TEXT"                a paragraph at the end
    delete "TEXT"                every paragraph that holds TEXT (the whole paragraph)

A line that is none of these, or a replace or delete that finds nothing, fails the step.

The differ compares original.docx with modified.docx paragraph by paragraph and writes diff.docx:
each change with its paragraph numbers, the old text struck through, the new underlined.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
from pathlib import Path

EDIT = re.compile(r'^(?:replace "(?P<old>.*)" with "(?P<new>.*)"|(?P<verb>append|delete) "(?P<text>.*)")$')


def write(ctx) -> dict:
    docx = _docx()
    prompt, source = _start(ctx.task)
    workspace = Path(ctx.workspace)
    if source is None:
        lines = [line.strip() for line in prompt.splitlines() if line.strip()] or ["Untitled"]
        document = docx.Document()
        document.add_heading(lines[0], level=0)
        for line in lines[1:]:
            document.add_paragraph(line)
        document.save(workspace / "output.docx")
        return {"mode": "generate", "outputDocx": "output.docx", "sourceDocx": None}
    given = workspace / source
    if not given.is_file():
        raise ValueError(f"inputDocx {source} is not a file (absolute, or a path in the workspace)")
    shutil.copyfile(given, workspace / "original.docx")
    shutil.copyfile(given, workspace / "modified.docx")
    document = docx.Document(str(workspace / "modified.docx"))
    for line in filter(None, (line.strip() for line in prompt.splitlines())):
        _edit(document, line)
    document.save(workspace / "modified.docx")
    return {"mode": "edit", "outputDocx": "modified.docx", "sourceDocx": "original.docx"}


def diff(ctx) -> dict:
    docx = _docx()
    from docx.shared import RGBColor

    writer = ctx.output_of("writer")
    if not writer or writer.get("mode") != "edit":
        raise ValueError("the differ compares an edit: the writer did not run in edit mode")
    workspace = Path(ctx.workspace)
    before = _paragraphs(docx, workspace / writer["sourceDocx"])
    after = _paragraphs(docx, workspace / writer["outputDocx"])
    report = docx.Document()
    report.add_heading("Changes", level=0)
    changed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        changed += max(i2 - i1, j2 - j1)
        report.add_heading(_where(tag, i1, i2, j1, j2), level=2)
        for text in before[i1:i2]:
            run = report.add_paragraph().add_run(text)
            run.font.strike, run.font.color.rgb = True, RGBColor(0xB0, 0x00, 0x00)
        for text in after[j1:j2]:
            run = report.add_paragraph().add_run(text)
            run.font.underline, run.font.color.rgb = True, RGBColor(0x00, 0x70, 0x00)
    if not changed:
        report.add_paragraph("No paragraph changed.")
    report.save(workspace / "diff.docx")
    return {"sourceDocx": writer["sourceDocx"], "modifiedDocx": writer["outputDocx"], "diffDocx": "diff.docx", "changed": changed}


def _docx():
    try:
        import docx
    except ImportError:
        raise RuntimeError("python-docx is not installed: pip install 'uwf[document]' (or python-docx)") from None
    return docx


def _start(task: str) -> tuple[str, str | None]:
    """(the prompt, the input document or None): JSON {"prompt", "inputDocx"}, else the text itself."""
    try:
        data = json.loads(task)
    except ValueError:
        return task, None
    if not isinstance(data, dict) or not isinstance(data.get("prompt"), str):
        return task, None
    source = data.get("inputDocx")
    return data["prompt"], source if isinstance(source, str) and source else None


def _edit(document, line: str) -> None:
    match = EDIT.match(line)
    if match is None:
        raise ValueError(f'cannot follow {line!r}: each line is replace "OLD" with "NEW", append "TEXT" or delete "TEXT"')
    if match["verb"] == "append":
        document.add_paragraph(match["text"])
        return
    found = [paragraph for paragraph in document.paragraphs if (match["text"] or match["old"]) in paragraph.text]
    if not found:  # an edit that changes nothing is a mistake in the prompt: said, not passed over
        raise ValueError(f"cannot follow {line!r}: no paragraph holds {match['text'] or match['old']!r}")
    for paragraph in found:
        if match["verb"] == "delete":
            paragraph._element.getparent().remove(paragraph._element)
        else:
            paragraph.text = paragraph.text.replace(match["old"], match["new"])  # its runs become one


def _paragraphs(docx, path: Path) -> list[str]:
    return [paragraph.text for paragraph in docx.Document(str(path)).paragraphs]


def _where(tag: str, i1: int, i2: int, j1: int, j2: int) -> str:
    if tag == "insert":
        return f"Added as paragraph {_span(j1, j2)}"
    if tag == "delete":
        return f"Removed paragraph {_span(i1, i2)}"
    return f"Changed paragraph {_span(i1, i2)} (now {_span(j1, j2)})"


def _span(start: int, end: int) -> str:
    return str(start + 1) if end - start == 1 else f"{start + 1}-{end}"
