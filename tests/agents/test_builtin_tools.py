"""uwf-builtin's tools: the workspace sandbox and every tool's behaviour, through call_tool."""

from __future__ import annotations

import json
import os
import re
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
import respx
from conftest import processes_with

from uwf_core.agents.builtin import tools as builtin_tools
from uwf_core.agents.builtin.tools import (
    MAX_READ_CHARS,
    MAX_RESULT_CHARS,
    ToolSettings,
    call_tool,
    tool_definitions,
    truncate,
)

SECRET = "top-secret-outside-content"


@pytest.fixture
def ws(tmp_path) -> Path:
    """A workspace with a few files, and a directory outside it holding a secret."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\nbeta\ngamma\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "code.py").write_text("def foo():\n    return 1\n\ndef bar():\n    return 2\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    return workspace


@pytest.fixture
def outside(ws) -> Path:
    return ws.parent / "outside"


def settings(ws: Path, **kw) -> ToolSettings:
    return ToolSettings(workspace=str(ws), **kw)


def call(ws: Path, name: str, args, **kw) -> tuple[str, bool]:
    return call_tool(settings(ws, **kw), name, args if isinstance(args, str) else json.dumps(args))


def refused(result: tuple[str, bool], *fragments: str) -> str:
    text, ok = result
    assert ok is False, text
    assert text.startswith("error: "), text
    assert SECRET not in text
    for fragment in fragments:
        assert fragment in text, text
    return text


# -- the sandbox -------------------------------------------------------------------


@pytest.mark.parametrize("path", ["../outside/secret.txt", "sub/../../outside/secret.txt", "..", "sub/../.."])
def test_dotdot_is_refused(ws, path):
    refused(call(ws, "read_file", {"path": path}), "leaves the workspace")


def test_dotdot_is_refused_for_every_path_tool(ws, outside):
    refused(call(ws, "write_file", {"path": "../outside/new.txt", "content": "x"}), "leaves the workspace")
    refused(call(ws, "edit_file", {"path": "../outside/secret.txt", "search": "top", "replace": "x"}), "leaves the workspace")
    refused(call(ws, "list_dir", {"path": ".."}), "leaves the workspace")
    refused(call(ws, "grep", {"pattern": "secret", "path": "../outside"}), "leaves the workspace")
    refused(call(ws, "run_command", {"command": "ls", "cwd": ".."}, allow_run_command=True), "leaves the workspace")
    assert not (outside / "new.txt").exists()
    assert (outside / "secret.txt").read_text() == SECRET + "\n"


@pytest.mark.parametrize("tool", ["read_file", "write_file", "list_dir"])
def test_absolute_path_is_refused(ws, outside, tool):
    target = str(outside / ("secret.txt" if tool == "read_file" else "new.txt") if tool != "list_dir" else outside)
    refused(call(ws, tool, {"path": target, "content": "x"}), "is absolute")
    assert not (outside / "new.txt").exists()


def test_absolute_path_inside_the_workspace_is_refused_too(ws):
    refused(call(ws, "read_file", {"path": str(ws / "a.txt")}), "is absolute")


def test_home_path_is_refused(ws):
    refused(call(ws, "read_file", {"path": "~/.bashrc"}), "is absolute")


def test_symlink_to_a_file_outside_is_refused(ws, outside):
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    refused(call(ws, "read_file", {"path": "link.txt"}), "resolves outside the workspace")
    refused(call(ws, "write_file", {"path": "link.txt", "content": "overwritten"}), "resolves outside")
    refused(call(ws, "edit_file", {"path": "link.txt", "search": "top", "replace": "x"}), "resolves outside")
    assert (outside / "secret.txt").read_text() == SECRET + "\n"


def test_dangling_symlink_pointing_outside_cannot_create_a_file(ws, outside):
    (ws / "dangling").symlink_to(outside / "created.txt")
    refused(call(ws, "write_file", {"path": "dangling", "content": "x"}), "resolves outside")
    assert not (outside / "created.txt").exists()


def test_symlinked_directory_pointing_outside_is_refused(ws, outside):
    (ws / "linkdir").symlink_to(outside, target_is_directory=True)
    refused(call(ws, "read_file", {"path": "linkdir/secret.txt"}), "resolves outside the workspace")
    refused(call(ws, "list_dir", {"path": "linkdir"}), "resolves outside")
    refused(call(ws, "write_file", {"path": "linkdir/new.txt", "content": "x"}), "resolves outside")
    refused(call(ws, "grep", {"pattern": "secret", "path": "linkdir"}), "resolves outside")
    refused(call(ws, "run_command", {"command": "cat secret.txt", "cwd": "linkdir"}, allow_run_command=True), "resolves outside")
    assert not (outside / "new.txt").exists()


def test_grep_of_the_workspace_does_not_follow_links_outside(ws, outside):
    (ws / "linkdir").symlink_to(outside, target_is_directory=True)
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    text, ok = call(ws, "grep", {"pattern": "top-secret"})
    assert ok is True
    assert text == "no matches"


def test_symlink_within_the_workspace_is_allowed(ws):
    (ws / "alias.txt").symlink_to(ws / "a.txt")
    assert call(ws, "read_file", {"path": "alias.txt"}) == ("alpha\nbeta\ngamma\n", True)


def test_workspace_itself_may_be_reached_through_a_symlink(tmp_path, ws):
    via = tmp_path / "via"
    via.symlink_to(ws, target_is_directory=True)
    assert call(via, "read_file", {"path": "a.txt"}) == ("alpha\nbeta\ngamma\n", True)


@pytest.mark.parametrize("args", [{}, {"path": ""}, {"path": "   "}, {"path": 5}, {"path": None}, {"path": ["a.txt"]}])
def test_bad_paths_are_error_results(ws, args):
    refused(call(ws, "read_file", args), "path must be a non-empty string")


# -- read_file -----------------------------------------------------------------------


def test_read_file_small(ws):
    assert call(ws, "read_file", {"path": "a.txt"}) == ("alpha\nbeta\ngamma\n", True)
    assert call(ws, "read_file", {"path": "a.txt", "offset": 6, "limit": 4}) == ("beta\n… [file has 17 bytes; showing characters 6-10; pass offset to read on]", True)


def test_read_file_missing_and_directory(ws):
    refused(call(ws, "read_file", {"path": "nope.txt"}), "'nope.txt' does not exist")
    refused(call(ws, "read_file", {"path": "sub"}), "is a directory; use list_dir")


def test_read_file_bad_offset_is_an_error_result(ws):
    refused(call(ws, "read_file", {"path": "a.txt", "offset": "abc"}), "read_file failed")


def test_huge_file_is_truncated_with_a_note(ws):
    size = 200_000
    lines = "".join(f"line {i:06d}\n" for i in range(size // 12 + 1))[:size]
    (ws / "big.txt").write_text(lines)
    text, ok = call(ws, "read_file", {"path": "big.txt"})
    assert ok is True
    assert len(text) < MAX_RESULT_CHARS + 200
    assert text.startswith("line 000000\nline 000001\n")
    assert f"file has {size} bytes; showing characters 0-{MAX_READ_CHARS}; pass offset to read on" in text
    assert "characters truncated" in text
    # reading on from an offset gives the end of the file, without a note
    tail, ok = call(ws, "read_file", {"path": "big.txt", "offset": size - 12})
    assert ok is True
    assert tail == lines[-12:]


def test_binary_file_is_described_not_dumped(ws):
    data = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 10
    (ws / "image.png").write_bytes(data)
    text, ok = call(ws, "read_file", {"path": "image.png"})
    assert ok is True
    assert text == f"'image.png' is a binary file ({len(data)} bytes); not shown"


# -- write_file / edit_file ---------------------------------------------------------


def test_write_file_creates_directories(ws):
    assert call(ws, "write_file", {"path": "new/deep/file.md", "content": "hello"}) == ("wrote 5 characters to new/deep/file.md", True)
    assert (ws / "new" / "deep" / "file.md").read_text() == "hello"
    refused(call(ws, "write_file", {"path": "x.md", "content": 5}), "content must be a string")
    refused(call(ws, "write_file", {"path": "sub", "content": "x"}), "is a directory")


def test_edit_file_unique(ws):
    assert call(ws, "edit_file", {"path": "a.txt", "search": "beta", "replace": "BETA"}) == ("replaced 1 occurrence(s) in a.txt", True)
    assert (ws / "a.txt").read_text() == "alpha\nBETA\ngamma\n"


def test_edit_file_ambiguous(ws):
    before = (ws / "sub" / "code.py").read_text()
    refused(call(ws, "edit_file", {"path": "sub/code.py", "search": "return", "replace": "yield"}), "occurs 2 times", "make it unique or pass all=true")
    assert (ws / "sub" / "code.py").read_text() == before
    assert call(ws, "edit_file", {"path": "sub/code.py", "search": "return", "replace": "yield", "all": True}) == ("replaced 2 occurrence(s) in sub/code.py", True)
    assert (ws / "sub" / "code.py").read_text() == before.replace("return", "yield")


def test_edit_file_not_found(ws):
    refused(call(ws, "edit_file", {"path": "a.txt", "search": "delta", "replace": "x"}), "the search text was not found in a.txt")
    assert (ws / "a.txt").read_text() == "alpha\nbeta\ngamma\n"
    refused(call(ws, "edit_file", {"path": "missing.txt", "search": "a", "replace": "b"}), "does not exist")
    refused(call(ws, "edit_file", {"path": "a.txt", "search": "", "replace": "b"}), "non-empty 'search'")
    refused(call(ws, "edit_file", {"path": "a.txt", "search": "beta"}), "'replace' string")


# -- list_dir / grep ---------------------------------------------------------------


def test_list_dir(ws):
    (ws / "alias").symlink_to(ws / "a.txt")
    assert call(ws, "list_dir", {}) == ("a.txt (17 bytes)\nalias -> (symlink)\nsub/", True)
    assert call(ws, "list_dir", {"path": "sub"}) == (f"code.py ({(ws / 'sub' / 'code.py').stat().st_size} bytes)", True)
    (ws / "empty").mkdir()
    assert call(ws, "list_dir", {"path": "empty"}) == ("(empty directory)", True)
    refused(call(ws, "list_dir", {"path": "a.txt"}), "is not a directory")
    refused(call(ws, "list_dir", {"path": "nowhere"}), "does not exist")


def test_grep_with_a_regex(ws):
    (ws / "blob.bin").write_bytes(b"def hidden\x00\x01")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("def skipped()\n")
    text, ok = call(ws, "grep", {"pattern": r"^def \w+\("})
    assert ok is True
    assert text == "sub/code.py:1: def foo():\nsub/code.py:4: def bar():"
    assert call(ws, "grep", {"pattern": "^(alpha|gamma)$", "path": "a.txt"}) == ("a.txt:1: alpha\na.txt:3: gamma", True)
    assert call(ws, "grep", {"pattern": "zeta"}) == ("no matches", True)


def test_grep_bad_regex(ws):
    refused(call(ws, "grep", {"pattern": "def (foo"}), "invalid regular expression")
    refused(call(ws, "grep", {"pattern": ""}), "needs a 'pattern'")


# -- run_command ---------------------------------------------------------------------


def test_run_command_refused_unless_allowed(ws):
    refused(call(ws, "run_command", {"command": "touch made-it"}), "run_command is not enabled", "--allow-run-command")
    assert not (ws / "made-it").exists()
    names = [t["function"]["name"] for t in tool_definitions(settings(ws))]
    assert names == ["read_file", "write_file", "edit_file", "list_dir", "grep"]
    names = [t["function"]["name"] for t in tool_definitions(settings(ws, allow_run_command=True, allow_fetch_url=True))]
    assert names == ["read_file", "write_file", "edit_file", "list_dir", "grep", "run_command", "fetch_url"]


def test_run_command_runs_in_the_workspace(ws):
    text, ok = call(ws, "run_command", {"command": "pwd; echo to-err >&2; exit 3"}, allow_run_command=True)
    assert ok is True
    assert text == f"exit code 3\n--- stdout ---\n{os.path.realpath(ws)}\n\n--- stderr ---\nto-err"
    text, ok = call(ws, "run_command", {"command": "pwd", "cwd": "sub"}, allow_run_command=True)
    assert text.startswith(f"exit code 0\n--- stdout ---\n{os.path.realpath(ws / 'sub')}\n")
    refused(call(ws, "run_command", {"command": "  "}, allow_run_command=True), "needs a 'command'")


def test_run_command_timeout_kills_the_group(ws):
    marker = f"toolmarker-{uuid.uuid4().hex}"
    command = f"{sys.executable} -c 'import time; time.sleep(300)' {marker} & sleep 300"
    started = time.monotonic()
    text, ok = call(ws, "run_command", {"command": command, "timeout": 0.5}, allow_run_command=True)
    elapsed = time.monotonic() - started
    assert ok is True
    assert text.startswith("timed out after 0.5s (killed)\n")
    assert elapsed < 10
    deadline = time.monotonic() + 5
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker) == []


def test_run_command_default_timeout_comes_from_settings(ws):
    text, ok = call(ws, "run_command", {"command": "sleep 30"}, allow_run_command=True, command_timeout=0.3)
    assert text.startswith("timed out after 0.3s (killed)")


def test_run_command_output_is_truncated(ws):
    text, ok = call(ws, "run_command", {"command": "head -c 100000 /dev/zero | tr '\\0' x; echo; echo END"}, allow_run_command=True)
    assert ok is True
    assert len(text) < MAX_RESULT_CHARS + 200
    assert text.startswith("exit code 0\n--- stdout ---\nxxxx")
    assert "characters truncated" in text
    assert text.endswith("xxx\nEND\n\n--- stderr ---\n")


def test_run_command_truncation_note_tells_how_much_was_cut(ws):
    text, ok = call(ws, "run_command", {"command": "head -c 100000 /dev/zero | tr '\\0' x; echo; echo END"}, allow_run_command=True)
    full = f"exit code 0\n--- stdout ---\n{'x' * 100000}\nEND\n\n--- stderr ---\n"
    notes = [int(n) for n in re.findall(r"\[(\d+) characters truncated\]", text)]
    assert len(notes) == 1
    kept = len(text) - len(re.search(r"\n… \[\d+ characters truncated\] …\n", text).group(0))
    assert notes[0] == len(full) - kept


def test_run_command_does_not_see_hidden_env(ws, monkeypatch):
    monkeypatch.setenv("UWF_TEST_HIDDEN_KEY", "hidden-value-4242")
    monkeypatch.setenv("UWF_TEST_VISIBLE", "visible-value-1717")
    text, ok = call(
        ws,
        "run_command",
        {"command": 'echo "[$UWF_TEST_HIDDEN_KEY][$UWF_TEST_VISIBLE]"; env'},
        allow_run_command=True,
        hidden_env=frozenset({"UWF_TEST_HIDDEN_KEY"}),
    )
    assert ok is True
    assert "[][visible-value-1717]" in text
    assert "hidden-value-4242" not in text
    assert "UWF_TEST_HIDDEN_KEY" not in text


# -- fetch_url (mocked: nothing real is fetched) --------------------------------------


def test_fetch_url_refused_unless_allowed(ws):
    with respx.mock(assert_all_called=False) as mock:
        route = mock.get("https://example.test/page")
        refused(call(ws, "fetch_url", {"url": "https://example.test/page"}), "fetch_url is not enabled", "--allow-fetch-url")
        assert route.call_count == 0


def test_fetch_url_when_allowed(ws):
    with respx.mock:
        respx.get("https://example.test/page").mock(return_value=httpx.Response(200, text="hello page", headers={"content-type": "text/plain"}))
        respx.get("https://example.test/img").mock(return_value=httpx.Response(200, content=b"\x89PNG" * 10, headers={"content-type": "image/png"}))
        respx.get("https://example.test/down").mock(side_effect=httpx.ConnectError("boom"))
        assert call(ws, "fetch_url", {"url": "https://example.test/page"}, allow_fetch_url=True) == ("200\nhello page", True)
        assert call(ws, "fetch_url", {"url": "https://example.test/img"}, allow_fetch_url=True) == ("200, image/png, 40 bytes; not text, not shown", True)
        refused(call(ws, "fetch_url", {"url": "https://example.test/down"}, allow_fetch_url=True), "cannot fetch https://example.test/down")
    refused(call(ws, "fetch_url", {"url": "file:///etc/passwd"}, allow_fetch_url=True), "needs an http:// or https://")


# -- the dispatcher -----------------------------------------------------------------


def test_unknown_tool(ws):
    text = refused(call(ws, "delete_everything", {"path": "a.txt"}), "unknown tool 'delete_everything'")
    assert "read_file" in text and "fetch_url" in text
    assert (ws / "a.txt").exists()


@pytest.mark.parametrize("raw", ['{"path": "a.txt"', "not json", "{'path': 'a.txt'}"])
def test_invalid_json_arguments(ws, raw):
    refused(call_tool(settings(ws), "read_file", raw), "the arguments of read_file are not valid JSON")


@pytest.mark.parametrize("raw", ['["a.txt"]', '"a.txt"', "5"])
def test_arguments_that_are_not_an_object(ws, raw):
    refused(call_tool(settings(ws), "read_file", raw), "must be a JSON object")


def test_arguments_as_a_dict_and_empty_string(ws):
    assert call_tool(settings(ws), "read_file", {"path": "a.txt"}) == ("alpha\nbeta\ngamma\n", True)
    assert call_tool(settings(ws), "list_dir", "")[1] is True


def test_call_tool_never_raises_on_odd_arguments(ws):
    odd = [
        ("read_file", {"path": "a.txt", "limit": "many"}),
        ("edit_file", {"path": "a.txt", "search": 1, "replace": 2}),
        ("write_file", {"path": "a.txt"}),
        ("grep", {"pattern": 7}),
        ("run_command", {"command": 1}),
        ("fetch_url", {"url": 1}),
        ("list_dir", {"path": 3}),
    ]
    for name, args in odd:
        text, ok = call_tool(settings(ws, allow_run_command=True, allow_fetch_url=True), name, args)
        assert ok is False and text.startswith("error: "), (name, text)


def test_truncate():
    assert truncate("short", 10) == "short"
    text = "a" * 60 + "b" * 40
    out = truncate(text, 30)
    assert out == "a" * 20 + "\n… [70 characters truncated] …\n" + "b" * 10
    assert builtin_tools.MAX_RESULT_CHARS == MAX_RESULT_CHARS


def test_a_catastrophic_grep_pattern_is_stopped_not_hung(tmp_path, monkeypatch):
    import time

    (tmp_path / "a.txt").write_text("a" * 40 + "!\nhello\n")
    monkeypatch.setattr(builtin_tools, "GREP_TIMEOUT_SECONDS", 1.0)
    settings = builtin_tools.ToolSettings(workspace=str(tmp_path))
    began = time.monotonic()
    result, ok = builtin_tools.call_tool(settings, "grep", {"pattern": "(a+)+$"})
    assert not ok and "ran longer than 1 s and was stopped" in result
    assert time.monotonic() - began < 5
    assert builtin_tools.call_tool(settings, "grep", {"pattern": "hel+o"}) == ("a.txt:2: hello", True)


def test_run_command_gets_no_keys_and_no_way_to_the_root(tmp_path, monkeypatch):
    monkeypatch.setenv("UWF_STORAGE_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("SECRET_KEY_X", "sk-should-not-leak")
    settings = builtin_tools.ToolSettings(workspace=str(tmp_path), allow_run_command=True, hidden_env=frozenset({"SECRET_KEY_X"}))
    result, ok = builtin_tools.call_tool(settings, "run_command", {"command": "env"})
    assert ok
    assert "UWF_STORAGE_ROOT" not in result and "sk-should-not-leak" not in result
