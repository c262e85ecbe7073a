"""The docs harness itself, on pages written here: it splits blocks into commands and expected
output as the conventions say, matches output shapes and binds ids, and fails with a message
that names the page, the line, the command and both outputs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from doc_blocks import (
    DocFailure,
    check_yaml_page,
    doc_pages,
    load_page,
    match_output,
    parse_fences,
    python_script,
    run_python_page,
    run_shell_page,
    shell_commands,
    substitute,
)

FENCE = "```"
ULID_A = "01M88B1AGC4QX2W0D5YH3K8ZRT"
HASH_A = "23CTNS3Z8JF75"


def page(tmp_path: Path, text: str, name: str = "page.md"):
    """A page written under tmp_path/docs, loaded as the real tests load one."""
    docs = tmp_path / "docs"
    path = docs / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).replace("'''", FENCE))
    return load_page(path, docs)


def failure(call) -> str:
    with pytest.raises(DocFailure) as caught:
        call()
    return str(caught.value)


# -- parsing ---------------------------------------------------------------------------------------


def test_a_run_marker_applies_to_the_next_block_through_blank_lines():
    fences, problems = parse_fences("<!-- test: run -->\n\n```console\n$ echo hi\nhi\n```\n\n```sh\necho no\n```\n")
    assert problems == []
    assert [(fence.lang, fence.line, fence.marker) for fence in fences] == [("console", 3, "run"), ("sh", 8, None)]


def test_a_marker_followed_by_text_or_nothing_or_a_typo_is_a_problem():
    text = "<!-- test: run -->\nSome prose.\n```sh\ntrue\n```\n<!-- test:run -->\n```sh\ntrue\n```\n<!-- test: skip -->\n"
    fences, problems = parse_fences(text)
    assert fences[0].marker is None and fences[1].marker is None
    assert len(problems) == 3
    assert "line 1: <!-- test: run --> is not followed by a fenced block (line 2 is not one)" in problems[0]
    assert "line 6: unknown test marker '<!-- test:run -->'" in problems[1]
    assert "line 10: <!-- test: skip --> is not followed by a fenced block (the page ends)" in problems[2]
    assert parse_fences("Prose may name the marker, `<!-- test: run -->`, in code.\n")[1] == []


def test_a_run_marker_may_ask_for_postgres_and_nothing_else(tmp_path):
    p = page(tmp_path, "<!-- test: run postgres -->\n'''sh\ncreatedb uwf\n'''\n\n<!-- test: run -->\n'''sh\ntrue\n'''\n")
    assert p.problems == [] and p.needs == {"postgres"} and [fence.needs for fence in p.fences] == [("postgres",), ()]
    _, problems = parse_fences("<!-- test: run mysql -->\n```sh\ntrue\n```\n<!-- test: skip postgres -->\n```yaml\na: 1\n```\n")
    assert len(problems) == 2
    assert problems[0].startswith("line 1: unknown test marker '<!-- test: run mysql -->'")
    assert problems[1].startswith("line 5: unknown test marker '<!-- test: skip postgres -->'")


def test_a_run_marker_above_a_block_that_cannot_run_is_a_problem():
    _, problems = parse_fences("<!-- test: run -->\n```yaml\na: 1\n```\n")
    assert problems == ["line 1: <!-- test: run --> is above a ```yaml block; only console, sh and bash blocks run"]


def test_markers_and_fences_inside_a_block_are_its_content():
    text = "````markdown\n<!-- test: run -->\n```console\n$ false\n```\n````\n"
    fences, problems = parse_fences(text)
    assert problems == []
    assert len(fences) == 1 and fences[0].lang == "markdown" and fences[0].lines[0] == "<!-- test: run -->"


def test_a_block_in_a_list_item_loses_the_items_indent_and_an_unclosed_block_is_a_problem():
    fences, problems = parse_fences("1. Run it:\n\n   <!-- test: run -->\n   ```sh\n   cd examples\n     echo deeper\n   ```\n\n```sh\nnever closed\n")
    assert fences[0].marker == "run" and fences[0].lines == ("cd examples", "  echo deeper")
    assert problems == ["line 9: the ```sh block opened here is never closed"]


def test_console_commands_continuations_heredocs_output_and_exit(tmp_path):
    p = page(tmp_path, """\
        <!-- test: run -->
        '''console
        $ uwf workflow put \\
            examples/solve-issue.yaml
        {
          "name": "solve-issue"
        }

        $ cat > hello.txt <<'EOF'
        $ not a command: inside the heredoc
        EOF
        $ uwf thread show nothing
        uwf: error: no thread 'nothing'
        (exit 1)
        $ true
        '''
        """)
    assert p.problems == []
    put, cat, show, true = p.commands
    assert put.text == "uwf workflow put \\\n    examples/solve-issue.yaml" and put.line == 3 and put.block_line == 2
    assert [text for _, text in put.expected] == ["{", '  "name": "solve-issue"', "}"] and put.expected[0][0] == 5
    assert cat.text == "cat > hello.txt <<'EOF'\n$ not a command: inside the heredoc\nEOF" and cat.expected == []
    assert (show.exit, [text for _, text in show.expected]) == (1, ["uwf: error: no thread 'nothing'"])
    assert (true.exit, true.expected) == (0, [])


def test_sh_blocks_run_every_line_but_comments_and_blanks():
    fences, _ = parse_fences("```sh\n# set up\ncd examples   # here\n\nexport A=1 \\\n  B=2\n```\n")
    commands, problems = shell_commands(fences[0])
    assert problems == []
    assert [command.text for command in commands] == ["cd examples   # here", "export A=1 \\\n  B=2"]
    assert all(command.expected == [] and command.exit == 0 for command in commands)


def test_output_before_the_first_command_is_a_problem(tmp_path):
    p = page(tmp_path, "<!-- test: run -->\n'''console\nuwf thread list\n'''\n")
    assert p.problems == ["page.md: line 3: output before the block's first `$ ` command: 'uwf thread list'"]


def test_doc_pages_skip_symbolic_links_and_screenshots(tmp_path):
    docs = tmp_path / "docs"
    (docs / "tutorials").mkdir(parents=True)
    (docs / "tutorials" / "first.md").write_text("x")
    (docs / "index.md").write_text("x")
    (docs / "notes.txt").write_text("x")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "other.md").write_text("x")
    (docs / "screenshots").symlink_to(tmp_path / "elsewhere")
    (docs / "linked").symlink_to(tmp_path / "elsewhere")
    assert [path.relative_to(docs).as_posix() for path in doc_pages(docs)] == ["index.md", "tutorials/first.md"]


# -- matching --------------------------------------------------------------------------------------


def matches(expected: str, actual: str, bindings: dict | None = None):
    result, _ = match_output(textwrap.dedent(expected).splitlines(), textwrap.dedent(actual), dict(bindings or {}))
    return result


def test_trailing_whitespace_and_trailing_blank_lines_do_not_count():
    assert matches("a  \nb\n\n", "a\nb   \n\n\n") == {}
    assert matches("a\nb", "a\nc") is None


def test_a_dots_line_matches_any_number_of_lines_and_dots_in_a_line_any_text():
    assert matches("{\n  ...\n}", "{\n}") == {}
    assert matches("{\n...\n}", '{\n  "a": 1,\n  "b": 2\n}') == {}
    assert matches('  "summary": "...",', '  "summary": "anything at all",') == {}
    assert matches("first\n...\nlast", "first\nmiddle") is None


def test_numbers_with_a_decimal_point_and_iso_times_match_any():
    assert matches("  1  planner    script       ?     ?  0.2s", "  1  planner    script       ?     ?  13.5s") == {}
    assert matches("cost $0.12", "cost $3") == {}
    assert matches("uwf 0.4.1", "uwf 0.4.2") is None  # a version is text
    assert matches("_step at 2025-01-02 10:11:12 UTC_", "_step at 2026-11-30 08:17:39 UTC_") == {}
    assert matches('"at": "2025-01-02T10:11:12Z"', '"at": "2026-11-30T08:17:39.123+00:00"') == {}


def test_ids_match_any_of_their_kind_and_bind():
    shown = f'"thread": "{ULID_A}",\n"head": "{HASH_A}"'
    actual = '"thread": "01M8NRFTTYSBDQXJR67JN98AHQ",\n"head": "8AAYMJ3XCJY9D"'
    assert matches(shown, actual) == {ULID_A: "01M8NRFTTYSBDQXJR67JN98AHQ", HASH_A: "8AAYMJ3XCJY9D"}
    assert matches(f'"head": "{HASH_A}"', '"head": "01M8NRFTTYSBDQXJR67JN98AHQ"') is None  # a hash is not a thread id
    assert matches(f'"thread": "{ULID_A}"', '"thread": "81M8NRFTTYSBDQXJR67JN98AHQ"') is None  # no ULID starts with 8


def test_a_bound_id_must_stand_for_the_same_actual_one_later():
    bindings = {HASH_A: "8AAYMJ3XCJY9D"}
    assert matches(f"head {HASH_A}", "head 8AAYMJ3XCJY9D", bindings) == bindings
    assert matches(f"head {HASH_A}", "head 2MSJP4BQJ3VZS", bindings) is None
    assert matches(f"{HASH_A} -> {HASH_A}", "2MSJP4BQJ3VZS -> 8AAYMJ3XCJY9D") is None  # twice in one line
    assert matches(f"{HASH_A}\n{HASH_A}", "2MSJP4BQJ3VZS\n8AAYMJ3XCJY9D") is None  # twice in one output


def test_an_abbreviated_id_binds_its_prefix():
    bound = matches('"thread": "01M88B1AGC...",', '"thread": "01M8NRFTTYSBDQXJR67JN98AHQ",')
    assert bound == {"01M88B1AGC": "01M8NRFTTYSBDQXJR67JN98AHQ"}
    assert matches(f'"thread": "{ULID_A}"', '"thread": "01M8NRFTTYSBDQXJR67JN98AHQ"', bound) == bound
    assert matches(f'"thread": "{ULID_A}"', '"thread": "01M8NRM24RF8G13J91GQP14X5E"', bound) is None
    assert matches("STARTED...", "STARTED and more") == {}  # a word without digits is text, not an id


def test_later_commands_get_the_actual_ids_for_the_ones_and_the_prefixes_the_page_showed():
    bindings = {ULID_A: "01M8NRFTTYSBDQXJR67JN98AHQ", HASH_A: "8AAYMJ3XCJY9D"}
    assert substitute("uwf thread run 01M88B1AGC --max 3", bindings) == "uwf thread run 01M8NRFTTYSBDQXJR67JN98AHQ --max 3"
    assert substitute(f"uwf thread fork {HASH_A}; echo 23CTNS", bindings) == "uwf thread fork 8AAYMJ3XCJY9D; echo 8AAYMJ3XCJY9D"
    assert substitute("uwf thread fork 23CTN ABCDEFGH", bindings) == "uwf thread fork 23CTN ABCDEFGH"  # too short; unbound
    with pytest.raises(DocFailure, match="prefix of several ids"):
        substitute("uwf thread fork 23CTNS", {"23CTNS3Z8JF75": "8AAYMJ3XCJY9D", "23CTNS3Z8JF76": "2MSJP4BQJ3VZS"})


def test_the_difference_is_named():
    _, why = match_output(["a", "b", "c"], "a\nx\nc\n", {})
    assert why == "expected line 2 'b' did not match: actual line 2 is 'x'"
    _, why = match_output(["a", "...", "z"], "a\nb\nc\n", {})
    assert why == "expected line 3 'z' matched no actual line after the `...` (from actual line 2 on)"
    _, why = match_output(["a", "b"], "a\n", {})
    assert why == "expected line 2 'b' did not match: the output ended before it"
    _, why = match_output(["a"], "a\nb\n", {})
    assert why == "the output goes on after the last expected line: actual line 2 is 'b'"


# -- running shell pages ---------------------------------------------------------------------------


def test_a_pages_blocks_share_one_shell_in_a_sandbox(tmp_path):
    p = page(tmp_path, """\
        Set up:

        <!-- test: run -->
        '''sh
        cd examples
        export GREETING=hello   # carried to the next block
        '''

        Then:

        <!-- test: run -->
        '''console
        $ echo "$GREETING from $(basename "$PWD")"; ls solve-issue.yaml
        hello from examples
        solve-issue.yaml
        $ echo "$UWF_STORAGE_ROOT" | grep -c /root$; test "$HOME" != "$OLDPWD"; echo "$COLUMNS $NO_COLOR"
        1
        100 1
        $ echo oops >&2; exit_with() { return "$1"; }; exit_with 3
        oops
        (exit 3)
        '''
        """)
    ran = run_shell_page(p, tmp_path / "run")
    assert [r.status for r in ran] == [0, 0, 0, 0, 3]
    assert ran[-1].output == "oops\n"


def test_a_mismatch_fails_naming_page_line_command_and_both_outputs(tmp_path):
    p = page(tmp_path, """\
        # A page

        <!-- test: run -->
        '''console
        $ printf 'one\\ntwo\\n'
        one
        three
        '''
        """, name="tutorials/first.md")
    message = failure(lambda: run_shell_page(p, tmp_path / "run"))
    assert message.startswith("tutorials/first.md:5: output differs: expected line 2 'three' did not match: actual line 2 is 'two'")
    assert "in the ```console block at line 4" in message
    assert "command as written:\n    | printf 'one\\ntwo\\n'" in message
    assert "expected output (page lines 6-7):\n    | one\n    | three" in message
    assert "actual output:\n    | one\n    | two" in message


def test_a_wrong_exit_status_fails_and_stops_the_page(tmp_path):
    p = page(tmp_path, "<!-- test: run -->\n'''sh\nfalse\ntouch never\n'''\n")
    message = failure(lambda: run_shell_page(p, tmp_path / "run"))
    assert message.startswith("page.md:3: exit status 1, expected 0")
    assert not (tmp_path / "run" / "work" / "never").exists()
    p = page(tmp_path, "<!-- test: run -->\n'''console\n$ true\n(exit 2)\n'''\n")
    assert failure(lambda: run_shell_page(p, tmp_path / "run2")).startswith("page.md:3: exit status 0, expected 2")


def test_a_hanging_command_and_an_exiting_shell_are_named(tmp_path):
    p = page(tmp_path, "<!-- test: run -->\n'''sh\necho started\nsleep 30\n'''\n")
    message = failure(lambda: run_shell_page(p, tmp_path / "run", command_timeout=1))
    assert message.startswith("page.md:4: timed out after 1 s")
    p = page(tmp_path, "<!-- test: run -->\n'''sh\nexit 0\necho after\n'''\n")
    assert failure(lambda: run_shell_page(p, tmp_path / "run2")).startswith("page.md:3: bash exited during it")


def test_ids_printed_by_one_command_reach_the_next_ones(tmp_path):
    make_id = "python3 -c \"import random; print('0' + ''.join(random.choice('0123456789ABCDEFGHJKMNPQRSTVWXYZ') for _ in range(25)))\""
    p = page(tmp_path, f"""\
        <!-- test: run -->
        '''sh
        export ID=$({make_id})
        '''

        <!-- test: run -->
        '''console
        $ echo "thread: $ID"
        thread: {ULID_A}
        $ test {ULID_A[:10]} = "$ID" && echo "same"
        same
        $ echo "{ULID_A}"
        {ULID_A}
        '''
        """)
    ran = run_shell_page(p, tmp_path / "run")
    actual = ran[1].output.split()[1]
    assert actual != ULID_A and ran[2].run_text == f'test {actual} = "$ID" && echo "same"'
    p = page(tmp_path, f"""\
        <!-- test: run -->
        '''console
        $ echo "{HASH_A}"
        {HASH_A}
        $ echo 2MSJP4BQJ3VZS
        {HASH_A}
        '''
        """)
    message = failure(lambda: run_shell_page(p, tmp_path / "run2"))
    assert "page.md:5: output differs: expected line 1 '23CTNS3Z8JF75' did not match: actual line 1 is '2MSJP4BQJ3VZS'" in message
    assert "ids bound so far (as the page shows them -> as this run printed them):\n    23CTNS3Z8JF75 -> 23CTNS3Z8JF75" in message


def test_a_real_uwf_session_binds_the_ids_it_prints(tmp_path):
    """The tutorial's own shape: the page shows made-up ids; this run prints others."""
    p = page(tmp_path, f"""\
        <!-- test: run -->
        '''console
        $ uwf workflow put examples/solve-issue.yaml
        {{
          "name": "solve-issue",
          "hash": "3WF8ZA0SDSM00"
        }}
        $ uwf setup --agent "script=uwf-script --script $PWD/examples/solve-issue.script.yaml" \\
            --default-agent script
        ...
        $ uwf thread start solve-issue -p "Fix the login bug"
        {{
          "workflow": "3WF8ZA0SDSM00",
          "thread": "{ULID_A}",
          "head": "FSD13AK2DH400"
        }}
        $ uwf thread run 01M88B1AGC
        uwf: planner (script) -> {HASH_A}
        uwf: developer (script) -> D02CN5C9H8T00
        ...
        uwf: reviewer (script) -> 8AAYMJ3XCJY00  [done]
        {{
          "workflow": "3WF8ZA0SDSM00",
          "thread": "{ULID_A}",
          "head": "8AAYMJ3XCJY00",
          ...
        }}
        $ uwf thread fork {HASH_A}
        {{
          "workflow": "3WF8ZA0SDSM00",
          "thread": "01M88C00000000000000000000",
          "head": "{HASH_A}"
        }}
        $ uwf thread show 01M88C0000
        {{
          "workflow": "3WF8ZA0SDSM00",
          "thread": "01M88C0000...",
          ...
        }}
        '''
        """)
    ran = run_shell_page(p, tmp_path / "run")
    assert ran[3].run_text.startswith("uwf thread run 01") and ran[3].run_text != "uwf thread run 01M88B1AGC"
    assert ran[4].run_text != f"uwf thread fork {HASH_A}" and len(ran[4].run_text.split()[-1]) == 13


# -- Python and YAML -------------------------------------------------------------------------------


def test_a_pages_python_blocks_run_as_one_script_with_the_pages_line_numbers(tmp_path):
    p = page(tmp_path, """\
        '''python
        import os
        value = 41
        '''

        <!-- test: skip -->
        '''python
        this is not Python
        '''

        '''python
        assert os.path.isdir("examples") and os.environ["UWF_STORAGE_ROOT"].endswith("/root")
        print(value + 1)
        '''
        """)
    assert python_script(p).splitlines()[1:3] == ["import os", "value = 41"]
    assert run_python_page(p, tmp_path / "run") == "42\n"


def test_a_failing_python_block_shows_the_page_line_and_the_traceback(tmp_path):
    p = page(tmp_path, "Intro\n\n'''python\nx = 1\n'''\n\n'''python\nraise ValueError('the docs are wrong')\n'''\n", name="how-to/py.md")
    message = failure(lambda: run_python_page(p, tmp_path / "run"))
    assert message.startswith("how-to/py.md: its Python blocks (at lines 3, 7), run as one script, exited 1")
    assert 'py.md.py", line 8' in message and "ValueError: the docs are wrong" in message


def test_yaml_blocks_parse_and_whole_workflows_pass_lint(tmp_path):
    workflow = (Path(__file__).resolve().parents[2] / "examples" / "fan-out.yaml").read_text()
    p = page(tmp_path, "'''yaml\n" + workflow + "'''\n\n'''yaml\nagents:\n  script: {command: uwf-script}\n'''\n"
             "\n<!-- test: skip -->\n'''yaml\nroles: {<ROLE>: ...\n'''\n")
    assert check_yaml_page(p, tmp_path / "run") == 1  # the map's child workflow need not be registered


def test_a_broken_workflow_and_a_block_that_is_not_yaml_fail_together(tmp_path):
    p = page(tmp_path, "'''yaml\nname: broken\nroles: {}\ngraph: {}\n'''\n\n'''yaml\na: [unclosed\n'''\n")
    message = failure(lambda: check_yaml_page(p, tmp_path / "run"))
    assert "page.md:1: `uwf workflow lint` exited 1" in message and "roles: must be a non-empty mapping" in message
    assert "page.md:7: the ```yaml block is not YAML" in message
