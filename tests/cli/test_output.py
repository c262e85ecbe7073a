"""The CLI's one-line messages show what they say, whatever an agent put in them."""

from __future__ import annotations

from uwf_core.cli.output import MAX_MESSAGE_CHARS, error


def test_control_characters_are_written_as_escapes(capsys):
    error("agent failed: x\r\x1b[2Kgone\nnext café")
    line = capsys.readouterr().err
    assert line == "uwf: error: agent failed: x\\r\\x1b[2Kgone next café\n"


def test_a_huge_message_is_cut_in_the_middle(capsys):
    error("head " + "x" * 20_000_000 + " tail")
    line = capsys.readouterr().err
    assert line.startswith("uwf: error: head ") and line.endswith(" tail\n")
    assert len(line) < MAX_MESSAGE_CHARS + 100 and line.count("\n") == 1


def test_an_agents_streamed_stderr_cannot_drive_the_terminal(uwf, tmp_path):
    from conftest import EXAMPLES

    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "x").json()["thread"]
    agent = "sh -c 'printf \"line\\033[2J\\rgone\\tkept\\n\" >&2; exit 3' --"
    result = uwf("thread", "step", thread, "--agent", agent)
    assert result.code == 1
    assert "\x1b" not in result.err and "\r" not in result.err
    assert "line\\x1b[2J\\rgone\tkept" in result.err
