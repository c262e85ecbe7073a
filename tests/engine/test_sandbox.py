"""Agents are untrusted (design §16): whatever an agent starts ends with its step — after it
answers, after --timeout, after `uwf thread kill`, after uwf itself is SIGKILLed — and it writes
only its workspace: not beside it, not /tmp, not the root; it never reads the root's .env.

Each test runs the real `uwf` twice: in bubblewrap's sandbox (skipped where bubblewrap cannot
start; `.ci/run` installs it) and in the fallback containment (UWF_BWRAP set empty), a process
group under uwf as child subreaper. The fallback keeps processes in check, not files.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from conftest import EXAMPLES, _uwf_command, processes_with
from uwf_core.engine.sandbox import BUBBLEWRAP, containment

ANSWER = "---\nthesis: t\nkeyPoints: [a]\n---\nbody\n"
BWRAP = pytest.param({}, id="bubblewrap")
FALLBACK = pytest.param({"UWF_BWRAP": ""}, id="fallback")


def _needs(mode: dict) -> None:
    if "UWF_BWRAP" not in mode and containment().kind != BUBBLEWRAP:
        pytest.skip(f"bubblewrap cannot start here: {containment().reason}")


def _agent(root_dir: Path, name: str, script: str, extra: str = "", protocol: str = "text", args: tuple = ()) -> None:
    """A shell agent in config.yaml (its script inline, so no file outside the workspace is needed)."""
    config = root_dir / "config.yaml"
    text = config.read_text() if config.exists() else "agents:\n"
    listed = ", ".join(json.dumps(arg) for arg in ("-c", script, *args))
    config.write_text(text + f"  {name}:\n    command: sh\n    args: [{listed}]\n    protocol: {protocol}\n{extra}")


def _thread(uwf, workspace: Path) -> str:
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    return uwf("thread", "start", "analyze-topic", "-p", "topic", "-w", str(workspace)).json()["thread"]


def _step_in_background(root_dir: Path, thread: str, agent: str, mode: dict) -> subprocess.Popen:
    env = {**os.environ, "UWF_STORAGE_ROOT": str(root_dir), **mode}
    argv = [*_uwf_command(), "thread", "step", thread, "--agent", agent]
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _gone_within(marker: str, seconds: float = 3.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = processes_with(marker)
        if not left:
            return []
        time.sleep(0.1)
    return processes_with(marker)


def _leaver(marker: str, workspace: Path, then: str) -> str:
    """Starts a process in a session of its own that would touch `late-<thread>` 2.5 s on, then `then`."""
    return f"setsid sh -c 'sleep 2.5; touch {workspace}/late-$UWF_THREAD # {marker}' >/dev/null 2>&1 & sleep 0.5; {then}"


@pytest.mark.parametrize("mode", [BWRAP, FALLBACK])
def test_what_an_agent_starts_ends_with_its_step_however_it_ends(mode, uwf, root_dir, tmp_path):
    _needs(mode)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = f"uwf-sandbox-{uuid.uuid4().hex[:8]}"
    answers = _leaver(marker, workspace, f"printf -- {json.dumps(ANSWER)}")
    hangs = _leaver(marker, workspace, "sleep 60")
    _agent(root_dir, "answers", answers)
    _agent(root_dir, "hangs", hangs)
    thread = _thread(uwf, workspace)
    stages = {thread: "answered"}

    done = uwf("thread", "step", thread, "--agent", "answers", env=mode)  # 1. it answered
    assert done.code == 0, done
    assert _gone_within(marker) == []

    other = uwf("thread", "start", "analyze-topic", "-p", "again", "-w", str(workspace)).json()["thread"]
    stages[other] = "timeout"
    timed = uwf("thread", "step", other, "--agent", "hangs", "--timeout", "2", env=mode)  # 2. --timeout
    assert timed.code == 1 and "timed out" in timed.err, timed
    assert _gone_within(marker) == []

    for how in ("kill", "sigkill"):  # 3. `uwf thread kill` from another process; 4. uwf SIGKILLed
        victim = uwf("thread", "start", "analyze-topic", "-p", how, "-w", str(workspace)).json()["thread"]
        stages[victim] = how
        step = _step_in_background(root_dir, victim, "hangs", mode)
        deadline = time.monotonic() + 20
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_with(marker), "the agent never started its process"
        time.sleep(1.5)  # the fallback looks at an agent's processes five times a second (a loaded machine: fewer)
        if how == "kill":
            assert uwf("thread", "kill", victim).code == 0
        else:
            step.send_signal(signal.SIGKILL)
        step.wait(timeout=30)
        assert _gone_within(marker) == [], how
    time.sleep(3)  # past the moment each left-behind process would have touched its file
    assert [stages[path.name.removeprefix("late-")] for path in workspace.glob("late-*")] == []


@pytest.mark.parametrize("mode", [BWRAP, FALLBACK])
def test_a_sigkilled_uwf_leaves_no_prompt_file(mode, uwf, root_dir, tmp_path):
    """In a sandbox the prompt file lives only in its private /tmp; otherwise the watchdog removes it."""
    _needs(mode)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = f"uwf-prompt-{uuid.uuid4().hex[:8]}"
    _agent(root_dir, "reads", f"cat \"$0\" > {workspace}/seen; sleep 60 # {marker}", args=("{prompt_file}",))
    thread = _thread(uwf, workspace)
    step = _step_in_background(root_dir, thread, "reads", mode)
    deadline = time.monotonic() + 20
    while not (workspace / "seen").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "## Task" in (workspace / "seen").read_text()
    step.send_signal(signal.SIGKILL)
    step.wait(timeout=30)
    assert _gone_within(marker) == []
    deadline = time.monotonic() + 3
    while list(root_dir.glob("tmp/*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(root_dir.glob("tmp/*")) == []


def test_an_agent_writes_only_its_workspace_and_never_reads_the_env_file(uwf, root_dir, tmp_path):
    _needs({})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (root_dir / ".env").write_text("DEPLOY_TOKEN=tok-never-readable-0123456789\n")
    tries = (
        f"touch {workspace}/../outside; touch /tmp/uwf-sandbox-x; touch {root_dir}/planted; "
        f"cat {root_dir}/.env > {workspace}/env-text 2>&1; ls -a {root_dir} > {workspace}/root-list 2>&1; "
        f"touch {workspace}/inside; printf -- {json.dumps(ANSWER)}"
    )
    _agent(root_dir, "text-agent", tries)
    _agent(root_dir, "step-agent", tries.replace(f"printf -- {json.dumps(ANSWER)}", "exit 3"), protocol="step")
    thread = _thread(uwf, workspace)
    assert uwf("thread", "step", thread, "--agent", "text-agent").code == 0
    assert (workspace / "inside").exists()
    assert not (tmp_path / "outside").exists() and not Path("/tmp/uwf-sandbox-x").exists()
    assert not (root_dir / "planted").exists()
    assert "tok-never-readable" not in (workspace / "env-text").read_text()
    assert "threads.yaml" not in (workspace / "root-list").read_text()  # a text agent does not see the root
    other = uwf("thread", "start", "analyze-topic", "-p", "step", "-w", str(workspace)).json()["thread"]
    assert uwf("thread", "step", other, "--agent", "step-agent").code == 1
    assert "threads.yaml" in (workspace / "root-list").read_text()  # a step agent writes its nodes there...
    assert "tok-never-readable" not in (workspace / "env-text").read_text()  # ...but never sees .env
    assert (root_dir / "planted").exists()


def test_an_entry_widens_or_narrows_its_sandbox(uwf, root_dir, tmp_path):
    _needs({})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    state = tmp_path / "cli-state"
    (workspace / ".tool.conf").write_text("run: something-the-workspace-wants\n")
    server = socket.create_server(("127.0.0.1", 0))  # a service on this host's loopback
    port = server.getsockname()[1]
    reach = f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2); print(\"reached\")'"
    script = f"touch {state}/written; cat .tool.conf > seen-conf; {reach} > net-$UWF_AGENT.txt 2>&1; printf -- {json.dumps(ANSWER)}"
    _agent(root_dir, "wide", script, f"    writable: [\"{state}/\"]\n    hide: [.tool.conf]\n    network: false\n")
    _agent(root_dir, "online", f"{reach} > net-$UWF_AGENT.txt 2>&1; printf -- {json.dumps(ANSWER)}")
    thread = _thread(uwf, workspace)
    with server:
        assert uwf("thread", "step", thread, "--agent", "wide").code == 0
        other = uwf("thread", "start", "analyze-topic", "-p", "online", "-w", str(workspace)).json()["thread"]
        assert uwf("thread", "step", other, "--agent", "online").code == 0
    assert (state / "written").exists()  # made (a trailing / names a directory) and writable
    assert (workspace / "seen-conf").read_text() == ""  # hidden: shown as an empty file
    assert (workspace / ".tool.conf").read_text().startswith("run:")  # and left as it was
    assert "Connection refused" in (workspace / "net-wide.txt").read_text()  # its own loopback, nothing on it
    assert (workspace / "net-online.txt").read_text().strip() == "reached"
    listed = {entry["name"]: entry for entry in uwf("agent", "list").json()}
    assert listed["wide"]["containment"] == "bubblewrap" and listed["wide"]["network"] is False


def test_without_a_sandbox_uwf_says_so_once_and_agent_list_shows_it(uwf, root_dir, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    _agent(root_dir, "plain", f"printf -- {json.dumps(ANSWER)}")
    _agent(root_dir, "open", "printf -- '---\\nanswer: pong\\n---\\n'", "    sandbox: false\n")
    thread = _thread(uwf, workspace)
    result = uwf("thread", "run", thread, "--agent", "plain", env={"UWF_BWRAP": ""})
    assert result.code == 0, result
    warnings = [line for line in result.err.splitlines() if "without a sandbox" in line]
    assert len(warnings) == 1 and "UWF_BWRAP is empty" in warnings[0]
    listed = {entry["name"]: entry for entry in uwf("agent", "list", env={"UWF_BWRAP": ""}).json()}
    assert listed["plain"]["containment"] == "process-group"
    listed = {entry["name"]: entry for entry in uwf("agent", "list").json()}
    assert listed["open"]["containment"] == "process-group" and listed["open"]["sandbox"] is False
    tested = uwf("agent", "test", "open")
    assert tested.code == 0 and "runs without a sandbox (sandbox: false)" in tested.err
    assert tested.json()["containment"] == "process-group"
    if containment().kind == BUBBLEWRAP:
        assert uwf("agent", "test", "plain").json()["containment"] == "bubblewrap"


# -- the policy and the command line, as data -------------------------------------------------------


def test_mounts_go_shallowest_first_so_a_workspace_inside_a_hidden_root_stays_visible():
    from uwf_core.engine.sandbox import Policy, bwrap_argv

    policy = Policy(cwd="/r/ws/sub", writable=("/r/ws", "/home/u/.cli"), readable=("/tmp/t/agent",),
                    hidden_dirs=("/r",), hidden_files=("/r/ws/.env",), network=False)
    argv = bwrap_argv("/usr/bin/bwrap", policy, ["agent", "--x"], prompt_fd=7, empty_fds=(9,))
    joined = " ".join(argv)
    assert joined.index("--tmpfs /r ") < joined.index("--bind-try /r/ws /r/ws") < joined.index("--ro-bind-data 9 /r/ws/.env")
    assert joined.index("--tmpfs /tmp") < joined.index("--ro-bind-try /tmp/t/agent")
    assert "--unshare-net" in argv and "--unshare-pid" in argv and "--die-with-parent" in argv
    assert argv[argv.index("--file") + 1 : argv.index("--file") + 3] == ["7", "/tmp/uwf-prompt.md"]
    assert argv[argv.index("--chdir") + 1] == "/r/ws/sub" and argv[-3:] == ["--", "agent", "--x"]


def test_configured_paths_expand_home_variables_and_defaults():
    from uwf_core.engine.sandbox import expand

    env = {"HOME": "/home/u", "CODEX_HOME": "/opt/codex"}
    assert expand("${CODEX_HOME:-~/.codex}/", env) == "/opt/codex"
    assert expand("${CODEX_HOME:-~/.codex}/", {"HOME": "/home/u"}) == "/home/u/.codex"
    assert expand("~/.claude.json", env) == "/home/u/.claude.json"
    assert expand("$MISSING/x", env) is None and expand("relative/path", env) is None


def test_a_text_agent_is_shown_neither_the_store_nor_env_files_and_a_step_agent_writes_the_store(tmp_path):
    from uwf_core.engine.sandbox import agent_policy

    root, workspace, scripts = tmp_path / "root", tmp_path / "ws", tmp_path / "scripts"
    for path in (root, workspace, scripts):
        path.mkdir()
    (root / ".env").write_text("K=v\n")
    (workspace / ".aider.conf.yml").write_text("x: 1\n")
    script = scripts / "agent.sh"
    script.write_text("#!/bin/sh\n")
    common = dict(cwd=str(workspace), workspace=str(workspace), store_dirs=(str(root),), socket_dirs=("/run/pg",),
                  env_files=(str(root / ".env"), "/nonexistent/.env"), argv=(str(script), "--data", str(tmp_path / "data")),
                  env={"HOME": "/home/u", "PATH": "/usr/bin"}, hide=(".aider.conf.yml", "absent.yml"))
    text = agent_policy(sees_store=False, **common)
    assert str(root) in text.hidden_dirs and str(root) not in text.writable
    assert text.hidden_files == (str(workspace / ".aider.conf.yml"),)  # the .env is in the hidden root already
    assert str(scripts) in text.readable and "/run/pg" not in text.readable
    step = agent_policy(sees_store=True, **common)
    assert step.writable == (str(workspace), str(root)) and step.hidden_dirs == ()
    assert str(root / ".env") in step.hidden_files and "/run/pg" in step.readable
