"""No condition can hang a step: a regex in a condition runs on RE2 (linear time), so a
catastrophic-backtracking pattern answers at once — in `uwf thread step`, in a worker (which
still stops on SIGTERM) and in the workbench (which stays responsive). With Python's `re`
these ran until SIGKILL, holding the GIL past every timeout and signal handler."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time

import pytest
from conftest import REPO, _uwf_command

from uwf_core.errors import UwfError
from uwf_core.workflow.jsonata_expr import compile_error, evaluate

EVIL = "/^(a+)+$/"
VICTIM = "a" * 40 + "!"  # 2^40 paths for a backtracking engine
STEP_TIMEOUT = 5

WORKFLOW = f"""\
name: redos
description: A condition that would backtrack for hours
roles:
  writer:
    description: Writes
    goal: Write things.
    procedure: Write.
    output: The text.
    meta:
      type: object
      properties:
        text: {{type: string}}
      required: [text]
  checker:
    description: Checks
    goal: Check things.
    procedure: Check.
    output: A verdict.
    meta:
      type: object
      properties:
        ok: {{type: boolean}}
      required: [ok]
conditions:
  evil:
    description: The writer's text is all a's
    expression: '$contains(steps[-1].output.text, {EVIL})'
graph:
  $START:
    - {{role: writer, condition: null}}
  writer:
    - {{role: checker, condition: evil}}
    - {{role: $END, condition: null}}
  checker:
    - {{role: $END, condition: null}}
"""

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
    ],
)
def test_jsonata_regex_functions_keep_their_answers_on_re2(expression, expected):
    assert evaluate(expression, {}) == expected


@pytest.mark.parametrize("pattern", ["/(a)\\1/", "/a(?=b)/", "/(?<!x)y/"])
def test_a_pattern_re2_cannot_run_is_refused_when_compiled(pattern, capfd):
    message = compile_error(f'$contains("ab", {pattern})')
    assert message is not None and "RE2" in message and "backreferences and lookaround" in message
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


def test_the_workbench_stays_responsive_while_it_steps(redos, root_dir):
    from uwf_core.api import Repo, thread_info
    from uwf_tui.app import UwfApp

    thread = redos("thread", "start", "redos", "-p", "tui").json()["thread"]
    root = Repo.open(str(root_dir))

    async def main():
        app = UwfApp(root, poll_seconds=0.2)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.3)
            table = app.query_one("#threads")
            table.move_cursor(row=table.get_row_index(thread))
            await pilot.pause(0.3)
            await pilot.press("s")
            started = time.monotonic()
            while time.monotonic() - started < STEP_TIMEOUT + 2 and thread_info(root, thread).active:
                await pilot.pause(0.1)  # the event loop keeps turning: the UI is not blocked
            await app.workers.wait_for_complete()
            await pilot.press("q")

    asyncio.run(main())
    assert thread_info(root, thread).done
    assert json.dumps(thread_info(root, thread).reason) == '"done"'
