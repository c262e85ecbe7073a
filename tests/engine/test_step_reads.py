"""One opened root per step: an audit hook (event `open`) counts what a step reads.

A step reads each state file once (threads.yaml twice: at the start, and in
the compare-and-set that moves the head), and each CAS node at most once;
`thread run` over N steps reads each node once in all, not once per step.
Nodes live in one SQLite file, which Python's `open` never sees, so node reads
are counted at the node store's `read`. The hook runs in a child interpreter:
audit hooks cannot be removed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import EXAMPLES

PROBE = r"""
import collections, json, os, sys
root, mode, thread = sys.argv[1], sys.argv[2], sys.argv[3]
from uwf_core.api import Repo, StepOptions, perform_step, run_thread
from uwf_core.store.fs.nodes import FsNodeStore
repo = Repo.open(root)
reads = collections.Counter()
read_node = FsNodeStore.read

def counted(self, hash_):
    import threading
    if threading.current_thread().name != "uwf-node-reader":  # a step agent's own reads, served by uwf (node_broker.py)
        reads["node:" + hash_] += 1
    return read_node(self, hash_)

FsNodeStore.read = counted
WRITES = os.O_WRONLY | os.O_RDWR

def hook(event, args):
    if event != "open":
        return
    path, flags_mode, flags = args
    if not isinstance(path, str) or not path.startswith(root + os.sep) or path.endswith(".bin"):
        return  # a node's loose file (an older root's) is looked for by every node read
    if path.startswith((os.path.join(root, "tmp") + os.sep, os.path.join(root, "cache") + os.sep)):
        return  # scratch and host caches (a workspace's .git as a private copy, its walk for git repositories), no state
    if isinstance(flags_mode, str) and any(c in flags_mode for c in "wax+"):
        return
    if isinstance(flags, int) and flags & WRITES:
        return  # writes, appends and lock files are not reads
    reads[os.path.relpath(path, root)] += 1

sys.addaudithook(hook)
if mode == "step":
    perform_step(repo, thread, StepOptions())
else:
    run_thread(repo, thread, StepOptions())
print(json.dumps(reads))
"""


def _reads(root_dir, mode: str, thread: str) -> dict[str, int]:
    env = dict(os.environ, UWF_STORAGE_ROOT=str(root_dir))
    done = subprocess.run([sys.executable, "-c", PROBE, str(root_dir), mode, thread], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _text_agent(root_dir, answer: dict) -> None:
    """A text-protocol agent that ignores its prompt and prints `answer`, as the default agent."""
    from uwf_core.config.model import AgentConfig, Config
    from uwf_core.repo import Repo

    command = f"cat >/dev/null; echo '{json.dumps(answer)}'"
    Repo.open(str(root_dir)).save_config(Config(agents={"echo": AgentConfig("echo", "sh", ("-c", command), "text")}, default_agent="echo"))


def test_a_text_step_reads_each_state_file_once_and_each_node_at_most_once(uwf, root_dir):
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    _text_agent(root_dir, {"thesis": "t", "keyPoints": ["k"]})
    (root_dir / ".env").write_text("UNUSED_KEY=x\n")
    thread = uwf("thread", "start", "analyze-topic", "-p", "why").json()["thread"]

    reads = _reads(root_dir, "step", thread)

    assert reads.pop("threads.yaml") == 2  # the head at the start, then the compare-and-set
    assert reads.pop("config.yaml") == 1
    assert reads.pop(".env") == 1
    assert reads.pop("paused.yaml") == 1  # the pause gate, under the step lock (no file: one failed open)
    nodes = {path: count for path, count in reads.items() if path.startswith("node:")}
    assert nodes and all(count == 1 for count in nodes.values()), nodes
    assert not {path: count for path, count in reads.items() if path not in nodes}, reads  # no registry, history or runs read


def test_thread_run_reads_each_node_once_in_all(uwf, root_dir):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    assert uwf("setup", "--agent", f"script=uwf-script --script-dir {EXAMPLES}", "--default-agent", "script").code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "Fix the login bug").json()["thread"]

    reads = _reads(root_dir, "run", thread)

    steps = len(uwf("thread", "steps", thread).json())
    assert steps == 5 and uwf("thread", "show", thread).json()["done"]
    assert reads.pop("threads.yaml") == 2 * steps  # per step: the start and the compare-and-set
    assert reads.pop("config.yaml") == 1 and reads.pop(".env", 0) <= 1  # once for the whole run
    nodes = {path: count for path, count in reads.items() if path.startswith("node:")}
    assert nodes and all(count == 1 for count in nodes.values()), {p: c for p, c in nodes.items() if c > 1}
