"""The workspace-snapshot rows of the suite (docs/explanation/benchmarks.md), side by side with git itself
in one run on the same generated tree: a first snapshot against `git add -A && git commit`, a
snapshot after one changed file against the same commit, the storage of 100 one-file changes
against `.git`, and a CLI step on a 100-file workspace with snapshots against one without."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

WORDS = ("def class return value thread step agent workspace snapshot import from self none true false "
         "for while if else elif try except raise with as lambda yield async await print open read write").split()


def text_file(rng: random.Random, size: int) -> bytes:
    """Source-like text: words and indentation, about `size` bytes."""
    lines, total = [], 0
    while total < size:
        line = "    " * rng.randrange(4) + " ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 12))) + f" {rng.randrange(10**6)}"
        lines.append(line)
        total += len(line) + 1
    return ("\n".join(lines) + "\n").encode()[:size]


def make_tree(where: Path, files: int, size: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    per_dir = 100
    for index in range(files):
        directory = where / f"pkg{index // per_dir:03d}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"mod{index % per_dir:03d}.py").write_bytes(text_file(rng, size))


def git(where: Path, *args: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b",
               GIT_CONFIG_NOSYSTEM="1", HOME=str(where.parent))
    subprocess.run(["git", "-C", str(where), *args], check=True, capture_output=True, env=env)


def git_commit_seconds(where: Path) -> float:
    started = time.perf_counter()
    git(where, "add", "-A")
    git(where, "commit", "-q", "--allow-empty", "-m", "x")
    return time.perf_counter() - started


def snapshot_rows(report, row, work: Path, files: int, size: int, runs: int) -> None:
    from uwf_core.api import Repo
    from uwf_core.thread.files import snapshot

    print(f"workspace snapshots: {files:,} files, {files * size / 1e6:.0f} MB, against git", flush=True)
    ours_dir, git_dir = work / "snap-ws", work / "snap-git"
    make_tree(ours_dir, files, size)
    shutil.copytree(ours_dir, git_dir)
    git(git_dir, "init", "-q")
    time.sleep(2.1)  # past the stat cache's racy window, as a workspace between steps is
    repo = Repo.open(str(work / "snap-root"))
    started = time.perf_counter()
    first = snapshot(repo, str(ours_dir))
    ours_first = time.perf_counter() - started
    theirs_first = git_commit_seconds(git_dir)
    report.add(row(f"first snapshot of {files:,} files / {files * size / 1e6:.0f} MB", ours_first, theirs_first,
                   "git add -A && git commit", goal="≤ 1.5x"))
    rng = random.Random(7)
    ours, theirs, previous = [], [], first.tree
    for number in range(runs):
        name = f"pkg000/mod{number % 100:03d}.py"
        data = text_file(rng, size)
        (ours_dir / name).write_bytes(data)
        (git_dir / name).write_bytes(data)
        started = time.perf_counter()
        taken = snapshot(repo, str(ours_dir), previous)
        ours.append(time.perf_counter() - started)
        previous = taken.tree
        theirs.append(git_commit_seconds(git_dir))
    report.add(row(f"snapshot after one changed file ({files:,} files)", None, None, "git add -A && git commit", goal="≤ 1.0x and ≤ 50 ms",
                   ours_runs=ours, theirs_runs=theirs))


def stdlib_rows(report, row, work: Path, runs: int) -> None:
    """The issue's tree: a copy of this Python's standard library (its site-packages left out),
    against git on a copy of its own. No change against `git status --porcelain`; one changed
    file against `git add -A && git commit`; a step's two snapshots (before its agent and after,
    one stat index between them) against `git status` then the commit; the sides in turn."""
    import sysconfig

    from uwf_core.api import Repo
    from uwf_core.thread.files import snapshot, stat_index

    ours_dir, git_dir = work / "stdlib-ws", work / "stdlib-git"
    shutil.copytree(sysconfig.get_paths()["stdlib"], ours_dir, symlinks=True, ignore=shutil.ignore_patterns("site-packages", "dist-packages"))
    shutil.copytree(ours_dir, git_dir, symlinks=True)
    count = sum(len(names) for _, _, names in os.walk(ours_dir))
    size = sum(path.lstat().st_size for path in ours_dir.rglob("*") if not path.is_dir())
    print(f"workspace snapshots of the standard library: {count:,} files, {size / 1e6:.0f} MB, against git", flush=True)
    git(git_dir, "init", "-q")
    repo = Repo.open(str(work / "stdlib-root"))
    started = time.perf_counter()
    head = snapshot(repo, str(ours_dir)).tree
    ours_first = time.perf_counter() - started
    report.add(row(f"first snapshot of the standard library ({count:,} files, {size / 1e6:.0f} MB)", ours_first, git_commit_seconds(git_dir),
                   "git add -A && git commit", goal="≤ 1.5x"))
    time.sleep(2.1)  # past the racy window, as a workspace between steps is
    head = snapshot(repo, str(ours_dir), head).tree  # what the first left racy (copied just before it), read and recorded
    ours, theirs = [], []
    for _ in range(runs):
        started = time.perf_counter()
        snapshot(repo, str(ours_dir), head)
        ours.append(time.perf_counter() - started)
        started = time.perf_counter()
        git(git_dir, "status", "--porcelain")
        theirs.append(time.perf_counter() - started)
    report.add(row("  a snapshot that finds no change", None, None, "git status --porcelain", goal="≤ 1.5x", ours_runs=ours, theirs_runs=theirs))
    rng = random.Random(5)
    py_files = sorted(path.relative_to(ours_dir) for path in ours_dir.rglob("*.py") if not path.is_symlink())
    ours, theirs, pair, git_pair = [], [], [], []
    for _ in range(runs):
        name = rng.choice(py_files)
        data = (ours_dir / name).read_bytes() + b"# changed\n"
        (ours_dir / name).write_bytes(data)
        (git_dir / name).write_bytes(data)
        started = time.perf_counter()
        head = snapshot(repo, str(ours_dir), head).tree
        ours.append(time.perf_counter() - started)
        theirs.append(git_commit_seconds(git_dir))
        name = rng.choice(py_files)
        data = (ours_dir / name).read_bytes() + b"# by the step\n"
        started = time.perf_counter()
        index = stat_index(repo, str(ours_dir))
        before = snapshot(repo, str(ours_dir), head, index=index, save=False).tree
        (ours_dir / name).write_bytes(data)  # the agent's work
        head = snapshot(repo, str(ours_dir), before, index=index).tree
        pair.append(time.perf_counter() - started)
        started = time.perf_counter()
        git(git_dir, "status", "--porcelain")
        (git_dir / name).write_bytes(data)
        git_pair.append(git_commit_seconds(git_dir) + time.perf_counter() - started)
    report.add(row("  a snapshot after one changed file", None, None, "git add -A && git commit", goal="≤ 1.0x", ours_runs=ours, theirs_runs=theirs))
    report.add(row("  a step's two snapshots (before its agent, after it; one changed file)", None, None,
                   "git status, then git add -A && git commit", goal="≤ 1.0x", ours_runs=pair, theirs_runs=git_pair))
    shutil.rmtree(git_dir, ignore_errors=True)
    shutil.rmtree(ours_dir, ignore_errors=True)
    memory_rows(report, row, work)


MEMORY_PROBE = """
import os, sys
from uwf_core.api import Repo
from uwf_core.thread.files import snapshot
repo = Repo.open(sys.argv[1])
snapshot(repo, sys.argv[2])  # imports and the schemas, before the file is there
os.rename(sys.argv[3], os.path.join(sys.argv[2], "big"))


def status(key):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith(key + ":"))


with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")  # the peak (VmHWM) starts again from here
before = status("VmRSS")
snapshot(repo, sys.argv[2])
print(status("VmHWM") - before)
"""


def memory_rows(report, row, work: Path) -> None:
    """The memory a snapshot takes for one new 40 MB file (its peak, beyond what the process held
    before), in a process of its own that never held the file otherwise; text (base64, which
    compresses to about 3/4) and random bytes."""
    import base64

    size = 40_000_000
    for kind in ("text", "binary"):
        workspace, big = work / f"memory-{kind}", work / f"memory-{kind}.file"
        workspace.mkdir()
        big.write_bytes(base64.b64encode(os.urandom(size))[:size] if kind == "text" else os.urandom(size))
        done = subprocess.run([sys.executable, "-c", MEMORY_PROBE, str(work / f"memory-root-{kind}"), str(workspace), str(big)],
                              capture_output=True, text=True, check=True)
        report.add(row(f"memory for one new 40 MB file ({'text' if kind == 'text' else 'not text'})", float(done.stdout.split()[-1]), size,
                       "the file's size", goal="≤ 2x", unit="B"))


def storage_rows(report, row, work: Path, steps: int) -> None:
    """100 steps each changing one 10 KB file of a 100-file workspace: the node store against
    .git (loose objects, as git leaves them before a gc), built in a process of its own so the
    node file is measured at rest (its connection closed, the WAL folded in). Disk usage counts
    the blocks each side holds, as `du` does; apparent sizes are in the note."""
    print(f"storage of {steps} one-file changes, against .git", flush=True)
    subprocess.run([sys.executable, __file__, "storage", str(work), str(steps)], check=True, capture_output=True)
    ours, theirs = work / "store-root" / "cas", work / "store-git" / ".git"
    note = f"apparent sizes {apparent(ours) / 1e6:.2f} MB vs {apparent(theirs) / 1e6:.2f} MB"
    report.add(row(f"storage on disk: a 100-file workspace and {steps} one-file changes of 10 KB", disk_usage(ours),
                   disk_usage(theirs), ".git", goal="≤ 1.2x", unit="B"))
    report.add(row("  the same, apparent sizes", apparent(ours), apparent(theirs), ".git", unit="B", note=note))


def build_storage(work: Path, steps: int) -> None:
    from uwf_core.api import Repo
    from uwf_core.thread.files import snapshot

    ours_dir, git_dir = work / "store-ws", work / "store-git"
    make_tree(ours_dir, 100, 10_000, seed=3)
    shutil.copytree(ours_dir, git_dir)
    git(git_dir, "init", "-q")
    repo = Repo.open(str(work / "store-root"))
    rng = random.Random(11)
    previous = snapshot(repo, str(ours_dir)).tree
    git_commit_seconds(git_dir)
    for _ in range(steps):
        name = f"pkg000/mod{rng.randrange(100):03d}.py"
        data = text_file(rng, 10_000)
        (ours_dir / name).write_bytes(data)
        (git_dir / name).write_bytes(data)
        previous = snapshot(repo, str(ours_dir), previous).tree
        git_commit_seconds(git_dir)


def disk_usage(path: Path) -> int:
    return sum(item.lstat().st_blocks * 512 for item in path.rglob("*") if item.is_file())


def apparent(path: Path) -> int:
    return sum(item.lstat().st_size for item in path.rglob("*") if item.is_file())


def step_rows(report, row, uwf, run_timed, median, runs: int) -> None:
    """A CLI step on a 100-file workspace, snapshots on against off, interleaved."""
    from uwf_core.api import Config, Repo, put_workflow, start_thread
    from uwf_core.config.model import AgentConfig, WorkspaceConfig

    from suite import TEXT_AGENT

    print("a CLI step with a 100-file workspace, snapshots on and off", flush=True)
    roots = {}
    for on in (True, False):
        workspace = uwf.work / f"step-ws-{on}"
        make_tree(workspace, 100, 2_000, seed=5)
        root = str(uwf.work / f"step-root-{on}")
        repo = Repo.open(root)
        put_workflow(repo, str(uwf.workflow))
        repo.save_config(Config(agents={"text": AgentConfig("text", "sh", ("-c", TEXT_AGENT), "text")}, default_agent="text",
                                workspace=WorkspaceConfig(snapshot=on)))
        roots[on] = (root, start_thread(repo, "bench-loop", "benchmark", str(workspace)).thread)
    time.sleep(2.1)
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(runs):
        for on, (root, thread) in roots.items():
            times[on].append(run_timed(uwf.cli("--root", root, "thread", "step", thread)))
    with_files, without = median(times[True]), median(times[False])
    report.add(row("CLI step, no-op text agent, 100-file workspace, snapshots on", None, None, "snapshots off", goal="≤ +10 ms",
                   ours_runs=times[True], theirs_runs=times[False]))
    report.add(row("  the snapshots' own cost per step", with_files - without, note="same run", goal="≤ 10 ms"))


if __name__ == "__main__":  # the storage rows' build, in a process of its own
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    build_storage(Path(sys.argv[2]), int(sys.argv[3]))
