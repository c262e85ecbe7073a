"""Nothing an agent writes runs later on the host through git (design §16).

Each test gives a hostile shell agent a workspace and lets it try one route by which git would
run its code on your next `git status`, `git commit` or `git checkout` there — a second git
directory behind `.git/commondir`, an fsmonitor in a fake common directory, a filter named in
`info/attributes`, a `.git` made where there was none, a bare repository in a subdirectory, a
submodule's hooks and its `.git` file, a hooks directory or an included config file that the
repository's config names in the workspace — then runs those git commands on the host, in the
workspace and in a submodule, and checks that nothing the agent planted ran. The agent's own
git works in its sandbox (on a private copy of .git), and with `git: commit` its commits land.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import EXAMPLES
from uwf_core.engine.contain.sandbox import BUBBLEWRAP, containment

ANSWER = "---\nthesis: t\nkeyPoints: [a]\n---\nbody\n"
GIT_ENV = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@example.com", "GIT_COMMITTER_NAME": "u",
           "GIT_COMMITTER_EMAIL": "u@example.com", "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}


@pytest.fixture(autouse=True)
def _bubblewrap():
    if containment().kind != BUBBLEWRAP:
        pytest.skip(f"bubblewrap cannot start here: {containment().reason}")


def git(where: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(["git", *args], cwd=where, env=env, capture_output=True, text=True, timeout=60)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} in {where}: {done.stderr}")
    return done


def repository(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    (path / "readme.md").write_text("hello\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "first")
    return path


def step(uwf, root_dir: Path, workspace: Path, script: str, extra: str = "") -> tuple[object, str]:
    """One step of a shell agent in `workspace`; the result and the thread."""
    (root_dir / "config.yaml").write_text(
        f"agents:\n  hostile:\n    command: sh\n    args: [-c, {json.dumps(script + '; printf -- ' + json.dumps(ANSWER))}]\n"
        f"    protocol: text\n{extra}"
    )
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    thread = uwf("thread", "start", "analyze-topic", "-p", "work", "-w", str(workspace)).json()["thread"]
    return uwf("thread", "step", thread, "--agent", "hostile", env=GIT_ENV), thread


def host_git_runs_nothing(markers: Path, *places: Path) -> None:
    """`git status`, `git commit`, `git checkout` on the host, in each place: no marker appears."""
    for place in places:
        git(place, "status", check=False)
        git(place, "add", "-A", check=False)
        git(place, "commit", "-qm", "host", "--allow-empty", check=False)
        git(place, "checkout", "-q", "-b", f"host-{os.urandom(3).hex()}", check=False)
        git(place, "status", check=False)
    assert sorted(path.name for path in markers.iterdir()) == []


def step_in_root_at_top(uwf, workspace: Path, script: str, protocol: str = "text", env: dict | None = None):
    """One step of a shell agent whose root stands at its workspace's top (`<workspace>/.uwf`)."""
    root = workspace / ".uwf"
    root.mkdir(exist_ok=True)
    (root / "config.yaml").write_text(f"agents:\n  hostile:\n    command: sh\n    args: [-c, {json.dumps(script)}]\n    protocol: {protocol}\n")
    env = {"UWF_STORAGE_ROOT": str(root), **GIT_ENV, **(env or {})}
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml"), env=env).code == 0
    thread = uwf("thread", "start", "analyze-topic", "-p", "work", "-w", str(workspace), env=env).json()["thread"]
    return uwf("thread", "step", thread, "--agent", "hostile", env=env)


@pytest.fixture
def markers(tmp_path) -> Path:
    path = tmp_path / "markers"
    path.mkdir()
    return path


def runs(uwf, thread: str) -> list[dict]:
    return uwf("thread", "runs", thread).json()


def test_a_second_git_directory_behind_commondir_with_an_fsmonitor_and_hooks_never_runs(uwf, root_dir, tmp_path, markers):
    workspace = repository(tmp_path / "ws")
    fake = workspace / "fake-common"
    script = (
        f"mkdir -p {fake}/hooks {fake}/objects {fake}/refs/heads; "
        f"printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch {markers}/fsmonitor\\n' > {fake}/config; "
        f"printf '#!/bin/sh\\ntouch {markers}/pre-commit\\n' > {fake}/hooks/pre-commit; chmod +x {fake}/hooks/pre-commit; "
        f"git config core.fsmonitor 'touch {markers}/config'; git config core.hooksPath {fake}/hooks; "
        f"echo '{fake}' > .git/commondir"
    )
    result, thread = step(uwf, root_dir, workspace, script)
    assert result.code == 0, result  # nothing it did reached the real .git: the step stands
    assert "git settings in its copy of .git" in result.err
    refused = runs(uwf, thread)[-1]["outside"]["refused"]
    assert any(item.startswith(".git/commondir") for item in refused) and any(item.startswith(".git/config") for item in refused)
    assert not (workspace / ".git" / "commondir").exists()
    host_git_runs_nothing(markers, workspace)


def test_a_filter_in_info_attributes_and_config_never_runs(uwf, root_dir, tmp_path, markers):
    workspace = repository(tmp_path / "ws")
    script = (
        "mkdir -p .git/info; echo '* filter=evil' > .git/info/attributes; echo '* filter=evil' > .gitattributes; "
        f"git config filter.evil.clean 'touch {markers}/clean'; git config filter.evil.smudge 'touch {markers}/smudge'; "
        "echo changed >> readme.md"
    )
    result, thread = step(uwf, root_dir, workspace, script)
    assert result.code == 0, result
    assert ".gitattributes: changed by the run, and git applies the filters it names" in result.err  # a later session's: said
    assert not (workspace / ".git" / "info" / "attributes").exists() or "evil" not in (workspace / ".git" / "info" / "attributes").read_text()
    host_git_runs_nothing(markers, workspace)


def test_a_git_directory_made_where_there_was_none_is_thrown_away_or_refused(uwf, root_dir, tmp_path, markers):
    """At the workspace's top the agent's `git init` works in a private .git that is thrown away;
    one made deeper, or a bare-looking directory, fails the step and is renamed aside."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = (
        f"git init -q && git config core.fsmonitor 'touch {markers}/top'; "
        f"git init -q sub && git -C sub config core.fsmonitor 'touch {markers}/sub'; "
        f"mkdir -p bare/objects bare/refs && echo 'ref: refs/heads/main' > bare/HEAD && "
        f"printf '[core]\\n\\tbare = false\\n\\tworktree = ..\\n\\tfsmonitor = touch {markers}/bare\\n' > bare/config"
    )
    result, thread = step(uwf, root_dir, workspace, script)
    assert result.code == 1 and "left in its workspace what your next git (or uwf) command there would run" in result.err, result
    assert "sub/.git, renamed sub/.git.refused-by-uwf" in result.err and "bare (a bare repository" in result.err
    assert not (workspace / ".git").exists()  # the private one is gone, and never was on the host
    assert (workspace / "sub" / ".git.refused-by-uwf" / "config").exists()  # renamed, not deleted
    assert (workspace / "bare" / "HEAD.refused-by-uwf").exists() and not (workspace / "bare" / "HEAD").exists()
    record = runs(uwf, thread)[-1]
    assert record["status"] == "failed" and record["containment"] == "bubblewrap"
    for place in (workspace, workspace / "sub", workspace / "bare"):
        for args in (("status",), ("commit", "-qm", "x", "--allow-empty")):
            git(place, *args, check=False)
    assert sorted(path.name for path in markers.iterdir()) == []
    alone = tmp_path / "alone"  # only a top-level `git init` (aider's): the step stands
    alone.mkdir()
    result, thread = step(uwf, root_dir, alone, f"git init -q && git config core.fsmonitor 'touch {markers}/alone'")
    assert result.code == 0 and "private .git (there was none): thrown away" in result.err, result
    assert not (alone / ".git").exists()


def test_a_submodules_hooks_and_git_file_stay_as_they_were(uwf, root_dir, tmp_path, markers):
    origin = repository(tmp_path / "origin")
    workspace = repository(tmp_path / "ws")
    git(workspace, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(origin), "sub")
    git(workspace, "commit", "-qm", "sub")
    sub_git = (workspace / "sub" / ".git").read_text()
    script = (
        f"printf '#!/bin/sh\\ntouch {markers}/module-hook\\n' > .git/modules/sub/hooks/pre-commit; "
        f"chmod +x .git/modules/sub/hooks/pre-commit; git -C sub config core.fsmonitor 'touch {markers}/module-config'; "
        f"mkdir -p evil/objects evil/refs evil/hooks && echo 'ref: refs/heads/main' > evil/HEAD && "
        f"printf '[core]\\n\\tfsmonitor = touch {markers}/evil\\n' > evil/config; echo 'gitdir: ../evil' > sub/.git; "
        "mv sub sub-moved; mkdir sub; echo 'gitdir: ../evil' > sub/.git"
    )
    result, thread = step(uwf, root_dir, workspace, script)
    assert result.code == 1 and "evil (a bare repository" in result.err, result
    assert "sub/.git" in result.err and "sub-moved" not in result.err  # the real one only moved: not refused
    assert (workspace / "sub-moved" / ".git").read_text() == sub_git
    assert not (workspace / ".git" / "modules" / "sub" / "hooks" / "pre-commit").exists()
    os.rename(workspace / "sub", tmp_path / "agents-sub")
    os.rename(workspace / "sub-moved", workspace / "sub")
    host_git_runs_nothing(markers, workspace, workspace / "sub")


def test_a_hooks_directory_and_an_include_the_config_names_in_the_workspace_are_read_only(uwf, root_dir, tmp_path, markers):
    """husky's `core.hooksPath = .husky`, a shared config included from the workspace: git runs
    what they hold on your next commit, so the agent may not change them, nor make a missing one."""
    workspace = repository(tmp_path / "ws")
    (workspace / ".husky").mkdir()
    (workspace / ".husky" / "pre-commit").write_text("#!/bin/sh\ntrue\n")
    (workspace / ".husky" / "pre-commit").chmod(0o755)
    (workspace / "shared.gitconfig").write_text("[user]\n\tname = shared\n")
    git(workspace, "config", "core.hooksPath", ".husky")
    git(workspace, "config", "include.path", "../shared.gitconfig")
    git(workspace, "config", "filter.fmt.clean", "./tools/clean.sh")  # a path it runs that is not there yet
    script = (
        f"printf '#!/bin/sh\\ntouch {markers}/husky\\n' > .husky/pre-commit; "
        f"printf '[core]\\n\\tfsmonitor = touch {markers}/include\\n' >> shared.gitconfig; "
        f"mkdir -p tools && printf '#!/bin/sh\\ntouch {markers}/filter\\ncat\\n' > tools/clean.sh && chmod +x tools/clean.sh"
    )
    result, thread = step(uwf, root_dir, workspace, script)
    assert result.code == 1 and "tools/clean.sh (a repository's config names it: git runs or reads it)" in result.err, result
    assert (workspace / ".husky" / "pre-commit").read_text() == "#!/bin/sh\ntrue\n"
    assert "fsmonitor" not in (workspace / "shared.gitconfig").read_text()
    (workspace / ".gitattributes").write_text("* filter=fmt\n")
    host_git_runs_nothing(markers, workspace)


def test_the_agents_own_git_works_and_with_git_commit_its_commits_land(uwf, root_dir, tmp_path, markers):
    workspace = repository(tmp_path / "ws")
    script = (
        "echo more >> readme.md; echo new > added.txt; git add -A; git commit -qm 'agent work'; "
        f"git config core.fsmonitor 'touch {markers}/committed-config'; git log --oneline >&2"
    )
    read, thread = step(uwf, root_dir, workspace, script)
    assert read.code == 0 and "agent work" in read.err, read  # its git worked, in its copy
    assert "thrown away (its entry's `git: commit` keeps" in read.err
    assert git(workspace, "log", "--format=%s").stdout.split() == ["first"]
    assert {".git/index", ".git/refs/heads/main"} <= set(runs(uwf, thread)[-1]["outside"]["git"])
    git(workspace, "checkout", "-q", "--", ".")
    git(workspace, "clean", "-qfd")
    kept, thread = step(uwf, root_dir, workspace, script, "    git: commit\n")
    assert kept.code == 0, kept
    assert git(workspace, "log", "--format=%s").stdout.split("\n")[:2] == ["agent work", "first"]
    assert git(workspace, "status", "--porcelain").stdout == ""  # its index came with its commit
    assert git(workspace, "fsck", "--no-progress").returncode == 0
    assert "fsmonitor" not in (workspace / ".git" / "config").read_text()
    assert "uwf: agent hostile" in git(workspace, "reflog", "-1").stdout
    host_git_runs_nothing(markers, workspace)


def test_without_bubblewrap_a_repository_made_in_the_workspace_is_still_refused(uwf, root_dir, tmp_path, markers):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = f"git init -q deep && git -C deep config core.fsmonitor 'touch {markers}/x'; printf -- {json.dumps(ANSWER)}"
    (root_dir / "config.yaml").write_text(f"agents:\n  hostile:\n    command: sh\n    args: [-c, {json.dumps(script)}]\n    protocol: text\n")
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    thread = uwf("thread", "start", "analyze-topic", "-p", "work", "-w", str(workspace)).json()["thread"]
    result = uwf("thread", "step", thread, "--agent", "hostile", env={"UWF_BWRAP": "", **GIT_ENV})
    assert result.code == 1 and "deep/.git, renamed deep/.git.refused-by-uwf" in result.err, result
    assert runs(uwf, thread)[-1]["containment"].startswith("process-group")
    git(workspace / "deep", "status", check=False)
    assert list(markers.iterdir()) == []


def test_a_repository_made_by_a_run_whose_uwf_was_killed_is_refused_by_the_next_step(uwf, root_dir, tmp_path, markers):
    """SIGKILL of `uwf` ends the agent, but its check after the run never comes: the survey was
    saved as pending, and the next step of any thread in that workspace renames what it made aside."""
    import signal
    import time

    from conftest import _uwf_command

    workspace = repository(tmp_path / "ws")
    planted = workspace / "sub" / ".git"
    script = f"git init -q sub && git -C sub config core.fsmonitor 'touch {markers}/sub'; sleep 60"
    (root_dir / "config.yaml").write_text(
        f"agents:\n  hostile:\n    command: sh\n    args: [-c, {json.dumps(script)}]\n    protocol: text\n"
        f"  plain:\n    command: sh\n    args: [-c, {json.dumps('printf -- ' + json.dumps(ANSWER))}]\n    protocol: text\n"
    )
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    thread = uwf("thread", "start", "analyze-topic", "-p", "work", "-w", str(workspace)).json()["thread"]
    env = {**os.environ, **GIT_ENV, "UWF_STORAGE_ROOT": str(root_dir)}
    step_process = subprocess.Popen([*_uwf_command(), "thread", "step", thread, "--agent", "hostile"], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not (planted / "config").exists() or "fsmonitor" not in (planted / "config").read_text():
        assert time.monotonic() < deadline, "the agent never planted its repository"
        time.sleep(0.05)
    step_process.send_signal(signal.SIGKILL)
    step_process.wait(timeout=30)
    assert planted.exists()  # no check came after that run
    other = uwf("thread", "start", "analyze-topic", "-p", "next", "-w", str(workspace)).json()["thread"]
    result = uwf("thread", "step", other, "--agent", "plain", env=GIT_ENV)
    assert result.code == 0, result
    assert "a run before this one that uwf did not see to its end made git repositories here" in result.err
    assert not planted.exists() and (workspace / "sub" / ".git.refused-by-uwf").is_dir()
    git(workspace / "sub", "status", check=False)
    assert list(markers.iterdir()) == []


# -- found by an adversary's trial (kept as tests) ----------------------------------------------


def test_a_repository_beside_a_tree_too_deep_to_check_is_still_renamed(uwf, root_dir, tmp_path, markers):
    workspace = repository(tmp_path / "ws")
    script = (f"git init -q evil && git -C evil config core.fsmonitor 'touch {markers}/deep'; "
              "d=deep; for i in $(seq 1 1030); do d=$d/d; done; mkdir -p $d")
    result, thread = step(uwf, root_dir, workspace, script)
    assert result.code == 1 and "could not check all of the workspace" in result.err and "deeper than 1024 levels" in result.err, result
    assert (workspace / "evil" / ".git.refused-by-uwf").is_dir() and not (workspace / "evil" / ".git").exists()
    host_git_runs_nothing(markers, workspace / "evil")
    subprocess.run(["rm", "-rf", str(workspace / "deep")], check=True)  # pytest's own clean-up recurses: too deep for it


def test_a_path_the_config_names_cannot_be_replaced_by_moving_its_directory_away(uwf, root_dir, tmp_path, markers):
    workspace = repository(tmp_path / "ws")
    (workspace / "tools").mkdir()
    (workspace / "tools" / "clean.sh").write_text("#!/bin/sh\ncat\n")
    (workspace / "conf").mkdir()
    (workspace / "conf" / "git.inc").write_text("[user]\n\tname = u\n")
    git(workspace, "config", "filter.x.clean", "sh tools/clean.sh")
    git(workspace, "config", "include.path", "../conf/git.inc")
    (workspace / ".gitattributes").write_text("*.txt filter=x\n")
    script = (f"mv tools tools.old && mkdir tools && printf '#!/bin/sh\\ntouch {markers}/filter\\ncat\\n' > tools/clean.sh; "
              f"mv conf conf.old && mkdir conf && printf '[core]\\n\\tfsmonitor = touch {markers}/include\\n' > conf/git.inc; "
              "echo x > a.txt")
    result, thread = step(uwf, root_dir, workspace, script)
    assert result.code == 1, result
    assert "tools/clean.sh (a repository's config names it" in result.err and "conf/git.inc (a repository's config names it" in result.err
    host_git_runs_nothing(markers, workspace)


def test_a_linked_worktree_nested_repositories_and_husky_9_keep_what_their_configs_name(uwf, root_dir, tmp_path, markers):
    main = repository(tmp_path / "main")
    (main / ".githooks").mkdir()
    (main / ".githooks" / "pre-commit").write_text("#!/bin/sh\ntrue\n")
    (main / ".githooks" / "pre-commit").chmod(0o755)
    git(main, "config", "core.hooksPath", ".githooks")
    git(main, "add", "-A")
    git(main, "commit", "-qm", "hooks")
    workspace = tmp_path / "wt"
    git(main, "worktree", "add", "-q", str(workspace), "-b", "wt")
    nested = repository(workspace / "vendor" / "lib")
    (nested / ".husky" / "_").mkdir(parents=True)
    (nested / ".husky" / "_" / "pre-commit").write_text('#!/bin/sh\nsh "$(dirname "$0")/../pre-commit"\n')
    (nested / ".husky" / "_" / "pre-commit").chmod(0o755)
    (nested / ".husky" / "pre-commit").write_text("true\n")
    (nested / "clean.sh").write_text("cat\n")
    git(nested, "config", "core.hooksPath", ".husky/_")
    git(nested, "config", "filter.y.clean", "sh clean.sh")
    script = (f"printf '#!/bin/sh\\ntouch {markers}/worktree\\n' > .githooks/pre-commit; "
              f"echo 'touch {markers}/husky' > vendor/lib/.husky/pre-commit; printf 'touch {markers}/noslash\\ncat\\n' > vendor/lib/clean.sh")
    result, thread = step(uwf, root_dir, workspace, script)
    assert result.code == 0, result  # nothing it tried reached them: read-only
    assert (workspace / ".githooks" / "pre-commit").read_text() == "#!/bin/sh\ntrue\n"
    assert (nested / ".husky" / "pre-commit").read_text() == "true\n" and (nested / "clean.sh").read_text() == "cat\n"
    (nested / "a.md").write_text("x\n")
    (nested / ".gitattributes").write_text("*.md filter=y\n")
    host_git_runs_nothing(markers, workspace, nested)


def test_git_commit_refuses_an_index_that_names_places_outside_the_worktree(uwf, root_dir, tmp_path, markers):
    """An index git never writes itself: entries named .git/hooks/... or ../... that `git checkout
    -- .` on the host would write there. It is not taken; the commits it made are."""
    workspace = repository(tmp_path / "ws")
    script = (
        "mkdir -p Xgit/hooks && printf '#!/bin/sh\\ntouch " + str(markers) + "/smuggled\\n' > Xgit/hooks/post-checkout && "
        "chmod +x Xgit/hooks/post-checkout && git add Xgit && rm -rf Xgit && python3 -c \""
        "import hashlib; d = open('.git/index', 'rb').read()[:-20].replace(b'Xgit/hooks/', b'.git/hooks/'); "
        "open('.git/index', 'wb').write(d + hashlib.sha1(d).digest())\""
    )
    result, thread = step(uwf, root_dir, workspace, script, "    git: commit\n")
    assert result.code == 0, result
    assert "index: it names '.git/hooks/post-checkout', which is no place in a worktree; not taken" in result.err
    git(workspace, "checkout", "--", ".", check=False)
    assert not (workspace / ".git" / "hooks" / "post-checkout").exists()
    host_git_runs_nothing(markers, workspace)


@pytest.mark.parametrize("fifo", ["refs/heads/hang", "packed-refs", "HEAD", "index"])
def test_git_commit_reads_no_fifo_the_run_left_in_its_copy(fifo, uwf, root_dir, tmp_path):
    workspace = repository(tmp_path / "ws")
    script = f"echo x > new.txt; git add new.txt; git commit -qm run; rm -f .git/{fifo}; mkfifo .git/{fifo}"
    result, thread = step(uwf, root_dir, workspace, script, "    git: commit\n")
    assert result.code == 0, result  # no open() of uwf's waited on a fifo for a writer


def test_git_commit_inflates_no_zlib_bomb(uwf, root_dir, tmp_path):
    import resource

    workspace = repository(tmp_path / "ws")
    script = ("mkdir -p .git/objects/ab && python3 -c \"import zlib; c = zlib.compressobj(9); z = bytes(1 << 20); "
              "out = [c.compress(b'blob 0\\x00')] + [c.compress(z) for _ in range(2000)] + [c.flush()]; "
              "open('.git/objects/ab/' + 'c' * 38, 'wb').write(b''.join(out))\"")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result, thread = step(uwf, root_dir, workspace, script, "    git: commit\n")
    assert result.code == 0 and "not a git object of that name; not taken" in result.err, result
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss <= max(before, 400_000)  # KB: not the 2 GB it inflates to


def test_names_an_agent_chose_reach_the_terminal_escaped(uwf, root_dir, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = "n=$(printf 'x\\033[2K\\r\\033[1Aall clean'); mkdir -p \"$n\" && git init -q \"$n\""
    result, thread = step(uwf, root_dir, workspace, script)
    assert result.code == 1 and "\x1b" not in result.err and "x\\x1b[2K\\x0d\\x1b[1Aall clean/.git" in result.err, result


def test_git_commit_takes_an_index_made_again_from_its_entries(uwf, root_dir, tmp_path, markers):
    """A cache-tree the run forged (naming a tree with a backdoor) would be what your next commit
    commits: the index taken is made by git from its entries alone."""
    workspace = repository(tmp_path / "ws")
    script = (
        "echo backdoor > readme.md && git add readme.md && BAD=$(git write-tree) && git checkout -q -- readme.md 2>/dev/null; "
        "git reset -q; echo benign > other.txt && git add other.txt && git write-tree >/dev/null; "
        "python3 -c \"import hashlib, os, subprocess; bad = bytes.fromhex(os.environ['BAD']); d = open('.git/index', 'rb').read()[:-20]; "
        "i = d.find(b'TREE'); n = int.from_bytes(d[i + 4:i + 8], 'big'); ext = d[i + 8:i + 8 + n]; "
        "head, _, tail = ext.partition(bytes([10])); ext = head + bytes([10]) + bad + tail[20:]; "
        "d = d[:i + 8] + ext + d[i + 8 + n:]; open('.git/index', 'wb').write(d + hashlib.sha1(d).digest())\""
    )
    result, thread = step(uwf, root_dir, workspace, "export BAD; " + script.replace("BAD=$(git write-tree)", "BAD=$(git write-tree); export BAD"),
                          "    git: commit\n")
    assert result.code == 0, result
    git(workspace, "commit", "-qm", "the user's own commit")
    committed = git(workspace, "show", "HEAD:readme.md").stdout
    assert committed == "hello\n" and git(workspace, "show", "HEAD:other.txt").stdout == "benign\n"


def test_a_git_directory_inside_a_bare_looking_one_is_found_too(uwf, root_dir, tmp_path, markers):
    workspace = repository(tmp_path / "ws")
    script = (f"mkdir -p d/objects d/refs && echo 'ref: refs/heads/main' > d/HEAD && git init -q d && "
              f"git -C d config core.fsmonitor 'touch {markers}/inner'")
    result, thread = step(uwf, root_dir, workspace, script)
    assert result.code == 1 and "d/.git, renamed d/.git.refused-by-uwf" in result.err, result
    host_git_runs_nothing(markers, workspace / "d")


def test_a_hook_that_is_a_link_into_the_workspace_is_read_only(uwf, root_dir, tmp_path, markers):
    workspace = repository(tmp_path / "ws")
    (workspace / "scripts").mkdir()
    (workspace / "scripts" / "pre-commit.sh").write_text("#!/bin/sh\ntrue\n")
    (workspace / "scripts" / "pre-commit.sh").chmod(0o755)
    (workspace / ".git" / "hooks" / "pre-commit").symlink_to("../../scripts/pre-commit.sh")
    result, thread = step(uwf, root_dir, workspace, f"printf '#!/bin/sh\\ntouch {markers}/hook\\n' > scripts/pre-commit.sh")
    assert result.code == 0 and (workspace / "scripts" / "pre-commit.sh").read_text() == "#!/bin/sh\ntrue\n", result
    host_git_runs_nothing(markers, workspace)


def test_a_git_link_made_anew_on_its_freed_inode_is_new(uwf, root_dir, tmp_path, markers):
    """A workspace whose .git is a link (its git directory elsewhere): a link can be removed, and
    one made in its place may get the same inode number; its ctime tells them apart."""
    workspace = repository(tmp_path / "ws")
    os.rename(workspace / ".git", workspace / ".gitdir")
    (workspace / ".git").symlink_to(".gitdir")
    script = (f"rm .git; git init -q --bare evil 2>/dev/null; git -C evil config core.fsmonitor 'touch {markers}/link'; "
              "git -C evil config core.bare false; git -C evil config core.worktree ..; ln -s evil .git")
    result, thread = step(uwf, root_dir, workspace, script)
    assert result.code == 1 and "renamed" in result.err, result
    host_git_runs_nothing(markers, workspace)


def test_a_branch_that_looks_like_an_option_is_not_taken(uwf, root_dir, tmp_path):
    workspace = repository(tmp_path / "ws")
    result, thread = step(uwf, root_dir, workspace, "git update-ref refs/heads/-dash HEAD", "    git: commit\n")
    assert result.code == 0 and "refs/heads/-dash: not a branch or tag name uwf takes" in result.err, result
    assert "-dash" not in git(workspace, "branch").stdout


def test_a_root_at_the_workspaces_top_shares_it_with_runs_beside_this_one(uwf, tmp_path, markers):
    """Other runs' private copies of .git come and go in the root's scratch directory while this
    run goes: they are no repository of this agent's (the sandbox hides scratch from it), and what
    the agent writes where scratch is lands nowhere on the host."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    workspace = repository(tmp_path / "ws")
    root = workspace / ".uwf"
    root.mkdir()
    script = ("mkdir -p .uwf/tmp/evil/objects .uwf/tmp/evil/refs; echo 'ref: refs/heads/main' > .uwf/tmp/evil/HEAD; "
              "touch started; while [ ! -e go ]; do sleep 0.05; done; rm go started")
    (root / "config.yaml").write_text(
        f"agents:\n  hostile:\n    command: sh\n    args: [-c, {json.dumps(script + '; printf -- ' + json.dumps(ANSWER))}]\n"
        f"    protocol: text\n"
    )
    env = {"UWF_STORAGE_ROOT": str(root), **GIT_ENV}
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml"), env=env).code == 0
    thread = uwf("thread", "start", "analyze-topic", "-p", "work", "-w", str(workspace), env=env).json()["thread"]
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(uwf, "thread", "step", thread, "--agent", "hostile", env=env)
        deadline = time.monotonic() + 30
        while not (workspace / "started").exists():
            assert time.monotonic() < deadline and not running.done(), running.result() if running.done() else "never started"
            time.sleep(0.05)
        beside = root / "tmp" / "private-0123456789ab"  # what a run beside this one keeps there while it goes
        for part in ("objects", "refs"):
            (beside / part).mkdir(parents=True)
        (beside / "HEAD").write_text("ref: refs/heads/main\n")
        (workspace / "go").touch()
        result = running.result(timeout=60)
    assert result.code == 0, result
    assert (beside / "HEAD").exists() and not (root / "tmp" / "evil").exists()
    assert uwf("thread", "runs", thread, env=env).json()[-1]["containment"] == "bubblewrap"
    host_git_runs_nothing(markers, workspace)


def test_a_step_agents_staging_directory_in_a_root_at_the_workspaces_top_is_checked(uwf, tmp_path, markers):
    """The walk passes by the root's scratch directory, but not the one place in it a step agent
    may write: its staging directory (found by an adversary's trial)."""
    workspace = repository(tmp_path / "ws")
    script = (f'B="$UWF_STAGING/evil"; mkdir -p "$B/objects" "$B/refs/heads"; echo "ref: refs/heads/main" > "$B/HEAD"; '
              f'printf "[core]\\n\\tbare = false\\n\\tfsmonitor = touch {markers}/staged\\n" > "$B/config"; echo 0000000000000')
    result = step_in_root_at_top(uwf, workspace, script, protocol="step")
    assert result.code == 1 and "evil (a bare repository" in result.err, result
    assert not list(markers.iterdir())


def test_a_root_whose_scratch_is_a_link_is_walked_whole(uwf, tmp_path, markers):
    """A link can be moved away and made anew where the sandbox hides nothing: no pass-by then."""
    workspace = repository(tmp_path / "ws")
    root = workspace / ".uwf"
    root.mkdir()
    (workspace / "build" / "scratch").mkdir(parents=True)
    (root / "tmp").symlink_to("../build/scratch")
    script = (f"mv build build.old; mkdir -p build/scratch/evil/objects build/scratch/evil/refs; "
              f"echo 'ref: refs/heads/main' > build/scratch/evil/HEAD; "
              f"printf '[core]\\n\\tbare = false\\n\\tfsmonitor = touch {markers}/linked\\n' > build/scratch/evil/config; "
              f"printf -- {json.dumps(ANSWER)}")
    result = step_in_root_at_top(uwf, workspace, script)
    assert result.code == 1 and "build/scratch/evil (a bare repository" in result.err, result
    git(workspace / "build" / "scratch" / "evil", "status", check=False)
    assert not list(markers.iterdir())


def test_a_tree_too_deep_for_recursion_in_the_private_git_copy_still_gets_the_check(uwf, root_dir, tmp_path, markers):
    """Found by an adversary's trial: removing the copy recursed past Python's limit, the step
    ended in a traceback and the repository it made beside it was never looked for."""
    workspace = repository(tmp_path / "ws")
    script = (f"(cd .git && for i in $(seq 1 2100); do mkdir d && cd d; done); "  # past recursion, and past PATH_MAX
              f"git init -q sub && git -C sub config core.fsmonitor 'touch {markers}/sub'")
    result, thread = step(uwf, root_dir, workspace, script)
    assert "Traceback" not in result.err, result.err
    assert result.code == 1 and "sub/.git, renamed sub/.git.refused-by-uwf" in result.err, result
    assert not list((root_dir / "tmp").glob("private-*"))  # the copy is gone all the same
    git(workspace / "sub", "status", check=False)
    assert not list(markers.iterdir())


def test_without_bubblewrap_a_repository_made_in_the_roots_scratch_is_refused(uwf, tmp_path, markers):
    """Nothing hides scratch from an agent run without bubblewrap: it is walked like the rest."""
    workspace = repository(tmp_path / "ws")
    root = workspace / ".uwf"
    script = ("mkdir -p .uwf/tmp/evil/objects .uwf/tmp/evil/refs; echo 'ref: refs/heads/main' > .uwf/tmp/evil/HEAD; "
              f"printf '[core]\\n\\tbare = false\\n\\tfsmonitor = touch {markers}/scratch\\n' > .uwf/tmp/evil/config; "
              f"printf -- {json.dumps(ANSWER)}")
    result = step_in_root_at_top(uwf, workspace, script, env={"UWF_BWRAP": ""})
    assert result.code == 1 and ".uwf/tmp/evil (a bare repository" in result.err, result
    git(root / "tmp" / "evil", "status", check=False)
    assert not list(markers.iterdir())


def test_every_repository_the_run_made_is_renamed_though_one_cannot_be(tmp_path, monkeypatch):
    """An adversary's trial (as a user, not root): one repository in a directory the run made
    read-only stopped the renaming of the others, which stayed live."""
    from uwf_core.engine.contain.git import audit
    from uwf_core.engine.contain.git.walk import Found, walk

    for name in ("a", "b", "zz", "c"):
        (tmp_path / name / ".git").mkdir(parents=True)
    rename = audit._rename_aside

    def refusing(path: str) -> str:
        if "/zz/" in path:
            raise PermissionError(13, "Permission denied")
        return rename(path)

    monkeypatch.setattr(audit, "_rename_aside", refusing)
    items = [Found(str(tmp_path / name / ".git"), "dotgit", (name,)) for name in ("a", "b", "zz", "c")]
    with pytest.raises(OSError, match=r"zz/\.git: Permission denied \(every other one renamed: a/\.git"):
        audit._refuse(walk(str(tmp_path), None), items)
    assert sorted(path.parent.name for path in tmp_path.glob("*/.git.refused-by-uwf")) == ["a", "b", "c"]
    assert (tmp_path / "zz" / ".git").is_dir()


def test_a_walk_kept_between_runs_forgets_another_runs_staging_directory(tmp_path):
    """An adversary's trial: a run beside a step agent's listed that agent's staging directory from
    the kept walk and was refused for what the step agent made there."""
    from uwf_core.engine.contain.git.walk import load, refresh, save, walk

    workspace = tmp_path / "ws"
    scratch, stage = workspace / ".uwf" / "tmp", workspace / ".uwf" / "tmp" / "stage-a"
    stage.mkdir(parents=True)
    cache = str(tmp_path / "walk.json")
    first = walk(str(workspace), None, (str(scratch),), (str(stage),))
    save(first, cache, pending=False)
    for part in ("objects", "refs"):
        (stage / "evil" / part).mkdir(parents=True)
    (stage / "evil" / "HEAD").write_text("ref: refs/heads/main\n")
    other = load(cache, str(workspace), None, (str(scratch),))
    assert other is not None and not [path for path in other.dirs if path.startswith(str(scratch))]
    assert refresh(other) == []  # not this run's to find
    mine = load(cache, str(workspace), None, (str(scratch),), (str(stage),))
    assert [item.path for item in refresh(mine)] == [str(stage / "evil")]


def test_runs_sharing_a_workspace_without_git_share_its_placeholder(uwf, root_dir, tmp_path):
    """Threads without a workspace of their own step where they are stepped from, a worker's lanes
    in one directory at once: each run's private .git is mounted on one empty `.git` there, made
    by the first and removed by the last, so none loses its repository mid-run."""
    shared = tmp_path / "shared"
    shared.mkdir()
    script = "git init -q && sleep 1.5 && git status --porcelain >/dev/null && echo ran >> runs.txt; printf -- " + json.dumps(ANSWER)
    (root_dir / "config.yaml").write_text(
        f"agents:\n  hostile:\n    command: sh\n    args: [-c, {json.dumps(script)}]\n    protocol: text\n")
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    threads = [uwf("thread", "start", "analyze-topic", "-p", f"work {n}", "--no-snapshot").json()["thread"] for n in range(3)]
    env = {**os.environ, **GIT_ENV, "UWF_STORAGE_ROOT": str(root_dir)}
    from conftest import _uwf_command

    steps = [subprocess.Popen([*_uwf_command(), "thread", "step", thread, "--agent", "hostile"], cwd=shared, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for thread in threads]
    for started in steps:
        out, err = started.communicate(timeout=120)
        assert started.returncode == 0, err
    assert (shared / "runs.txt").read_text() == "ran\n" * 3
    assert not (shared / ".git").exists()  # the last one out removed it
