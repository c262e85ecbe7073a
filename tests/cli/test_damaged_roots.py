"""A damaged root — a directory where a node, a state file or a lock should be, garbage in a state
file — never gives a traceback: every command answers or says what is wrong in one line."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import EXAMPLES

AGENT = f"uwf-script --script {EXAMPLES / 'solve-issue.script.yaml'}"

DAMAGES = {
    "a loose node file is a directory": "mkdir cas/{head}.bin",
    "the node file is garbage": "rm -f cas/nodes.sqlite-wal cas/nodes.sqlite-shm && printf 'not sqlite at all' > cas/nodes.sqlite",
    "the node file is a directory": "rm -f cas/nodes.sqlite* && mkdir cas/nodes.sqlite",
    "the head's node is gone": "python3 -c \"import sqlite3; sqlite3.connect('cas/nodes.sqlite').execute(\\\"delete from nodes where hash='{head}'\\\").connection.commit()\"",
    "threads.yaml is a directory": "rm threads.yaml && mkdir threads.yaml",
    "registry.yaml is a directory": "rm registry.yaml && mkdir registry.yaml",
    "config.yaml is a directory": "rm config.yaml && mkdir config.yaml",
    "step lock is a directory": "mkdir -p locks && rm -f locks/thread-{thread}.lock && mkdir locks/thread-{thread}.lock",
    "index lock is a directory": "rm -f locks/index.lock && mkdir -p locks/index.lock",
    "runs.jsonl is a directory": "rm -f runs.jsonl && mkdir runs.jsonl",
    "history.jsonl is a directory": "rm -f history.jsonl && mkdir history.jsonl",
    ".env is a directory": "mkdir -p .env",
    "threads.yaml is garbage": "echo 'garbage: [' > threads.yaml",
    "registry.yaml is not text": "printf '\\377\\376' > registry.yaml",
    "history.jsonl has a bad line": "echo '{{not json' >> history.jsonl && echo '{{}}' >> history.jsonl",
    "type index is a file": "rm -rf cas/_index && touch cas/_index",
    "locks is a file": "rm -rf locks && touch locks",
    "cas is a file": "rm -rf cas && touch cas",
}

COMMANDS = [
    "thread show {thread}", "thread list --all", "thread read {thread}", "thread runs {thread}",
    "thread step {thread} --agent uwf-script", "thread fork {head}", "thread kill {thread}", "thread start solve-issue -p y",
    "workflow list", "workflow put {examples}/triage-bug.yaml", "cas fsck", "cas gc --grace 0", "cas reindex",
    "cas walk {head}", "setup --agent y=echo", "thread step-details {head}",
]


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    from conftest import _uwf_command

    root = tmp_path_factory.mktemp("healthy") / "root"

    def uwf(*args):
        done = subprocess.run([*_uwf_command(), "--root", str(root), *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    import json

    uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml"))
    thread = json.loads(uwf("thread", "start", "solve-issue", "-p", "x"))["thread"]
    uwf("thread", "step", thread, "--agent", AGENT)
    uwf("thread", "step", thread, "--agent", AGENT)
    uwf("setup", "--agent", "x=echo")
    head = json.loads(uwf("thread", "show", thread))["head"]
    return root, thread, head


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_no_command_gives_a_traceback_on_a_damaged_root(healthy, tmp_path, damage):
    from conftest import _uwf_command

    base, thread, head = healthy
    names = {"thread": thread, "head": head, "examples": str(EXAMPLES)}
    failures = []
    for command in COMMANDS:
        root = tmp_path / "root"
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(base, root, symlinks=True)
        subprocess.run(["sh", "-c", DAMAGES[damage].format(**names)], cwd=root, check=True)
        args = command.format(**names).split()
        done = subprocess.run([*_uwf_command(), "--root", str(root), *args], capture_output=True, text=True, timeout=60)
        if "Traceback" in done.stderr or done.returncode not in (0, 1):
            failures.append(f"uwf {command}: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
        elif done.returncode == 1:
            errors = [line for line in done.stderr.splitlines() if line.startswith("uwf: error:")]
            if len(errors) != 1:
                failures.append(f"uwf {command}: not one clear line: {done.stderr[-300:]}")
    assert not failures, failures


def test_fsck_names_the_thread_that_needs_a_corrupt_node(healthy, tmp_path):
    """A flipped byte in one node's row: fsck names the node and the thread whose chain needs it,
    and says what can be done (a repair cannot recover bytes that are wrong)."""
    import json

    from conftest import _uwf_command
    from node_file import node_bytes, set_node_bytes

    base, thread, head = healthy
    root = tmp_path / "root"
    shutil.copytree(base, root, symlinks=True)
    data = bytearray(node_bytes(root, head))
    data[len(data) // 2] ^= 0xFF
    set_node_bytes(root, head, bytes(data))
    done = subprocess.run([*_uwf_command(), "--root", str(root), "cas", "fsck"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    problems = json.loads(done.stdout)["problems"]
    named = [problem for problem in problems if problem["target"] == f"thread {thread}"]
    assert named and "corrupt" in named[0]["message"] and "fork the thread" in named[0]["message"]
