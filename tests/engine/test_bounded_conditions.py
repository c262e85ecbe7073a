"""No condition can hang a step: a regex in a condition runs on RE2 (linear time), so a
catastrophic-backtracking pattern answers at once — in `uwf thread step`, in a worker (which
still stops on SIGTERM) and in the workbench (which stays responsive). With Python's `re`
these ran until SIGKILL, holding the GIL past every timeout and signal handler."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, _uwf_command
from workflow_texts import BASE

from uwf_core.errors import UwfError
from uwf_core.workflow.jsonata_expr import compile_error, evaluate

EVIL = "/^(a+)+$/"
VICTIM = "a" * 40 + "!"  # 2^40 paths for a backtracking engine
STEP_TIMEOUT = 5

def _edited(text: str, *edits: tuple[str, str]) -> str:
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


# The tests' demo workflow, its writer routed by a condition that backtracks for hours on `re`.
WORKFLOW = _edited(
    BASE,
    ("name: demo\n", "name: redos\n"),
    ('expression: "steps[-1].output.ok = false"', f"expression: '$contains(steps[-1].output.text, {EVIL})'"),
    ("  writer:\n    - {role: checker, condition: null}\n", "  writer:\n    - {role: checker, condition: rejected}\n    - {role: $END, condition: null}\n"),
)

SCRIPT = f"writer:\n  - |\n    ---\n    text: {VICTIM}\n    ---\n"


def test_a_backtracking_pattern_answers_at_once():
    assert evaluate(f'$contains("{VICTIM}", {EVIL})', {}) is False
    assert evaluate(f'$contains("{"a" * 40}", {EVIL})', {}) is True
    assert evaluate('$eval("$contains(\\"' + VICTIM + '\\", /^(a+)+$/)")', {}) is False  # $eval's regexes too


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('$match("ab-1 cd-2", /(\\w+)-(\\d)/)', [{"match": "ab-1", "index": 0, "groups": ["ab", "1"]}, {"match": "cd-2", "index": 5, "groups": ["cd", "2"]}]),
        ('$replace("ab-1 cd-2", /(\\w+)-(\\d)/, "$2$1")', "1ab 2cd"),
        ('$split("a1b2c", /\\d/)', ["a", "b", "c"]),
        ('$contains("x\\nAB", /^ab$/im)', True),
        ('$contains("x\\nAB", /^ab$/i)', False),
        ('$replace("ab", /b/, function($m){ $uppercase($m.match) })', "aB"),
        # replacement strings as jsonata-python reads them: a group that did not take part is
        # empty, `$12` with one group is group 1 then "2", `$0` the whole match
        ('$replace("xay", /(a)(b)?/, "[$2]")', "x[]y"),
        ('$replace("xay", /(a)/, "$2")', "xy"),
        ('$replace("xay", /(a)/, "$12")', "xa2y"),
        ('$replace("ab", /(a)(b)/, "$2$1$0")', "baab"),
        # JavaScript's meaning (the reference's), where Python's `re` read them otherwise
        ('$contains("APPROVED\\n", /^APPROVED$/)', False),
        ('$contains("café", /caf\\w/)', False),
        ('$contains("a\\u00a0b", /a\\sb/)', True),
        ('$split("a b\\u3000c", /\\s/)', ["a", "b", "c"]),
        ('$contains("é", /\\u00e9/)', True),
        ('$contains("a\\bb", /a[\\b]b/)', True),
    ],
)
def test_jsonata_regex_functions_keep_their_answers_on_re2(expression, expected):
    assert evaluate(expression, {}) == expected


@pytest.mark.parametrize(
    ("pattern", "hint"),
    [("/(a)\\1/", "backreferences are not supported"), ("/a(?=b)/", "lookaround is not supported"),
     ("/(?<!x)y/", "lookaround is not supported"), ("/a{1001}/", "invalid repetition size")],
)
def test_a_pattern_re2_cannot_run_is_refused_when_compiled(pattern, hint, capfd):
    message = compile_error(f'$contains("ab", {pattern})')
    assert message is not None and "RE2" in message and hint in message
    assert "\n" not in message
    with pytest.raises(UwfError, match="RE2"):
        evaluate(f'$contains("ab", {pattern})', {})
    assert capfd.readouterr().err == ""  # RE2's own C++ logger stays quiet


def test_workflow_put_refuses_a_lookahead_with_one_line(uwf, tmp_path):
    path = tmp_path / "look.yaml"
    path.write_text(WORKFLOW.replace(EVIL, "/a(?=b)/"))
    result = uwf("workflow", "put", str(path))
    assert result.code == 1 and "Traceback" not in result.err
    assert "RE2" in result.err and "look.yaml" in result.err


@pytest.fixture
def redos(uwf, tmp_path):
    workflow, script = tmp_path / "redos.yaml", tmp_path / "redos.script.yaml"
    workflow.write_text(WORKFLOW)
    script.write_text(SCRIPT)
    assert uwf("workflow", "put", str(workflow)).code == 0
    assert uwf("setup", "--agent", f"scripted=uwf-script --script {script}", "--default-agent", "scripted").code == 0
    return uwf


def test_a_step_whose_routing_backtracks_ends_within_its_timeout(redos):
    thread = redos("thread", "start", "redos", "-p", "go").json()["thread"]
    started = time.monotonic()
    # Without RE2 this step ran until SIGKILL; subprocess's timeout would raise here.
    result = redos("thread", "step", thread, "--timeout", str(STEP_TIMEOUT), timeout=STEP_TIMEOUT + 2)
    assert result.code == 0, result
    assert time.monotonic() - started < STEP_TIMEOUT + 2
    shown = redos("thread", "show", thread).json()
    assert shown["done"] is True  # the pattern is false for "aaa…a!": writer → $END


def test_a_worker_steps_it_and_still_stops_on_sigterm(redos, root_dir):
    threads = [redos("thread", "start", "redos", "-p", f"w{i}").json()["thread"] for i in range(2)]
    for thread in threads:
        assert redos("thread", "run", thread, "--detach").code == 0
    env = dict(os.environ, UWF_STORAGE_ROOT=str(root_dir))
    worker = subprocess.Popen([*_uwf_command(), "worker", "--name", "bounded"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(REPO))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            archived = {item["thread"] for item in redos("thread", "list", "--all").json() if item.get("reason")}
            if set(threads) <= archived:
                break
            time.sleep(0.2)
        else:
            pytest.fail("the worker did not step the threads to their end")
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=STEP_TIMEOUT + 2)
    assert worker.returncode == 0, err
    assert "Traceback" not in err


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
def test_the_workbench_steps_it_and_still_quits(redos, root_dir):
    """The real uwf-tui in tmux: `s` steps the thread, its routing answers, `q` quits. With
    Python's `re` the workbench froze after `s`: no key worked, `q` included."""
    thread = redos("thread", "start", "redos", "-p", "tui").json()["thread"]
    tui = Path(sys.executable).with_name("uwf-tui")
    session = f"uwf-redos-{os.getpid()}"
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    command = f"env -u COLUMNS -u LINES UWF_STORAGE_ROOT={root_dir} HOME={os.environ['HOME']} PATH={path} TERM=xterm-256color {tui}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", command], check=True)
    subprocess.run(["tmux", "resize-window", "-t", session, "-x", "120", "-y", "40"], capture_output=True)
    try:
        _on_screen(session, "redos", timeout=30)
        subprocess.run(["tmux", "send-keys", "-t", session, "s"], check=True)
        _on_screen(session, "✓ writer", timeout=STEP_TIMEOUT + 30)  # start-up of the agent on a loaded machine
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        deadline = time.monotonic() + STEP_TIMEOUT + 2
        while time.monotonic() < deadline and subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode == 0:
            time.sleep(0.2)
        assert subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode != 0, "q did not quit"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    shown = redos("thread", "show", thread).json()
    assert shown["done"] is True


def _on_screen(session: str, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout
        if text in screen:
            return
        time.sleep(0.2)
    raise AssertionError(f"{text!r} did not appear on screen:\n{screen}")


# -- one expensive built-in: bounded in time and memory (workflow/condition_box.py) --------------

EXPENSIVE = '$length($replace($pad("", 1000000, "a"), "a", $pad("", 1000, "b"))) > 0'  # ~1 GB, ~40 s before


def test_one_built_in_that_runs_for_long_is_stopped_at_the_limit():
    """jsonata-python's clock is checked between steps of an expression, not inside `$replace`:
    this condition held a step for 40 s at 1 GB. It runs in a child now, killed at the limit."""
    began = time.monotonic()
    with pytest.raises(UwfError, match=r"ran longer than 1 s|needed more than 512 MB"):
        evaluate(EXPENSIVE, {"steps": []}, time_limit=1.0)
    assert time.monotonic() - began < 3


def test_a_built_in_that_wants_a_gigabyte_is_refused_in_one_line():
    began = time.monotonic()
    with pytest.raises(UwfError, match="needed more than 512 MB"):
        evaluate('$length($pad("", 400000000)) > 0', {"steps": []})
    assert time.monotonic() - began < 5


def test_values_and_errors_come_back_from_the_child_as_they_were():
    assert evaluate("$count(steps) + 1", {"steps": [1, 2]}) == 3
    assert evaluate("steps[0].output", {"steps": [{"output": {"a": [1, "x", None, True]}}]}) == {"a": [1, "x", None, True]}
    with pytest.raises(UwfError, match="convert|D3030"):
        evaluate('$number("abc")', {"steps": []})


def test_a_step_routed_by_an_expensive_condition_ends_within_its_limit(uwf, tmp_path):
    text = _edited(
        BASE,
        ("name: demo\n", "name: expensive\n"),
        ('expression: "steps[-1].output.ok = false"', f"expression: '{EXPENSIVE}'"),
    )
    path = tmp_path / "expensive.yaml"
    path.write_text(text)
    assert uwf("workflow", "put", str(path)).code == 0
    thread = uwf("thread", "start", "expensive", "-p", "go").json()["thread"]
    script = tmp_path / "s.yaml"
    script.write_text("writer:\n  - output: {text: t}\nchecker:\n  - output: {ok: false}\n")
    assert uwf("thread", "step", thread, "--agent", f"uwf-script --script {script}").code == 0
    began = time.monotonic()
    stepped = uwf("thread", "step", thread, "--agent", f"uwf-script --script {script}")
    assert time.monotonic() - began < 15
    assert stepped.code == 1 and "Traceback" not in stepped.err
    assert "ran longer than" in stepped.err or "needed more than 512 MB" in stepped.err
