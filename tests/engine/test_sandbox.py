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
from uwf_core.engine.contain.sandbox import BUBBLEWRAP, containment

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


def _step_in_background(root_dir: Path, thread: str, agent: str, mode: dict, stderr=subprocess.DEVNULL) -> subprocess.Popen:
    env = {**os.environ, "UWF_STORAGE_ROOT": str(root_dir), **mode}
    argv = [*_uwf_command(), "thread", "step", thread, "--agent", agent]
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True)


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
    seen = workspace / "seen"
    while not (seen.exists() and "## Task" in seen.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "## Task" in seen.read_text()
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
    step_tries = tries.replace(f"printf -- {json.dumps(ANSWER)}", f"echo 'sandbox: false' >> {root_dir}/config.yaml; exit 3")
    _agent(root_dir, "step-agent", step_tries, protocol="step")
    thread = _thread(uwf, workspace)
    assert uwf("thread", "step", thread, "--agent", "text-agent").code == 0
    assert (workspace / "inside").exists()
    assert not (tmp_path / "outside").exists() and not Path("/tmp/uwf-sandbox-x").exists()
    assert not (root_dir / "planted").exists()
    assert "tok-never-readable" not in (workspace / "env-text").read_text()
    assert "threads.yaml" not in (workspace / "root-list").read_text()  # a text agent does not see the root
    other = uwf("thread", "start", "analyze-topic", "-p", "step", "-w", str(workspace)).json()["thread"]
    config = (root_dir / "config.yaml").read_text()
    assert uwf("thread", "step", other, "--agent", "step-agent").code == 1
    assert "threads.yaml" in (workspace / "root-list").read_text()  # a step agent sees the root...
    assert "tok-never-readable" not in (workspace / "env-text").read_text()  # ...but never .env,
    assert not (root_dir / "planted").exists()  # and writes only where nodes go
    assert (root_dir / "config.yaml").read_text() == config


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
    _agent(root_dir, "open-topic", f"printf -- {json.dumps(ANSWER)}", "    sandbox: false\n")
    other = uwf("thread", "start", "analyze-topic", "-p", "open", "-w", str(workspace)).json()["thread"]
    stepped = uwf("thread", "step", other, "--agent", "open-topic")
    assert stepped.code == 0 and "agent 'open-topic' runs without a sandbox (sandbox: false in its entry)" in stepped.err
    tested = uwf("agent", "test", "open")
    assert tested.code == 0 and "runs without a sandbox (sandbox: false)" in tested.err
    assert tested.json()["containment"] == "process-group"
    if containment().kind == BUBBLEWRAP:
        assert uwf("agent", "test", "plain").json()["containment"] == "bubblewrap"


# -- the policy and the command line, as data -------------------------------------------------------


def test_mounts_go_shallowest_first_so_a_workspace_inside_a_hidden_root_stays_visible():
    from uwf_core.engine.contain.sandbox import Policy, bwrap_argv

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
    from uwf_core.engine.contain.policy import expand

    env = {"HOME": "/home/u", "CODEX_HOME": "/opt/codex"}
    assert expand("${CODEX_HOME:-~/.codex}/", env) == "/opt/codex"
    assert expand("${CODEX_HOME:-~/.codex}/", {"HOME": "/home/u"}) == "/home/u/.codex"
    assert expand("~/.claude.json", env) == "/home/u/.claude.json"
    assert expand("$MISSING/x", env) is None and expand("relative/path", env) is None


def test_a_text_agent_is_shown_neither_the_store_nor_env_files_and_a_step_agent_writes_the_store(tmp_path):
    from uwf_core.engine.contain.policy import agent_policy

    root, workspace, scripts = tmp_path / "root", tmp_path / "ws", tmp_path / "scripts"
    for path in (root, workspace, scripts):
        path.mkdir()
    (root / ".env").write_text("K=v\n")
    (workspace / ".aider.conf.yml").write_text("x: 1\n")
    script = scripts / "agent.sh"
    script.write_text("#!/bin/sh\n")
    common = dict(cwd=str(workspace), workspace=str(workspace), store=((str(root),), (str(root / "cas"),), ("/run/pg",)),
                  env_files=(str(root / ".env"), "/nonexistent/.env"), argv=(str(script), "--data", str(tmp_path / "data")),
                  env={"HOME": "/home/u", "PATH": "/usr/bin"}, hide=(".aider.conf.yml", "absent.yml"))
    text = agent_policy(sees_store=False, **common)
    assert str(root) in text.hidden_dirs and str(root) not in text.writable
    assert str(workspace / ".aider.conf.yml") in text.hidden_files and "/etc/shadow" in text.hidden_files
    assert str(root / ".env") not in text.hidden_files  # in the hidden root already
    assert str(scripts) in text.readable and "/run/pg" not in text.readable
    step = agent_policy(sees_store=True, **common)
    assert step.writable == (str(workspace), str(root / "cas")) and str(root) not in step.hidden_dirs  # its nodes, nothing else
    assert str(root) in step.readable and str(root / ".env") in step.hidden_files and "/run/pg" in step.readable
    assert agent_policy(sees_store=True, runs_steps=True, **common).writable == (str(workspace), str(root))  # uwf-subflow


def test_paths_through_symlinks_are_contained_as_the_places_they_lead_to(tmp_path):
    """A root, a workspace or a CLI's state directory reached through a symlink (/home ->
    /var/home, a dotfile manager): bubblewrap cannot mount through one, so uwf resolves them."""
    _needs({})
    real, links = tmp_path / "real", tmp_path / "links"
    (real / "ws").mkdir(parents=True)
    (real / "state").mkdir()
    (real / "root").mkdir()
    links.mkdir()
    for name in ("ws", "state"):
        (links / name).symlink_to(real / name)
    (links / "root").symlink_to(real / "root", target_is_directory=True)
    env = {**os.environ, "UWF_STORAGE_ROOT": str(links / "root")}

    def uwf(*args):
        return subprocess.run([*_uwf_command(), *args], env=env, capture_output=True, text=True, timeout=60)

    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).returncode == 0
    # The sandbox mounts the places the links lead to (links kept in the private /tmp are not there).
    _agent(real / "root", "linked", f"touch {real}/state/seen inside; printf -- {json.dumps(ANSWER)}",
           f"    writable: [\"{links}/state\"]\n")
    thread = json.loads(uwf("thread", "start", "analyze-topic", "-p", "t", "-w", str(links / "ws")).stdout)["thread"]
    stepped = uwf("thread", "step", thread, "--agent", "linked")
    assert stepped.returncode == 0, stepped.stderr
    assert (real / "state" / "seen").exists() and (real / "ws" / "inside").exists()
    again = json.loads(uwf("thread", "start", "analyze-topic", "-p", "t2", "-w", str(links / "ws")).stdout)["thread"]
    scripted = uwf("thread", "step", again, "--agent", f"uwf-script --script {EXAMPLES / 'analyze-topic.script.yaml'}")
    assert scripted.returncode == 0, scripted.stderr  # a step agent writes its nodes through the linked root
    inside = uwf("thread", "start", "analyze-topic", "-p", "t", "-w", str(real / "root" / "cas"))
    assert inside.returncode == 1 and "cannot be an agent's workspace" in inside.stderr


def test_a_workspace_of_the_whole_system_or_home_is_refused_in_one_line(uwf, root_dir, tmp_path):
    """The agent may write all of its workspace: `/`, the home directory, or a thread without a
    workspace stepped from home would hand it everything."""
    home = Path(os.environ["HOME"])
    _agent(root_dir, "any", f"touch escaped; printf -- {json.dumps(ANSWER)}")
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    for where in ("/", str(home)):  # refused when the thread starts (before anything is snapshot)
        refused = uwf("thread", "start", "analyze-topic", "-p", "t", "-w", where)
        assert refused.code == 1 and "cannot be an agent's workspace" in refused.err and "Traceback" not in refused.err
    homeless = uwf("thread", "start", "analyze-topic", "-p", "t").json()["thread"]
    refused = uwf("thread", "step", homeless, "--agent", "any", cwd=str(home))
    assert refused.code == 1 and f"{home} cannot be an agent's workspace" in refused.err
    assert not (home / "escaped").exists() and not Path("/escaped").exists()


def test_other_tools_keys_sockets_and_the_session_stay_out_of_reach(uwf, root_dir, tmp_path, monkeypatch):
    _needs({})
    home = Path(os.environ["HOME"])
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-MATERIAL\n")
    (home / ".netrc").write_text("machine example.com password NETRC-SECRET\n")
    sock_dir = tmp_path / "agent-sock"
    sock_dir.mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_dir / "agent.sock"))
    server.listen(1)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    probe = (
        "cat ~/.ssh/id_ed25519 ~/.netrc > found.txt 2>&1; echo \"sock=$SSH_AUTH_SOCK\" >> found.txt; "
        f"python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"{sock_dir}/agent.sock\")' 2>> found.txt; "
        f"ls /run > run.txt 2>&1; printf -- {json.dumps(ANSWER)}"
    )
    _agent(root_dir, "nosy", probe)
    thread = _thread(uwf, workspace)
    with server:
        assert uwf("thread", "step", thread, "--agent", "nosy", env={"SSH_AUTH_SOCK": str(sock_dir / "agent.sock")}).code == 0
    found = (workspace / "found.txt").read_text()
    assert "PRIVATE-KEY-MATERIAL" not in found and "NETRC-SECRET" not in found
    assert "sock=\n" in found and "No such file or directory" in found  # not handed, and not there
    assert (workspace / "run.txt").read_text().split() in ([], ["systemd"])  # /run is the sandbox's own (name resolution aside)


def test_a_link_that_leads_around_a_hidden_root_shows_it_hidden(uwf, tmp_path):
    """The agent's script is reached through a link to a project that holds the root: the
    project is shown as the place the link leads to, with the root hidden in it."""
    _needs({})
    project = tmp_path / "project"
    (project / "root").mkdir(parents=True)
    (project / "root" / ".env").write_text("DEPLOY_TOKEN=tok-behind-a-link-0123456789\n")
    (tmp_path / "link").symlink_to(project)
    script = project / "agent.sh"
    script.write_text(f"#!/bin/sh\ncat {tmp_path}/link/root/.env {project}/root/.env > seen.txt 2>&1\nprintf -- {json.dumps(ANSWER)!s}\n")
    script.chmod(0o755)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {**os.environ, "UWF_STORAGE_ROOT": str(project / "root")}
    run = lambda *args: subprocess.run([*_uwf_command(), *args], env=env, capture_output=True, text=True, timeout=60)  # noqa: E731
    assert run("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).returncode == 0
    thread = json.loads(run("thread", "start", "analyze-topic", "-p", "t", "-w", str(workspace)).stdout)["thread"]
    stepped = run("thread", "step", thread, "--agent", str(tmp_path / "link" / "agent.sh"))
    assert "tok-behind-a-link" not in (workspace / "seen.txt").read_text(), stepped.stderr


NEIGHBOURS = """
import os, sys, threading, time
from uwf_core.engine.contain.process import run_process
from uwf_core.engine.contain.sandbox import Policy

here, marker = sys.argv[1], sys.argv[2]
open_policy = Policy(cwd=here, writable=(here,), sandbox=False)
boxed_policy = Policy(cwd=here, writable=(here,))
results = {}

def long_agent(name, policy):
    results[name] = run_process(["sh", "-c", f"sh -c 'sleep 30 # {marker}-{name}' & sleep 3; echo done"],
                                cwd=here, env=dict(os.environ), policy=policy)

lanes = [threading.Thread(target=long_agent, args=(name, policy)) for name, policy in (("boxed", boxed_policy), ("helper", open_policy))]
for lane in lanes:
    lane.start()
time.sleep(1)
quick = run_process(["sh", "-c", "true"], cwd=here, env=dict(os.environ), policy=open_policy)  # ends meanwhile
print("quick", quick.exit_code, flush=True)
time.sleep(0.3)
print("helper alive" if any(f"{marker}-helper" in open(f"/proc/{p}/cmdline").read() for p in os.listdir("/proc")
      if p.isdigit() and os.path.exists(f"/proc/{p}/cmdline")) else "helper gone", flush=True)
for lane in lanes:
    lane.join(timeout=30)
print("boxed", results["boxed"].exit_code, results["boxed"].stdout.strip(), "helper", results["helper"].exit_code, flush=True)
"""


CLOSES_ITS_OUTPUT = """
import os, sys, threading, time
from uwf_core.api import Cancel
from uwf_core.engine.contain.process import run_process
from uwf_core.engine.contain.sandbox import Policy

here, boxed = sys.argv[1], sys.argv[2] == "boxed"
policy = Policy(cwd=here, writable=(here,), sandbox=boxed)
argv = ["sh", "-c", "exec >/dev/null 2>&1; sleep 30"]
began = time.monotonic()
timed = run_process(argv, cwd=here, env=dict(os.environ), policy=policy, timeout=1.5)
print("timeout", timed.timed_out, round(time.monotonic() - began) < 10, flush=True)
cancel = Cancel()
threading.Timer(1.0, cancel.set).start()
began = time.monotonic()
stopped = run_process(argv, cwd=here, env=dict(os.environ), policy=policy, cancel=cancel)
print("cancel", stopped.cancelled, round(time.monotonic() - began) < 10, flush=True)
"""


@pytest.mark.parametrize("contained", ["boxed", "fallback"])
def test_an_agent_that_closes_its_output_is_still_held_to_its_timeout_and_cancel(tmp_path, contained):
    """`exec >/dev/null 2>&1; sleep 30`: both pipes close while the agent runs on; the deadline and
    a cancel still stop it (uwf-builtin's run_command is this call too)."""
    import sys

    if contained == "boxed":
        _needs({})
    done = subprocess.run([sys.executable, "-c", CLOSES_ITS_OUTPUT, str(tmp_path), contained], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["timeout True True", "cancel True True"], done.stderr


def test_one_agents_end_never_kills_another_agents_processes(tmp_path):
    """A TUI or worker runs agents side by side (here: one process, three agents): a fallback-
    contained agent that ends cleans up only what it started, not a sandboxed agent beside it nor
    the other fallback agent's helper. (In its own process: a subreaper adopts every orphan.)"""
    import sys

    marker = f"uwf-neighbour-{uuid.uuid4().hex[:8]}"
    done = subprocess.run([sys.executable, "-c", NEIGHBOURS, str(tmp_path), marker], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["quick 0", "helper alive", "boxed 0 done helper 0"], done.stderr
    assert _gone_within(marker) == []  # each agent's own helper ended with it


def test_a_step_agent_only_adds_nodes_even_in_a_workspace_that_holds_the_root(tmp_path):
    """A project-local root (the workspace holds it): the step agent still cannot touch
    config.yaml, threads.yaml or the node file (it does not see it: its reads come through uwf,
    its writes are staged and checked), nor plant a link that a later `cas gc` would follow."""
    _needs({})
    project = tmp_path / "project"
    root = project / ".uwf"
    root.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine\n")
    env = {**os.environ, "UWF_STORAGE_ROOT": str(root)}
    run = lambda *args: subprocess.run([*_uwf_command(), *args], env=env, capture_output=True, text=True, timeout=60)  # noqa: E731
    assert run("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).returncode == 0
    evil = (f"echo 'sandbox: false' >> {root}/config.yaml; echo x >> {root}/threads.yaml; "
            f"ln -s {victim} {root}/cas/_index; rm -f {root}/cas/nodes.sqlite; "
            f"python3 -c \"import sqlite3; sqlite3.connect('{root}/cas/nodes.sqlite').execute('delete from derived')\"; exit 1")
    _agent(root, "evil", evil, protocol="step")
    config = (root / "config.yaml").read_text()
    thread = json.loads(run("thread", "start", "analyze-topic", "-p", "t", "-w", str(project)).stdout)["thread"]
    tried = run("thread", "step", thread, "--agent", "evil")
    assert tried.returncode == 1 and "Read-only file system" in tried.stderr
    assert "no such table: derived" in tried.stderr  # the node file is not there for it: it reads through uwf
    assert (root / "config.yaml").read_text() == config and "x" not in (root / "threads.yaml").read_text()
    assert (root / "cas" / "nodes.sqlite").exists() and not (root / "cas" / "_index").exists()
    assert run("cas", "gc", "--grace", "0").returncode == 0 and (victim / "keep.txt").exists()
    scripted = run("thread", "step", thread, "--agent", f"uwf-script --script {EXAMPLES / 'analyze-topic.script.yaml'}")
    assert scripted.returncode == 0, scripted.stderr  # its nodes taken in from its staging file
    assert run("cas", "fsck").returncode == 0 and list(root.glob("tmp/stage-*")) == []


def test_a_cli_installed_under_tmp_runs_from_its_whole_install(uwf, root_dir, tmp_path):
    """A venv (its bin/ holds only the script: the code is in lib/) and an npm prefix (bin/ links
    into lib/node_modules, whose package loads its platform binary from a sibling package) under
    /tmp, which the sandbox otherwise keeps private: both start, and nothing else of /tmp shows."""
    _needs({})
    import shutil
    import sys
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="uwf-installs-", dir="/tmp"))
    try:
        venv = base / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        site = next((venv / "lib").glob("python3*/site-packages"))
        (site / "llmish.py").write_text(f"def main():\n    print({ANSWER!r})\n")
        (venv / "bin" / "llmish").write_text(f"#!{venv}/bin/python\nimport llmish\nllmish.main()\n")
        (venv / "bin" / "llmish").chmod(0o755)
        prefix = base / "npm"
        package = prefix / "lib" / "node_modules" / "@acme" / "cli"
        platform = prefix / "lib" / "node_modules" / "@acme" / "cli-linux-x64"
        (package / "bin").mkdir(parents=True)
        platform.mkdir(parents=True)
        (platform / "answer.md").write_text(ANSWER)
        (package / "bin" / "cli.sh").write_text('#!/bin/sh\nhere=$(dirname "$(readlink -f "$0")")\ncat "$here/../../cli-linux-x64/answer.md"\n')
        (package / "bin" / "cli.sh").chmod(0o755)
        (prefix / "bin").mkdir()
        (prefix / "bin" / "acme").symlink_to("../lib/node_modules/@acme/cli/bin/cli.sh")
        (base / "unrelated.txt").write_text("not the agent's\n")
        workspace = tmp_path / "ws"
        workspace.mkdir()
        (root_dir / "config.yaml").write_text(
            f"agents:\n  venv-cli:\n    command: {venv}/bin/llmish\n    protocol: text\n"
            f"  npm-cli:\n    command: {prefix}/bin/acme\n    protocol: text\n"
            f"  peeks:\n    command: sh\n    args: [-c, 'cat {base}/unrelated.txt; printf -- {json.dumps(ANSWER)}']\n    protocol: text\n"
        )
        thread = _thread(uwf, workspace)
        for agent in ("venv-cli", "npm-cli"):
            other = uwf("thread", "start", "analyze-topic", "-p", agent, "-w", str(workspace)).json()["thread"]
            stepped = uwf("thread", "step", other, "--agent", agent)
            assert stepped.code == 0, f"{agent}: {stepped.err}"
        peeked = uwf("thread", "step", thread, "--agent", "peeks")
        assert peeked.code == 0 and "No such file" in peeked.err  # the rest of /tmp stays private
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_install_trees_are_the_venv_the_npm_prefix_or_the_bin_prefix():
    from uwf_core.engine.contain.policy import install_tree

    assert install_tree("/tmp/p/lib/node_modules/@openai/codex/bin") == "/tmp/p"
    assert install_tree("/tmp/proj/node_modules/.bin") == "/tmp/proj"
    assert install_tree("/tmp/tools/bin") == "/tmp/tools"
    assert install_tree("/tmp/scripts") == "/tmp/scripts"


def test_no_agent_writes_a_kernel_setting(uwf, root_dir, tmp_path):
    """Found by an adversary's trial: bubblewrap leaves /proc/sys writable when its own check of it
    fails, and an agent running as uid 0 (uwf as root, CI's user) set kernel.core_pattern, which
    the next crash anywhere on the host would run as root."""
    _needs({})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    script = ("{ cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern; } 2> core.err; "  # its own value: harmless if it got through
              f"{{ cat /proc/sys/kernel/hostname > /proc/sys/kernel/hostname; }} 2> host.err; printf -- {json.dumps(ANSWER)}")
    _agent(root_dir, "sysctl", script)
    thread = _thread(uwf, workspace)
    assert uwf("thread", "step", thread, "--agent", "sysctl").code == 0
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before
    assert "Read-only file system" in (workspace / "core.err").read_text() and "Read-only file system" in (workspace / "host.err").read_text()


ZOMBIES = """
import os, sys
from uwf_core.engine.contain.process import run_process
from uwf_core.engine.contain.sandbox import Policy

here = sys.argv[1]
run_process(["sh", "-c", "true"], cwd=here, env=dict(os.environ), policy=Policy(cwd=here, writable=(here,), sandbox=False))
boxed = Policy(cwd=here, writable=(here,))
for _ in range(12):  # killed at their timeout: the outer bubblewrap dies before the inner one
    run_process(["sh", "-c", "sleep 30"], cwd=here, env=dict(os.environ), policy=boxed, timeout=0.3)
run_process(["sh", "-c", "true"], cwd=here, env=dict(os.environ), policy=boxed)
me = str(os.getpid())
zombies = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        continue
    fields = stat[stat.rfind(")") + 2:].split()
    if fields[0] == "Z" and fields[1] == me:
        zombies.append(pid)
print(len(zombies))
"""


def test_a_worker_that_became_a_subreaper_gathers_no_zombies(tmp_path):
    """Once one agent ran without bubblewrap, uwf is a subreaper for good: every sandbox killed
    at its timeout then left its inner bubblewrap to uwf, and a worker or TUI gathered one zombie
    per such step (a thousand in one test session). They are reaped after each sandboxed run."""
    import sys

    _needs({})
    done = subprocess.run([sys.executable, "-c", ZOMBIES, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) <= 1, done.stdout  # the last run's may end a moment after it is looked for


def test_a_step_agent_sees_no_file_of_the_store_it_could_lock(uwf, root_dir, tmp_path):
    """A step agent had the node file's -shm to write and the lock files to open: taking SQLite's
    WAL-index lock bytes there failed another thread's step after 10 s ("locking protocol"). It now
    sees neither the node file nor the locks (it reads nodes through uwf), and a step beside it
    goes at its own pace while it tries."""
    import time

    _needs({})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    thread = _thread(uwf, workspace)
    other = uwf("thread", "start", "analyze-topic", "-p", "beside", "-w", str(workspace)).json()["thread"]
    grab = (
        "import fcntl, glob, os, time\n"
        f"paths = glob.glob('{root_dir}/cas/*') + glob.glob('{root_dir}/locks/*')\n"
        "held = []\n"
        "for path in paths:\n"
        "    try:\n"
        "        fd = os.open(path, os.O_RDONLY); fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 0, 0); held.append(fd)\n"
        "    except OSError:\n"
        "        pass\n"
        f"open('{workspace}/seen.txt', 'w').write(repr(sorted(os.path.basename(p) for p in paths)))\n"
        "time.sleep(4)\n"
    )
    # the script's path is named in the agent's environment: a path only a shell script's text names
    # is not one the sandbox can know to show (a checkout in /tmp is private to the agent)
    script = 'python3 -c "$GRAB"\nuwf-script --script "$SCRIPT" "$@"\n'
    env = f"    env: {{GRAB: {json.dumps(grab)}, SCRIPT: {json.dumps(str(EXAMPLES / 'analyze-topic.script.yaml'))}}}\n"
    _agent(root_dir, "grabber", script, extra=env, protocol="step", args=("grabber",))
    grabbing = _step_in_background(root_dir, thread, "grabber", {}, stderr=subprocess.PIPE)  # its error, for the assert
    time.sleep(1.5)
    began = time.monotonic()
    beside = uwf("thread", "step", other, "--agent", f"uwf-script --script {EXAMPLES / 'analyze-topic.script.yaml'}")
    assert beside.code == 0, beside.err
    assert time.monotonic() - began < 3  # not held up by the agent beside it
    _, err = grabbing.communicate(timeout=60)
    assert grabbing.returncode == 0, err  # its own reads went through uwf
    assert (workspace / "seen.txt").read_text() == "[]"
    assert uwf("cas", "fsck").json()["ok"] is True
