"""examples/document: the seeds' document workflow (issue 42, item 9), run offline by the real `uwf`
with its python-docx agents: generate mode writes output.docx; edit mode keeps original.docx,
writes modified.docx and the differ's diff.docx; the snapshots carry the .docx files."""

from __future__ import annotations

import json

import pytest
from conftest import EXAMPLES

docx = pytest.importorskip("docx", reason="python-docx: pip install -e '.[document]' (.ci/run installs it)")

AGENTS = EXAMPLES / "document" / "agents.py"


@pytest.fixture
def document_root(uwf, tmp_path):
    assert uwf("workflow", "put", str(EXAMPLES / "document" / "document.yaml")).code == 0
    assert uwf("agent", "add", "doc-writer", "--python", f"{AGENTS}:write").code == 0
    assert uwf("agent", "add", "doc-differ", "--python", f"{AGENTS}:diff").code == 0
    return tmp_path


def _run(uwf, workspace, prompt: str) -> str:
    workspace.mkdir()
    started = uwf("thread", "start", "document", "-w", str(workspace), "-p", prompt, "--agent", "writer=doc-writer", "--agent", "differ=doc-differ")
    assert started.code == 0, started
    thread = started.json()["thread"]
    run = uwf("thread", "run", thread)
    assert run.code == 0 and run.json()["reason"] == "done", run
    return thread


def _paragraphs(path) -> list[tuple[str, str]]:
    return [(paragraph.style.name, paragraph.text) for paragraph in docx.Document(str(path)).paragraphs]


def test_generate_mode_writes_output_docx_from_the_prompt(uwf, document_root):
    workspace = document_root / "report"
    thread = _run(uwf, workspace, "Quarterly report\nSales grew 5%.\nCosts fell.")
    [writer] = uwf("thread", "steps", thread).json()
    assert writer["output"] == {"mode": "generate", "outputDocx": "output.docx", "sourceDocx": None}
    assert _paragraphs(workspace / "output.docx") == [("Title", "Quarterly report"), ("Normal", "Sales grew 5%."), ("Normal", "Costs fell.")]
    files = uwf("thread", "files", writer["hash"], "--json")
    assert files.code == 0 and [change["path"] for change in files.json()["changes"]] == ["output.docx"], files.out


def test_edit_mode_keeps_the_original_and_the_differ_lists_the_changed_paragraphs(uwf, document_root, tmp_path):
    given = docx.Document()
    given.add_heading("Quarterly report", level=0)
    for text in ("Sales grew 5%.", "Costs fell.", "Hiring paused."):
        given.add_paragraph(text)
    given.save(str(tmp_path / "input.docx"))
    edits = 'replace "5%" with "7%"\ndelete "Costs"\nappend "Outlook: steady."'
    workspace = document_root / "edit"
    thread = _run(uwf, workspace, json.dumps({"prompt": edits, "inputDocx": str(tmp_path / "input.docx")}))
    writer, differ = uwf("thread", "steps", thread).json()
    assert writer["output"] == {"mode": "edit", "outputDocx": "modified.docx", "sourceDocx": "original.docx"}
    assert differ["output"] == {"sourceDocx": "original.docx", "modifiedDocx": "modified.docx", "diffDocx": "diff.docx", "changed": 3}
    original = [("Title", "Quarterly report"), ("Normal", "Sales grew 5%."), ("Normal", "Costs fell."), ("Normal", "Hiring paused.")]
    assert _paragraphs(workspace / "original.docx") == original
    assert _paragraphs(workspace / "modified.docx") == [
        ("Title", "Quarterly report"), ("Normal", "Sales grew 7%."), ("Normal", "Hiring paused."), ("Normal", "Outlook: steady.")]
    report = docx.Document(str(workspace / "diff.docx")).paragraphs
    texts = [paragraph.text for paragraph in report]
    assert texts == ["Changes", "Changed paragraph 2-3 (now 2)", "Sales grew 5%.", "Costs fell.", "Sales grew 7%.",
                     "Added as paragraph 4", "Outlook: steady."], texts
    assert report[2].runs[0].font.strike and report[4].runs[0].font.underline  # old struck through, new underlined
    checkout = tmp_path / "at-the-writer"
    assert uwf("thread", "checkout", writer["hash"], str(checkout)).code == 0  # the writer's snapshot: no diff yet
    assert sorted(path.name for path in checkout.iterdir()) == ["modified.docx", "original.docx"]
    assert _paragraphs(checkout / "original.docx") == original


def test_an_instruction_it_cannot_follow_fails_the_step_in_one_line(uwf, document_root, tmp_path):
    docx.Document().save(str(tmp_path / "input.docx"))
    workspace = document_root / "bad"
    workspace.mkdir()
    prompt = json.dumps({"prompt": "make it nicer", "inputDocx": str(tmp_path / "input.docx")})
    thread = uwf("thread", "start", "document", "-w", str(workspace), "-p", prompt, "--agent", "writer=doc-writer").json()["thread"]
    failed = uwf("thread", "step", thread)
    assert failed.code == 1 and "cannot follow 'make it nicer'" in failed.err and failed.err.count("\n") == 1, failed.err
    assert uwf("thread", "steps", thread).json() == []


def test_an_edit_that_finds_nothing_fails_rather_than_passing_over(uwf, document_root, tmp_path):
    given = docx.Document()
    given.add_paragraph("Sales grew 5%.")
    given.save(str(tmp_path / "input.docx"))
    workspace = document_root / "nothing"
    workspace.mkdir()
    prompt = json.dumps({"prompt": 'replace "12%" with "9%"', "inputDocx": str(tmp_path / "input.docx")})
    thread = uwf("thread", "start", "document", "-w", str(workspace), "-p", prompt, "--agent", "writer=doc-writer").json()["thread"]
    failed = uwf("thread", "step", thread)
    assert failed.code == 1 and "no paragraph holds '12%'" in failed.err, failed.err
