"""A thread's files through the real CLI (issue 21): snapshots at every step, forks with their own
directory, `thread files`, `thread checkout`, `diff`, `export-git`, bundles, gc, hand changes,
memoized replay with files, on a directory root and on PostgreSQL.

The agent is tests/support/files_agent.py: each step bumps count.txt, adds step<N>.txt and
appends to log.txt, in the workspace it runs in.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SUPPORT = Path(__file__).resolve().parents[1] / "support"
AGENT = SUPPORT / "files_agent.py"

COUNT_TO_THREE = """\
name: count-files
description: Three steps of file work
roles:
  counter:
    description: Counts in files
    goal: Count one further.
    procedure: Bump count.txt.
    output: The new number.
    meta:
      type: object
      properties:
        n: {type: integer}
      required: [n]
conditions:
  more:
    description: Not at three yet
    expression: "steps[-1].output.n < 3"
graph:
  $START:
    - {role: counter, condition: null}
  counter:
    - {role: counter, condition: more}
    - {role: $END, condition: null}
"""


def ok(result):
    assert result.code == 0, result
    assert "Traceback" not in result.err, result.err
    return result


def config(extra: str = "", agent_args: str = "") -> str:
    args = json.dumps([str(AGENT), *agent_args.split()])
    return f"agents:\n  files:\n    command: {json.dumps(sys.executable)}\n    args: {args}\n    protocol: text\n{extra}defaultAgent: files\n"


class FileThread:
    """A root with count-files registered, a workspace holding seed.txt, and its thread."""

    def __init__(self, uwf, root_dir: Path, tmp_path: Path, *, extra_config: str = "", start_args: tuple = ()) -> None:
        self.uwf = uwf
        self.tmp = tmp_path
        root_dir.mkdir(parents=True, exist_ok=True)
        (root_dir / "config.yaml").write_text(config(extra_config))
        (tmp_path / "wf.yaml").write_text(COUNT_TO_THREE)
        ok(uwf("workflow", "put", str(tmp_path / "wf.yaml")))
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir()
        (self.workspace / "seed.txt").write_text("seed\n")
        started = ok(uwf("thread", "start", "count-files", "-p", "count in files", "-w", str(self.workspace), *start_args)).json()
        self.thread = started["thread"]
        self.start = started["head"]

    def step(self, thread: str | None = None) -> str:
        return ok(self.uwf("thread", "step", thread or self.thread)).json()["head"]

    def files(self, step: str) -> dict:
        return ok(self.uwf("thread", "files", step, "--json")).json()


def same_tree(a: Path, b: Path) -> bool:
    compared = filecmp.dircmp(a, b)
    if compared.left_only or compared.right_only or compared.diff_files or compared.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, compared.common_files, shallow=False)
    return not mismatch and not errors and all(same_tree(a / sub, b / sub) for sub in compared.common_dirs)


def test_three_steps_a_fork_from_step_one_checkouts_files_and_diff(uwf, root_dir, tmp_path):
    t = FileThread(uwf, root_dir, tmp_path)
    steps, left = [], []
    for number in range(3):
        steps.append(t.step())
        copy = tmp_path / f"after{number + 1}"
        shutil.copytree(t.workspace, copy, symlinks=True)
        left.append(copy)
    # each step's checkout is exactly what the agent left
    for step, expected in zip(steps, left, strict=True):
        out = tmp_path / f"co-{step}"
        ok(uwf("thread", "checkout", step, str(out)))
        assert same_tree(out, expected)
    # `files` names the paths the step changed
    changes = {c["path"]: c["status"] for c in t.files(steps[1])["changes"]}
    assert changes == {"count.txt": "modified", "log.txt": "modified", "step2.txt": "added"}
    # a fork from step 1 gets its own directory with step 1's files; stepping it leaves the original alone
    before = {p.name: p.read_bytes() for p in t.workspace.iterdir()}
    forked = ok(uwf("thread", "fork", steps[0])).json()
    fork_dir = Path(forked["workspace"])
    assert fork_dir != t.workspace and same_tree(fork_dir, left[0])
    assert ok(uwf("thread", "show", forked["thread"])).json()["workspace"] == str(fork_dir)
    fork_step = t.step(forked["thread"])
    assert {p.name: p.read_bytes() for p in t.workspace.iterdir()} == before
    assert (fork_dir / "count.txt").read_text() == "2\n" and (fork_dir / "step2.txt").exists()
    assert {c["path"] for c in t.files(fork_step)["changes"]} == {"count.txt", "log.txt", "step2.txt"}
    # diff names the files that differ between the fork's head and the original's
    diff = ok(uwf("diff", t.thread, forked["thread"], "--json")).json()
    assert {c["path"]: c["status"] for c in diff["files"]} == {"count.txt": "modified", "log.txt": "modified", "step3.txt": "deleted"}
    text = ok(uwf("diff", t.thread, forked["thread"])).out
    assert "Files: 3 paths differ" in text and "-made by step 3" in text
    # a checkout into a non-empty directory needs --force
    refused = uwf("thread", "checkout", steps[0], str(left[2]))
    assert refused.code == 1 and "not empty" in refused.err and "Traceback" not in refused.err
    ok(uwf("thread", "checkout", steps[0], str(left[2]), "--force"))
    assert same_tree(left[2], left[0])


def test_a_fork_with_its_directory_named_and_the_edited_output_fork(uwf, root_dir, tmp_path):
    t = FileThread(uwf, root_dir, tmp_path)
    first = t.step()
    t.step()
    chosen = tmp_path / "mine"
    forked = ok(uwf("thread", "fork", first, "--workspace", str(chosen))).json()
    assert forked["workspace"] == str(chosen.resolve()) and (chosen / "step1.txt").exists() and not (chosen / "step2.txt").exists()
    refused = uwf("thread", "fork", first, "--workspace", str(chosen))
    assert refused.code == 1 and "not empty" in refused.err
    edit = tmp_path / "edit.json"
    edit.write_text(json.dumps({"n": 1}))
    edited = ok(uwf("thread", "fork", first, "--edit-output", str(edit))).json()
    assert same_tree(Path(edited["workspace"]), chosen)


def test_hand_changes_between_steps_are_said_and_recorded(uwf, root_dir, tmp_path):
    t = FileThread(uwf, root_dir, tmp_path)
    t.step()
    (t.workspace / "seed.txt").write_text("edited by a person\n")
    result = ok(uwf("thread", "step", t.thread))
    assert "the workspace changed since the last snapshot (1 path: seed.txt)" in result.err
    files = t.files(result.json()["head"])
    assert [(c["path"], c["status"]) for c in files["byHand"]] == [("seed.txt", "modified")]
    assert "seed.txt" not in {c["path"] for c in files["changes"]}
    # what a person reads says it was not a step, without claiming a person (a failed attempt leaves writes too)
    text = ok(uwf("thread", "files", result.json()["head"])).out
    assert "changed between steps, before it (by hand, or left by a failed attempt): 1 path" in text


def test_reuse_replays_only_with_the_same_files_and_restores_what_the_step_left(uwf, root_dir, tmp_path):
    t = FileThread(uwf, root_dir, tmp_path, extra_config="")
    first = t.step()
    fork = ok(uwf("thread", "fork", t.start)).json()
    replay = ok(uwf("thread", "step", fork["thread"], "--reuse")).json()
    assert replay["reusedFrom"] == first
    fork_dir = Path(fork["workspace"])
    assert (fork_dir / "step1.txt").read_text() == "made by step 1\n"
    # a dry run says which step a replay would reuse (the newest with those inputs and files)
    again = ok(uwf("thread", "fork", t.start)).json()
    foreseen = ok(uwf("thread", "dry-run", again["thread"], "--reuse")).json()["reuseFrom"]
    assert foreseen in (first, ok(uwf("thread", "show", fork["thread"])).json()["head"])
    assert ok(uwf("thread", "step", again["thread"], "--reuse")).json()["reusedFrom"] == foreseen
    files = lambda step: ok(uwf("cas", "get", step)).json()["payload"]["files"]  # noqa: E731
    assert files(ok(uwf("thread", "show", again["thread"])).json()["head"]) == files(first)
    # the same prompt with other files is not a replay
    other = ok(uwf("thread", "fork", t.start)).json()
    (Path(other["workspace"]) / "seed.txt").write_text("different\n")
    ran = ok(uwf("thread", "step", other["thread"], "--reuse")).json()
    assert ran.get("reusedFrom") is None


def test_snapshots_off_for_a_thread_or_a_root(uwf, root_dir, tmp_path):
    t = FileThread(uwf, root_dir, tmp_path, start_args=("--no-snapshot",))
    step = t.step()
    refused = uwf("thread", "files", step)
    assert refused.code == 1 and "no snapshot" in refused.err
    assert "files" not in ok(uwf("thread", "show", t.thread)).json()
    (tmp_path / "off.yaml").write_text(COUNT_TO_THREE.replace("name: count-files", "name: no-files\nworkspace: {snapshot: false}"))
    ok(uwf("workflow", "put", str(tmp_path / "off.yaml")))
    by_workflow = ok(uwf("thread", "start", "no-files", "-p", "x", "-w", str(t.workspace))).json()
    assert "files" not in ok(uwf("cas", "get", t.step(by_workflow["thread"]))).json()["payload"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(COUNT_TO_THREE.replace("name: count-files", "name: bad\nworkspace: {snapshot: maybe}"))
    refused = uwf("workflow", "put", str(bad))
    assert refused.code == 1 and "workspace.snapshot" in refused.err and "true or false" in refused.err
    (root_dir / "config.yaml").write_text(config("workspace:\n  snapshot: false\n"))
    other = ok(uwf("thread", "start", "count-files", "-p", "x", "-w", str(t.workspace))).json()
    head = t.step(other["thread"])
    assert "files" not in ok(uwf("cas", "get", head)).json()["payload"]


def test_an_over_cap_workspace_fails_the_step_naming_the_largest_files_and_the_head_stays(uwf, root_dir, tmp_path):
    t = FileThread(uwf, root_dir, tmp_path, extra_config="workspace:\n  maxSnapshotBytes: 1KB\n  maxFileBytes: 600\n")
    (t.workspace / "big.bin").write_bytes(b"x" * 5000)
    (t.workspace / "a.txt").write_text("a" * 500)
    (t.workspace / "b.txt").write_text("b" * 500)
    result = uwf("thread", "step", t.thread)
    assert result.code == 1 and "Traceback" not in result.err
    error = result.err.strip().splitlines()[-1]
    assert "(workspace.maxSnapshotBytes)" in error and "a.txt" in error
    assert "big.bin (4.9 KB) is over workspace.maxFileBytes (600 bytes)" in result.err and result.err.count("big.bin (") == 1
    assert ok(uwf("thread", "show", t.thread)).json()["head"] == t.start


def test_a_bundle_carries_the_files_into_a_fresh_root(uwf, root_dir, tmp_path):
    t = FileThread(uwf, root_dir, tmp_path)
    for _ in range(3):
        t.step()
    bundle = tmp_path / "t.uwfb"
    ok(uwf("bundle", "export", t.thread, "-o", str(bundle)))
    fresh = tmp_path / "fresh"
    ok(uwf("bundle", "import", str(bundle), env={"UWF_STORAGE_ROOT": str(fresh)}))
    head = ok(uwf("thread", "show", t.thread)).json()["head"]
    out = tmp_path / "from-bundle"
    ok(uwf("thread", "checkout", head, str(out), env={"UWF_STORAGE_ROOT": str(fresh)}))
    assert same_tree(out, t.workspace)
    ok(uwf("cas", "fsck", env={"UWF_STORAGE_ROOT": str(fresh)}))
    # the imported thread gets a directory of its own there, filled when it first steps
    (fresh / "config.yaml").write_text(config())
    fork = ok(uwf("thread", "fork", steps_of_two := ok(uwf("thread", "steps", t.thread)).json()[1]["hash"])).json()
    ok(uwf("bundle", "export", fork["thread"], "-o", str(tmp_path / "fork.uwfb")))
    ok(uwf("bundle", "import", str(tmp_path / "fork.uwfb"), env={"UWF_STORAGE_ROOT": str(fresh)}))
    before = {p.name: p.read_bytes() for p in t.workspace.iterdir()}
    stepped = ok(uwf("thread", "step", fork["thread"], env={"UWF_STORAGE_ROOT": str(fresh)}))
    assert f"was gone: restored the files of {steps_of_two}" in stepped.err
    assert {p.name: p.read_bytes() for p in t.workspace.iterdir()} == before
    assert (fresh / "workspaces" / fork["thread"] / "count.txt").read_text() == "3\n"


def test_gc_during_steps_keeps_every_snapshot(uwf, root_dir, tmp_path):
    t = FileThread(uwf, root_dir, tmp_path)
    env = dict(os.environ, UWF_STORAGE_ROOT=str(root_dir))
    from conftest import _uwf_command

    gc = subprocess.Popen(
        ["sh", "-c", f"while :; do {' '.join(_uwf_command())} cas gc --grace 0 >/dev/null 2>&1; done"], env=env, start_new_session=True
    )
    try:
        steps = [t.step() for _ in range(3)]
    finally:
        os.killpg(gc.pid, 9)
        gc.wait()
    ok(uwf("cas", "gc", "--grace", "0"))
    for number, step in enumerate(steps, start=1):
        out = tmp_path / f"co{number}"
        ok(uwf("thread", "checkout", step, str(out)))
        assert (out / "count.txt").read_text() == f"{number}\n"
    ok(uwf("cas", "fsck"))


def test_export_git_writes_one_commit_per_step(uwf, root_dir, tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    t = FileThread(uwf, root_dir, tmp_path)
    steps = [t.step() for _ in range(3)]
    repo = tmp_path / "git"
    result = ok(uwf("thread", "export-git", t.thread, "--repo", str(repo))).json()
    assert result["commits"] == 4 and result["branch"] == f"uwf/{t.thread}"
    log = subprocess.run(["git", "-C", str(repo), "log", "--format=%B%x00", result["branch"]], capture_output=True, text=True, check=True)
    messages = [m.strip() for m in log.stdout.split("\0") if m.strip()]
    assert [m.splitlines()[0] for m in messages] == ["counter (files)"] * 3 + ["start: count in files"]
    assert [m.splitlines()[2] for m in messages[:3]] == [f"uwf step {s}" for s in reversed(steps)]
    shown = subprocess.run(["git", "-C", str(repo), "show", f"{result['branch']}:count.txt"], capture_output=True, text=True, check=True)
    assert shown.stdout == "3\n"


def test_files_on_a_postgresql_root(pg_url, tmp_path):
    from conftest import _uwf_command

    env = dict(os.environ, UWF_STORAGE_ROOT=pg_url, UWF_ENV_FILE=str(tmp_path / "env"))

    def run(*args: str, code: int = 0):
        done = subprocess.run([*_uwf_command(), *args], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == code and "Traceback" not in done.stderr, (args, done.stderr)
        return json.loads(done.stdout) if code == 0 and done.stdout.strip().startswith("{") else done

    (tmp_path / "wf.yaml").write_text(COUNT_TO_THREE)
    run("workflow", "put", str(tmp_path / "wf.yaml"))
    run("agent", "add", "files", "--protocol", "text", "--", sys.executable, str(AGENT))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "seed.txt").write_text("seed\n")
    thread = run("thread", "start", "count-files", "-p", "go", "-w", str(workspace), "--agent", "counter=files")["thread"]
    first = run("thread", "step", thread)["head"]
    run("thread", "step", thread)
    changes = run("thread", "files", first, "--json")["changes"]
    assert {c["path"] for c in changes} == {"count.txt", "log.txt", "step1.txt"}
    refused = run("thread", "fork", first, code=1)
    assert "workspace.dir" in refused.stderr
    fork = run("thread", "fork", first, "--workspace", str(tmp_path / "fork"))
    assert (tmp_path / "fork" / "step1.txt").exists() and not (tmp_path / "fork" / "step2.txt").exists()
    run("thread", "step", fork["thread"])
    assert (workspace / "count.txt").read_text() == "2\n" and (tmp_path / "fork" / "count.txt").read_text() == "2\n"
    run("cas", "gc", "--grace", "0")
    run("thread", "checkout", first, str(tmp_path / "co"))
    assert same_tree(tmp_path / "co", tmp_path / "fork") is False and (tmp_path / "co" / "step1.txt").exists()
    run("cas", "fsck")


def test_root_copy_carries_files_and_forks_directories(uwf, root_dir, tmp_path):
    t = FileThread(uwf, root_dir, tmp_path)
    first = t.step()
    fork = ok(uwf("thread", "fork", first)).json()
    copy = tmp_path / "copy"
    ok(uwf("root", "copy", str(root_dir), str(copy)))
    env = {"UWF_STORAGE_ROOT": str(copy)}
    assert ok(uwf("thread", "show", fork["thread"], env=env)).json()["workspace"] == fork["workspace"]
    ok(uwf("thread", "checkout", first, str(tmp_path / "co"), env=env))
    assert same_tree(tmp_path / "co", Path(fork["workspace"]))


def test_a_root_kept_in_its_project_is_left_out_of_the_snapshots(uwf, tmp_path):
    project = tmp_path / "project"
    root = project / ".uwf"
    root.mkdir(parents=True)
    (project / "main.py").write_text("print('hi')\n")
    env = {"UWF_STORAGE_ROOT": str(root)}
    (root / "config.yaml").write_text(config())
    (tmp_path / "wf.yaml").write_text(COUNT_TO_THREE)
    ok(uwf("workflow", "put", str(tmp_path / "wf.yaml"), env=env))
    thread = ok(uwf("thread", "start", "count-files", "-p", "x", "-w", str(project), env=env)).json()["thread"]
    head = ok(uwf("thread", "step", thread, env=env)).json()["head"]
    changes = ok(uwf("thread", "files", head, "--json", env=env)).json()["changes"]
    assert {c["path"] for c in changes} == {"count.txt", "log.txt", "step1.txt"}
    ok(uwf("thread", "checkout", head, str(tmp_path / "co"), env=env))
    assert sorted(p.name for p in (tmp_path / "co").iterdir()) == ["count.txt", "log.txt", "main.py", "step1.txt"]


def test_a_forks_git_branch_shares_the_commits_of_the_steps_it_shares(uwf, root_dir, tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    t = FileThread(uwf, root_dir, tmp_path)
    steps = [t.step() for _ in range(2)]
    fork = ok(uwf("thread", "fork", steps[0])).json()
    t.step(fork["thread"])
    repo = tmp_path / "git"
    ok(uwf("thread", "export-git", t.thread, "--repo", str(repo)))
    ok(uwf("thread", "export-git", fork["thread"], "--repo", str(repo)))
    base = subprocess.run(["git", "-C", str(repo), "merge-base", f"uwf/{t.thread}", f"uwf/{fork['thread']}"],
                          capture_output=True, text=True, check=True).stdout.strip()
    message = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%B", base], capture_output=True, text=True, check=True).stdout
    assert f"uwf step {steps[0]}" in message


def test_root_copy_of_a_root_that_is_not_there_is_refused(uwf, tmp_path):
    """A typo in the source copies nothing and says so, rather than an empty success."""
    copied = uwf("root", "copy", str(tmp_path / "no-such-root"), str(tmp_path / "elsewhere"))
    assert copied.code == 1 and "there is no root at" in copied.err and "nothing to copy" in copied.err
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "no-such-root").exists()
