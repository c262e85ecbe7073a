"""The cost of what a run may leave behind (engine/contain/run_guard.py), side by side in one run: a CLI step
in a git workspace with its .git as a private copy and the workspace checked for repositories
(`git: read`, the default) against the same step trusted with the real .git (`git: write`: none
of it), and a step whose agent's state directory is a private copy against one with none."""

from __future__ import annotations

import time


def guard_rows(report, row, uwf, run_timed, median, runs: int, files: int = 10_000) -> None:
    from files import git, make_tree

    from suite import TEXT_AGENT
    from uwf_core.api import Config, Repo, put_workflow, start_thread
    from uwf_core.config.model import AgentConfig, WorkspaceConfig

    print(f"a CLI step in a git workspace of {files:,} files, and with a state directory, guarded and not", flush=True)
    state = uwf.work / "guard-home" / ".cli"
    make_tree(state / "skills", 60, 10_000, seed=9)  # a CLI's config and skills: ~600 KB
    (state / "config.toml").write_text('model = "m"\n')
    settings = {
        "read": {"git": "read"}, "write": {"git": "write"},
        "state": {"git": "write", "state": (str(state) + "/",)}, "none": {"git": "write"},
    }
    roots = {}
    for name, extra in settings.items():
        workspace = uwf.work / f"guard-ws-{name}"
        make_tree(workspace, files if name in ("read", "write") else 10, 2_000, seed=5)
        git(workspace, "init", "-q")
        git(workspace, "add", "-A")
        git(workspace, "commit", "-qm", "x")
        root = str(uwf.work / f"guard-root-{name}")
        repo = Repo.open(root)
        put_workflow(repo, str(uwf.workflow))
        agent = AgentConfig("text", "sh", ("-c", TEXT_AGENT), "text", **extra)
        repo.save_config(Config(agents={"text": agent}, default_agent="text", workspace=WorkspaceConfig(snapshot=False)))
        roots[name] = (root, start_thread(repo, "bench-loop", "benchmark", str(workspace)).thread)
    time.sleep(0.5)
    times: dict[str, list[float]] = {name: [] for name in roots}
    for _ in range(runs):
        for name, (root, thread) in roots.items():
            times[name].append(run_timed(uwf.cli("--root", root, "thread", "step", thread)))
    read, write = median(times["read"]), median(times["write"])
    report.add(row(f"CLI step, git workspace of {files:,} files, .git a private copy + repositories checked (git: read)", None, None,
                   "git: write (the real .git, no check)", goal="≤ +25 ms", ours_runs=times["read"], theirs_runs=times["write"]))
    report.add(row("  the guard's own cost per step (git)", read - write, note="same run", goal="≤ 25 ms"))
    with_state, without = median(times["state"]), median(times["none"])
    report.add(row("CLI step, a 60-file state directory as a private copy", None, None, "no state directory", goal="≤ +15 ms",
                   ours_runs=times["state"], theirs_runs=times["none"]))
    report.add(row("  the private copy's own cost per step", with_state - without, note="same run", goal="≤ 15 ms"))
