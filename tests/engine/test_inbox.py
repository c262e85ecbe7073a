"""`uwf inbox` and `uwf thread answer` on a directory root and on a real PostgreSQL root: a worker
that reaches a person's role leaves the thread queued and asking; the inbox lists it with its
prompt; an answer from another process (any host) is checked against the role's schema, moves the
head, and the idle worker takes the thread up again at once. Real `uwf` processes throughout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time

import pytest
from conftest import EXAMPLES, REPO, _uwf_command

SCRIPT_AGENT = f"script=uwf-script --script-dir {EXAMPLES}"
APPROVE = {"approved": True, "comments": "looks right"}


@pytest.fixture(params=["dir", "postgresql"])
def place(request, root_dir):
    location = str(root_dir) if request.param == "dir" else request.getfixturevalue("pg_url")
    env = dict(os.environ, UWF_STORAGE_ROOT=location, UWF_ENV_FILE=str(root_dir / "host.env"))

    def run(*args: str, stdin: str | None = None):
        done = subprocess.run([*_uwf_command(), *args], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=120, input=stdin)
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def spawn(*args: str):
        return subprocess.Popen([*_uwf_command(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=str(REPO))

    run.spawn = spawn
    run.location = location
    assert run("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).returncode == 0
    assert run("setup", "--agent", SCRIPT_AGENT, "--default-agent", "script").returncode == 0
    return run


def _json(done):
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _start_asking(run, count: int) -> list[str]:
    """Threads whose reviewer is a person, run by a worker up to the reviewer."""
    threads = []
    for i in range(count):
        thread = _json(run("thread", "start", "solve-issue", "-p", f"task {i}", "--agent", "reviewer=human"))["thread"]
        assert _json(run("thread", "run", thread, "--detach"))["queued"] is True
        threads.append(thread)
    worker = run("worker", "--once", "--name", "first")
    assert worker.returncode == 0, worker.stderr
    assert worker.stderr.count(" asking ") == count, worker.stderr
    return threads


def test_the_inbox_lists_threads_waiting_for_a_person_and_an_answer_moves_them_on(place, tmp_path):
    threads = _start_asking(place, 2)
    items = _json(place("inbox", "--json"))
    assert [item["thread"] for item in items] == threads  # oldest wait first
    for item in items:
        assert item["workflow"] == "solve-issue" and item["role"] == "reviewer" and item["queued"] is True
        assert item["askedBy"] == "first" and item["since"] > 0
        assert "# Role: reviewer" in item["prompt"] and "task" in item["prompt"]
    text = place("inbox").stdout
    assert threads[0] in text and "reviewer" in text and "queued" in text
    listed = {item["thread"]: item for item in _json(place("thread", "list"))}
    assert all(listed[thread].get("asking") for thread in threads)
    assert "waits for a person" in _json(place("thread", "show", threads[0]))["asking"]

    # a worker passes them over (it does not spin on them, nor record them again)
    again = place("worker", "--once", "--name", "second")
    assert " asking " not in again.stderr and threads[0] not in again.stderr
    assert [run["status"] for run in _json(place("thread", "runs", threads[0]))].count("asking") == 1

    # answers that do not fit are refused, with nothing written or recorded
    head = _json(place("thread", "show", threads[0]))["head"]
    bad = place("thread", "answer", threads[0], "--output", "-", stdin='{"approved": "yes"}')
    assert bad.returncode == 1 and bad.stderr.startswith("uwf: error: the answer for role 'reviewer'") and len(bad.stderr.splitlines()) == 1
    assert _json(place("thread", "show", threads[0]))["head"] == head
    assert [run["status"] for run in _json(place("thread", "runs", threads[0]))].count("failed") == 0
    no_editor = place("thread", "answer", threads[0], stdin="")  # no --output, and no terminal for $EDITOR
    assert no_editor.returncode == 1 and "give the answer to reviewer with --output FILE" in no_editor.stderr
    not_waiting = place("thread", "answer", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "--output", "-", stdin="{}")
    assert not_waiting.returncode == 1 and "uwf: error:" in not_waiting.stderr

    # YAML, from a file: it fits, the head moves, the step is the person's
    answer = tmp_path / "answer.yaml"
    answer.write_text("approved: true\ncomments: looks right\n")
    done = _json(place("thread", "answer", threads[0], "--output", str(answer)))
    assert done["agent"] == "human" and done["role"] == "reviewer" and done["head"] != head
    assert [item["thread"] for item in _json(place("inbox", "--json"))] == [threads[1]]
    # frontmatter markdown, from stdin
    markdown = "---\napproved: true\ncomments: fine\n---\nShip it.\n"
    assert _json(place("thread", "answer", threads[1], "--output", "-", stdin=markdown))["agent"] == "human"
    assert _json(place("inbox", "--json")) == []
    assert place("inbox").stdout.startswith("nobody is asked anything")


def test_an_idle_worker_takes_an_answered_thread_up_at_once(place):
    """The answer's compare-and-set notifies (PostgreSQL) or changes the root (a directory): the
    worker, idle until then, steps the thread again without waiting out its idle wait."""
    (thread,) = _start_asking(place, 1)
    worker = place.spawn("worker", "--name", "waiting")
    lines: list[tuple[float, str]] = []
    threading.Thread(target=lambda: [lines.append((time.monotonic(), line)) for line in worker.stderr], daemon=True).start()
    try:
        time.sleep(2.0)  # idle: the only queued thread asks a person
        answered = time.monotonic()
        place("thread", "answer", thread, "--output", "-", stdin=json.dumps({"approved": False, "comments": "once more"}))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(thread in line and " asking " in line for _, line in lines):
            time.sleep(0.1)
        took = next(at for at, line in lines if thread in line and "step developer" in line)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    assert took - answered < 3.0, f"the worker took {took - answered:.1f}s to take the answered thread up"
    # rejected: the developer again, then the reviewer asks again, at the new head
    items = _json(place("inbox", "--json"))
    assert [item["thread"] for item in items] == [thread] and items[0]["askedBy"] == "waiting"


def test_an_answer_to_a_question_the_thread_no_longer_asks_is_refused(place):
    """The TUI's form shows the prompt at one head; if the thread moved on while the person wrote,
    the answer is refused (expected_head) and nothing is recorded."""
    from uwf_core.api import Repo, UwfError, answer_thread, inbox

    (thread,) = _start_asking(place, 1)
    repo = Repo.open(place.location)
    (item,) = inbox(repo)
    done = place("thread", "answer", thread, "--output", "-", stdin=json.dumps({"approved": False, "comments": "again"}))
    assert done.returncode == 0, done.stderr
    with pytest.raises(UwfError, match="is not waiting for a person"):  # the developer's turn now
        answer_thread(repo, thread, json.dumps(APPROVE), expected_head=item.head)
    assert " asking " in place("worker", "--once").stderr  # the reviewer asks again, at a new head
    runs_before = len(json.loads(place("thread", "runs", thread).stdout))
    with pytest.raises(UwfError, match="moved on while the answer was written"):
        answer_thread(repo, thread, json.dumps(APPROVE), expected_head=item.head)
    assert len(json.loads(place("thread", "runs", thread).stdout)) == runs_before
