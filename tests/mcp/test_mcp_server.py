"""`uwf mcp` driven by the mcp SDK's own client over stdio: the real `uwf` as a subprocess on a
fresh root, as Claude Code or Codex would start it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import anyio  # noqa: E402
from jsonschema.validators import validator_for  # noqa: E402
from loop_workflow import loop_workflow  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from conftest import _uwf_command  # noqa: E402

SAYING = "cat >/dev/null; echo \"step $UWF_ROLE\" >> notes.txt; for n in 1 2 3; do echo \"working on it: $n\" >&2; done; echo '{\"$status\": \"again\", \"n\": 1}'"
SLEEP = f"sleep 60.{os.getpid()}"  # this worker's own: other test processes sleep 60 too
SLOW = f"cat >/dev/null; echo started >&2; {SLEEP}; echo '{{\"$status\": \"again\", \"n\": 1}}'"
GARBAGE = "cat >/dev/null; echo 'no JSON here'"


@pytest.fixture
def mcp_root(uwf, root_dir, tmp_path) -> tuple[Path, str]:
    """A root with the loop workflow, a talkative agent (default) and a slow one; a thread of it."""
    (root_dir / "config.yaml").write_text(
        "agents:\n"
        f"  talker: {{command: sh, args: [-c, {json.dumps(SAYING)}], protocol: text}}\n"
        f"  slow: {{command: sh, args: [-c, {json.dumps(SLOW)}], protocol: text}}\n"
        f"  garbage: {{command: sh, args: [-c, {json.dumps(GARBAGE)}], protocol: text}}\n"
        "defaultAgent: talker\n"
    )
    (tmp_path / "loop.yaml").write_text(loop_workflow(100))
    assert uwf("workflow", "put", str(tmp_path / "loop.yaml")).code == 0
    thread = uwf("thread", "start", "loop", "-p", "go").json()["thread"]
    return root_dir, thread


def server(root_dir: Path, *extra: str, cwd: Path | None = None) -> StdioServerParameters:
    """A server whose directory (where a thread without a workspace steps) is the test's, never the checkout."""
    command = _uwf_command()
    return StdioServerParameters(command=command[0], args=[*command[1:], "--root", str(root_dir), "mcp", *extra],
                                 env=dict(os.environ), cwd=str(cwd or root_dir.parent))


def call(params: StdioServerParameters, script) -> object:
    """Run `script(client)` against a fresh server process; its return value."""

    async def main():
        async with Client(params, read_timeout_seconds=60) as client:
            return await script(client)

    return anyio.run(main)


def head(uwf, thread: str) -> str:
    return uwf("thread", "show", thread).json()["head"]


def test_every_tool_has_a_valid_schema_and_says_what_it_does(mcp_root):
    root_dir, _ = mcp_root

    async def script(client):
        return (await client.list_tools()).tools

    tools = call(server(root_dir), script)
    names = {tool.name for tool in tools}
    assert {"workflow_list", "workflow_put", "thread_start", "thread_step", "thread_run", "thread_read", "thread_fork",
            "thread_kill", "thread_answer", "thread_files", "inbox", "ps"} <= names
    for tool in tools:
        validator_for(tool.input_schema).check_schema(tool.input_schema)
        assert tool.description and tool.annotations is not None, tool.name
        if tool.output_schema is not None:
            validator_for(tool.output_schema).check_schema(tool.output_schema)
    read_only = {tool.name for tool in tools if tool.annotations.read_only_hint}
    assert "thread_show" in read_only and "thread_step" not in read_only and "workflow_put" not in read_only


def test_a_step_streams_its_agents_lines_as_progress_and_lands_as_the_cli_says(uwf, mcp_root):
    root_dir, thread = mcp_root
    before = head(uwf, thread)
    progress: list[tuple[float, str | None]] = []

    async def script(client):
        async def on_progress(value, total, message):
            progress.append((value, message))

        step = await client.call_tool("thread_step", {"thread": thread}, progress_callback=on_progress)
        show = await client.call_tool("thread_show", {"thread": thread})
        read = await client.read_resource(f"uwf://thread/{thread}")
        return step, show, read

    step, show, read = call(server(root_dir, "--allow", "write"), script)
    assert not step.is_error, step.content
    assert step.structured_content["role"] == "worker" and step.structured_content["agent"] == "talker"
    assert step.structured_content["head"] != before and head(uwf, thread) == step.structured_content["head"]
    assert [message for _, message in progress] == ["working on it: 1", "working on it: 2", "working on it: 3"]
    assert [value for value, _ in progress] == [1, 2, 3]
    assert show.structured_content == uwf("thread", "show", thread).json()  # the CLI's shape, field for field
    text = read.contents[0].text
    assert "worker" in text and text == uwf("thread", "read", thread).out


def test_a_thread_started_in_a_workspace_shows_its_files_and_forks(uwf, mcp_root, tmp_path):
    """thread_start with a workspace inside the server's directory; a step's changes and a file's
    content as the step left it; a fork of that step, with an edited output."""
    root_dir, _ = mcp_root
    (tmp_path / "project").mkdir()

    async def script(client):
        started = await client.call_tool("thread_start", {"workflow": "loop", "prompt": "write notes", "workspace": "project"})
        thread = started.structured_content["thread"]
        step = (await client.call_tool("thread_step", {"thread": thread})).structured_content["head"]
        changes = await client.call_tool("thread_files", {"step": step})
        content = await client.call_tool("thread_files", {"step": step, "path": "notes.txt"})
        missing = await client.call_tool("thread_files", {"step": step, "path": "../etc/passwd"})
        fork = await client.call_tool("thread_fork", {"step": step, "output": {"$status": "done", "n": 2}, "workspace": "fork"})
        return thread, step, changes, content, missing, fork

    thread, step, changes, content, missing, fork = call(server(root_dir, "--allow", "write", cwd=tmp_path), script)
    assert [change["path"] for change in changes.structured_content["changes"]] == ["notes.txt"]
    assert changes.structured_content == uwf("thread", "files", step, "--json").json()
    assert content.structured_content["content"] == "step worker\n" and content.structured_content["kind"] == "file"
    assert missing.is_error and "not a path inside the workspace" in missing.content[0].text
    assert not fork.is_error, fork.content
    forked = fork.structured_content
    assert forked["workspace"] == str(tmp_path / "fork") and (tmp_path / "fork" / "notes.txt").read_text() == "step worker\n"
    assert uwf("thread", "steps", forked["thread"]).json()[-1]["output"] == {"$status": "done", "n": 2}
    assert uwf("thread", "show", thread).json()["workspace"] == str(tmp_path / "project")


def test_a_read_only_server_refuses_every_write_and_says_how_to_allow_it(uwf, mcp_root, tmp_path):
    root_dir, thread = mcp_root
    before = head(uwf, thread)

    async def script(client):
        results = [await client.call_tool("thread_step", {"thread": thread}),
                   await client.call_tool("thread_start", {"workflow": "loop", "prompt": "more"}),
                   await client.call_tool("workflow_put", {"yaml": loop_workflow(5).replace("name: loop", "name: other")})]
        return results, await client.call_tool("thread_list", {})

    results, listed = call(server(root_dir), script)
    for result in results:
        assert result.is_error
        message = result.content[0].text
        assert "read-only" in message and "--allow write" in message and "\n" not in message
    assert head(uwf, thread) == before
    assert [item["thread"] for item in listed.structured_content["threads"]] == [thread]
    assert [item["name"] for item in uwf("workflow", "list").json()] == ["loop"]


def test_a_bad_call_is_one_line_and_the_server_goes_on(uwf, mcp_root):
    root_dir, thread = mcp_root

    async def script(client):
        answers = [
            await client.call_tool("thread_step", {}),  # no thread
            await client.call_tool("thread_show", {"thread": "01NOSUCHTHREAD"}),
            await client.call_tool("thread_step", {"thread": thread, "agent": "sh -c 'touch /tmp/owned'"}),  # a command line
            await client.call_tool("workflow_put", {"yaml": "name: [unclosed"}),
            await client.call_tool("thread_start", {"workflow": "loop", "prompt": "p", "workspace": "/"}),
            await client.call_tool("thread_step", {"thread": thread, "agent": "garbage"}),  # the agent's answer unreadable
            await client.call_tool("thread_list", {"archived": True}),  # an argument it does not take (a sync tool)
        ]
        return answers, await client.call_tool("workflow_list", {})

    answers, still = call(server(root_dir, "--allow", "write"), script)
    messages = [answer.content[0].text for answer in answers]
    assert all(answer.is_error for answer in answers), messages
    assert all("\n" not in message and "Traceback" not in message for message in messages), messages
    assert messages[0] == "Error executing tool thread_step: bad arguments: thread: Field required"
    assert "no thread" in messages[1]
    assert "unknown agent" in messages[2] and "talker" in messages[2]
    assert "outside" in messages[4]
    assert "could not read the output of agent 'garbage'" in messages[5]
    assert messages[6] == "Error executing tool thread_list: no argument 'archived' (it takes all)"
    assert uwf("thread", "show", thread).json()["steps"] == 0 and uwf("thread", "runs", thread).json()[-1]["status"] == "failed"
    assert not still.is_error and still.structured_content["workflows"][0]["name"] == "loop"
    assert len(uwf("thread", "list").json()) == 1  # nothing started by the refused call


def test_a_cancelled_step_stops_its_agent_and_leaves_the_head(uwf, mcp_root):
    root_dir, thread = mcp_root
    before = head(uwf, thread)

    async def script(client):
        started = anyio.Event()

        async def on_progress(value, total, message):
            started.set()

        with anyio.move_on_after(60):
            async with anyio.create_task_group() as group:

                async def step():
                    await client.call_tool("thread_step", {"thread": thread, "agent": "slow"}, progress_callback=on_progress)

                group.start_soon(step)
                await started.wait()  # the agent runs
                group.cancel_scope.cancel()  # the client cancels the call
        began = time.monotonic()
        while time.monotonic() - began < 30:  # the server records the attempt as it stops the agent
            shown = await client.call_tool("thread_show", {"thread": thread})
            if "running" not in shown.structured_content:
                break
            await anyio.sleep(0.1)
        return await client.call_tool("workflow_list", {})

    still = call(server(root_dir, "--allow", "write"), script)
    assert not still.is_error
    assert head(uwf, thread) == before
    runs = uwf("thread", "runs", thread).json()
    assert runs and runs[-1]["status"] in ("cancelled", "killed") and "MCP client" in (runs[-1].get("error") or ""), runs
    assert not any(SLEEP in line for line in _processes())


def _processes() -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                found.append(Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                pass
    return found


def test_two_clients_on_one_root_each_step_and_see_the_other_move(uwf, mcp_root):
    """Two servers (two clients) on one root at once: each steps its own thread concurrently, and one
    listening to the other's thread hears it move (the root's change signal, not a poll of its own)."""
    root_dir, thread = mcp_root
    other = uwf("thread", "start", "loop", "-p", "again").json()["thread"]
    heard: list[str] = []
    places = [root_dir.parent / name for name in ("first", "second")]  # each client its own directory, where its thread steps
    for place in places:
        place.mkdir()

    async def main():
        first_server, second_server = (server(root_dir, "--allow", "write", cwd=place) for place in places)
        async with Client(first_server, read_timeout_seconds=60) as first, Client(second_server, read_timeout_seconds=60) as second:
            async with first.listen(resource_subscriptions=[f"uwf://thread/{other}"]) as subscription:
                results = {}

                async def step(client, name):
                    results[name] = await client.call_tool("thread_step", {"thread": name})

                async def hear():
                    async for event in subscription:
                        heard.append(getattr(event, "uri", ""))
                        return

                async with anyio.create_task_group() as group:
                    group.start_soon(hear)
                    group.start_soon(step, first, thread)
                    group.start_soon(step, second, other)
                    with anyio.fail_after(30):
                        while not heard:
                            await anyio.sleep(0.05)
                return results

    results = anyio.run(main)
    assert not results[thread].is_error and not results[other].is_error, results
    assert head(uwf, thread) == results[thread].structured_content["head"]
    assert head(uwf, other) == results[other].structured_content["head"]
    assert heard == [f"uwf://thread/{other}"]


def test_http_needs_the_bearer_token(mcp_root):
    import httpx

    root_dir, thread = mcp_root
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = "a-token-of-the-right-shape-1234"
    process = subprocess.Popen([*_uwf_command(), "--root", str(root_dir), "mcp", "--http", f"127.0.0.1:{port}", "--token", token],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 30
        while True:
            try:
                refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and process.poll() is None, process.stderr.read() if process.poll() is not None else ""
                time.sleep(0.1)
        assert refused.status_code == 401
        wrong = httpx.post(url, json={}, headers={"Authorization": "Bearer not-the-token-at-all-0000"}, timeout=5)
        assert wrong.status_code == 401

        async def main():
            import httpx2

            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
                from mcp.client.streamable_http import streamable_http_client

                async with Client(streamable_http_client(url, http_client=http)) as client:
                    return await client.call_tool("thread_show", {"thread": thread})

        shown = anyio.run(main)
        assert not shown.is_error and shown.structured_content["thread"] == thread
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_without_the_extra_the_command_says_what_to_install(tmp_path):
    """The mcp SDK not found: one line naming the extra, no traceback."""
    script = (
        "import importlib.util, sys\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *rest: None if name == 'mcp' else real(name, *rest)\n"
        "sys.argv = ['uwf', '--root', sys.argv[1], 'mcp']\n"
        "from uwf_core.cli.main import main\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "root")], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "pip install -e '.[mcp]'" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_no_workspace_is_given_inside_the_storage_root(uwf, tmp_path):
    """A root kept in the server's directory (a project-local root): neither a thread nor a fork may
    have a workspace inside it (an adversary's trial forked into root/cas); the CLI refuses it too."""
    project = tmp_path / "project"
    root_dir = project / ".uwf"
    root_dir.mkdir(parents=True)
    (root_dir / "config.yaml").write_text(f"agents:\n  talker: {{command: sh, args: [-c, {json.dumps(SAYING)}], protocol: text}}\ndefaultAgent: talker\n")
    (tmp_path / "loop.yaml").write_text(loop_workflow(10))
    env = {"UWF_STORAGE_ROOT": str(root_dir)}
    assert uwf("workflow", "put", str(tmp_path / "loop.yaml"), env=env).code == 0
    (project / "work").mkdir()

    async def script(client):
        thread = (await client.call_tool("thread_start", {"workflow": "loop", "prompt": "p", "workspace": "work"})).structured_content["thread"]
        step = (await client.call_tool("thread_step", {"thread": thread})).structured_content["head"]
        return step, [await client.call_tool("thread_start", {"workflow": "loop", "prompt": "p", "workspace": ".uwf"}),
                      await client.call_tool("thread_fork", {"step": step, "workspace": ".uwf/newdir"}),
                      await client.call_tool("thread_fork", {"step": step, "workspace": ".uwf/cas/x"})]

    step, refused = call(server(root_dir, "--allow", "write", cwd=project), script)
    assert all(result.is_error and "inside the storage root" in result.content[0].text for result in refused), [r.content for r in refused]
    assert not (root_dir / "newdir").exists() and not (root_dir / "cas" / "x").exists()
    cli = uwf("thread", "fork", step, "-w", str(root_dir / "clifork"), env=env)
    assert cli.code == 1 and "inside the storage root" in cli.err and not (root_dir / "clifork").exists()
    default = uwf("thread", "fork", step, env=env)  # the root's own workspaces directory stays a fork's place
    assert default.code == 0, default.err
    assert default.json()["workspace"].startswith(str(root_dir / "workspaces"))


def test_a_run_takes_at_most_max_steps_and_streams_every_steps_lines(uwf, mcp_root):
    root_dir, thread = mcp_root
    progress: list[str] = []

    async def script(client):
        async def on_progress(value, total, message):
            progress.append(message)

        return (await client.call_tool("thread_run", {"thread": thread, "max_steps": 2}, progress_callback=on_progress),
                await client.call_tool("thread_run", {"thread": thread, "max_steps": 0}),
                await client.call_tool("thread_run", {"thread": thread, "maxSteps": 1}),
                await client.call_tool("thread_fork", {"step": thread, "from_role": "worker", "nth": 1}))

    ran, refused, misnamed, forked = call(server(root_dir, "--allow", "write"), script)
    assert not ran.is_error, ran.content
    assert uwf("thread", "show", thread).json()["steps"] == 2 and ran.structured_content["head"] == head(uwf, thread)
    assert progress == ["working on it: 1", "working on it: 2", "working on it: 3"] * 2
    assert refused.is_error and "max_steps" in refused.content[0].text and "\n" not in refused.content[0].text
    assert misnamed.is_error and misnamed.content[0].text == (
        "Error executing tool thread_run: no argument 'maxSteps' (it takes agent, max_steps, thread)")
    assert uwf("thread", "show", thread).json()["steps"] == 2  # not ten more steps for the one asked
    assert not forked.is_error and forked.structured_content["head"] == uwf("thread", "steps", thread).json()[0]["hash"]


def test_the_gate_keeps_workspaces_inside_its_directory_even_at_the_top(tmp_path):
    from uwf_core.mcp_server.gate import Gate, Refused

    top = Gate(repo=None, writes=True, workspaces="/")  # a client that starts its servers in /
    assert top.workspace(str(tmp_path)) == str(tmp_path)
    inside = Gate(repo=None, writes=True, workspaces=str(tmp_path))
    assert inside.workspace("a/b") == str(tmp_path / "a" / "b")
    for bad in ("..", "/etc", "a/\0b", str(tmp_path) + "-sibling"):
        with pytest.raises(Refused):
            inside.workspace(bad)


def test_an_ended_thread_names_the_tools_that_go_on_and_thread_resume_does(uwf, mcp_root):
    root_dir, thread = mcp_root

    async def script(client):
        await client.call_tool("thread_kill", {"thread": thread})
        refused = await client.call_tool("thread_step", {"thread": thread})
        resumed = await client.call_tool("thread_resume", {"thread": thread, "prompt": "go on"})
        stepped = await client.call_tool("thread_step", {"thread": thread})
        return refused, resumed, stepped

    refused, resumed, stepped = call(server(root_dir, "--allow", "write"), script)
    message = refused.content[0].text
    assert refused.is_error and "`thread_fork`" in message and "`thread_resume`" in message and "uwf thread" not in message, message
    assert not resumed.is_error and not stepped.is_error, (resumed.content, stepped.content)
    assert uwf("thread", "show", thread).json()["head"] == stepped.structured_content["head"]


def test_http_on_a_busy_port_is_one_line_and_serves_nothing(mcp_root):
    root_dir, _ = mcp_root
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run([*_uwf_command(), "--root", str(root_dir), "mcp", "--http", f"127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert f"cannot serve on 127.0.0.1:{port}" in done.stderr and "Bearer" not in done.stderr


def test_ctrl_c_cancels_the_step_in_flight_records_it_and_ends_the_server(uwf, mcp_root):
    root_dir, thread = mcp_root
    before = head(uwf, thread)
    command = _uwf_command()
    process = subprocess.Popen([*command, "--root", str(root_dir), "mcp", "--allow", "write"], cwd=root_dir.parent, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for message in ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
                        {"jsonrpc": "2.0", "method": "notifications/initialized"},
                        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "thread_step", "arguments": {"thread": thread, "agent": "slow"}}}):
            process.stdin.write((json.dumps(message) + "\n").encode())
            process.stdin.flush()
        deadline = time.monotonic() + 30
        while "running" not in uwf("thread", "show", thread).json() and time.monotonic() < deadline:
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130
    assert head(uwf, thread) == before
    last = uwf("thread", "runs", thread).json()[-1]
    assert last["status"] == "killed" and "the MCP server was interrupted" in last["error"], last
    assert not any(SLEEP in line for line in _processes())


def test_a_paused_thread_is_refused_a_step_naming_the_tool_that_unpauses_it(uwf, mcp_root):
    root_dir, thread = mcp_root

    async def script(client):
        paused = await client.call_tool("thread_pause", {"thread": thread})
        refused = await client.call_tool("thread_step", {"thread": thread})
        unpaused = await client.call_tool("thread_unpause", {"thread": thread})
        stepped = await client.call_tool("thread_step", {"thread": thread})
        return paused, refused, unpaused, stepped

    paused, refused, unpaused, stepped = call(server(root_dir, "--allow", "write"), script)
    assert paused.structured_content == {"thread": thread, "paused": True, "already": False}
    message = refused.content[0].text
    assert refused.is_error and f"thread {thread} is paused" in message and "`thread_unpause`" in message, message
    assert not unpaused.is_error and not stepped.is_error and uwf("thread", "runs", thread).json()[-1]["status"] == "ok"
