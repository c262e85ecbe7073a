"""`uwf agent list | presets | add | remove | test`, and the limits every step command enforces."""

from __future__ import annotations

import json
import os
import time

import pytest

from conftest import EXAMPLES, snapshot_tree
from fake_openai import FakeOpenAI, reply
from uwf_core.engine.call import excerpt_end

ANSWER = "---\\nanswer: pong\\n---\\n"


def _add(uwf, name: str, script: str, *options: str):
    return uwf("agent", "add", name, *options, "--", "sh", "-c", script)


def test_add_list_and_remove(uwf, root_dir):
    assert _add(uwf, "echo", f'printf -- "{ANSWER}"', "--timeout", "30", "--secret", "DEPLOY_TOKEN", "--env", "MODE=fast").code == 0
    assert uwf("setup", "--agent-preset", "codex").code == 0
    listed = {entry["name"]: entry for entry in uwf("agent", "list").json()}
    assert listed["echo"] == {
        "name": "echo",
        "command": "sh",
        "args": ["-c", f'printf -- "{ANSWER}"'],
        "protocol": "text",
        "timeout": 30.0,
        "secrets": ["DEPLOY_TOKEN"],
        "source": "config.yaml",
        "sandbox": True,
        "network": True,
        "git": "read",
        "env": {"MODE": "fast"},
        "containment": listed["echo"]["containment"],  # bubblewrap where it can start (test_sandbox.py)
        **({"containmentReason": listed["echo"]["containmentReason"]} if "containmentReason" in listed["echo"] else {}),
    }
    assert listed["codex"]["state"] == ["${CODEX_HOME:-~/.codex}/"] and "writable" not in listed["codex"]
    assert listed["codex"]["source"] == "config.yaml (preset codex)"
    assert listed["uwf-builtin"]["source"] == "built-in" and listed["human"]["protocol"] == "human"
    assert "env:\n      MODE: fast" in (root_dir / "config.yaml").read_text().replace('"', "")
    keyed = _add(uwf, "keyed", "true", "--env", "OPENAI_API_KEY=sk-would-be-in-config")
    assert keyed.code == 2 and "looks like a key: put it in .env and pass --secret OPENAI_API_KEY" in keyed.err
    assert "sk-would-be-in-config" not in (root_dir / "config.yaml").read_text()
    assert uwf("agent", "remove", "echo").code == 0
    assert "echo" not in {entry["name"] for entry in uwf("agent", "list").json()}


def test_add_gives_uwfs_own_agents_the_step_protocol_and_any_other_cli_text(uwf):
    assert uwf("agent", "add", "script", "--", "uwf-script", "--script-dir", str(EXAMPLES)).code == 0
    assert uwf("agent", "add", "cli", "--", "my-cli", "--prompt-file", "{prompt_file}").code == 0
    assert uwf("agent", "add", "forced", "--protocol", "text", "--", "uwf-script").code == 0
    listed = {entry["name"]: entry["protocol"] for entry in uwf("agent", "list").json()}
    assert (listed["script"], listed["cli"], listed["forced"]) == ("step", "text", "text")
    assert uwf("agent", "test", "script").json()["ok"] is True  # uwf-script speaks step: it works as added


def test_presets_are_listed_with_their_safe_flags(uwf):
    presets = {entry["name"]: entry for entry in uwf("agent", "presets").json()}
    assert set(presets) == {"claude", "codex", "aider", "hermes", "llm", "cursor-agent"}
    assert all(entry["timeout"] == 1800 and entry["secrets"] == [] for entry in presets.values())
    assert "--skip-git-repo-check" in presets["codex"]["args"]
    assert {"--permission-mode", "acceptEdits"} <= set(presets["claude"]["args"])
    assert {"--no-detect-urls", "--disable-playwright", "{prompt_file}", "--no-auto-test"} <= set(presets["aider"]["args"])
    assert presets["aider"]["hide"] == [".aider.conf.yml", ".aider.model.settings.yml", ".aider.model.metadata.json", ".env"]
    assert presets["claude"]["state"] == ["~/.claude/"]  # a private copy each run: its memories never reach your sessions
    assert not any(entry.get("writable") for entry in presets.values())  # no preset writes outside the workspace as it is
    assert {"--setting-sources", "user"} <= set(presets["claude"]["args"])  # nor its hooks
    assert not any("{prompt}" in arg for entry in presets.values() for arg in entry["args"])  # never in `ps`


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agent", "add", "x", "--timeout", "0", "--", "true"], "must be a positive number"),
        (["agent", "add", "x", "--timeout", "-5", "--", "true"], "must be a positive number"),
        (["agent", "add", "x", "--protocol", "json", "--", "true"], "invalid choice: 'json'"),
        (["agent", "add", "x", "true"], "put the agent's command after --"),
        (["agent", "add", "x"], "put the agent's command after --"),
        (["agent", "add", "x y", "--", "true"], "must be letters, digits"),
        (["agent", "add", "uwf-builtin", "--", "true"], "is a built-in agent"),
        (["agent", "add", "x", "--secret", "9LIVES", "--", "true"], "is not a .env key name"),
        (["thread", "step", "T", "--timeout", "0"], "must be a positive number"),
        (["thread", "step", "T", "--timeout", "-1"], "must be a positive number"),
        (["thread", "run", "T", "--max-steps", "0"], "must be at least 1"),
        (["thread", "run", "T", "--max", "-2"], "must be at least 1"),
        (["thread", "read", "T", "--quota", "-1"], "must be at least 1"),
    ],
)
def test_bad_values_are_usage_errors_and_change_nothing(uwf, root_dir, args, message):
    before = snapshot_tree(root_dir)
    result = uwf(*args)
    assert result.code == 2, result
    assert message in result.err and "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) <= 4  # argparse's usage lines, then the one error
    assert snapshot_tree(root_dir) == before


def test_an_existing_name_and_an_agent_still_in_use_are_refused(uwf):
    assert _add(uwf, "a", "true").code == 0
    again = _add(uwf, "a", "false")
    assert again.code == 1 and "already exists" in again.err
    assert _add(uwf, "a", "false", "--replace").code == 0
    assert uwf("setup", "--default-agent", "a").code == 0
    used = uwf("agent", "remove", "a")
    assert used.code == 1 and "still used by defaultAgent" in used.err
    missing = uwf("agent", "remove", "nope")
    assert missing.code == 1 and "no agent 'nope'" in missing.err


def test_agent_test_passes_and_leaves_no_trace(uwf, root_dir):
    assert _add(uwf, "echo", f'cat > /dev/null; printf -- "{ANSWER}"').code == 0
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    before = snapshot_tree(root_dir)
    result = uwf("agent", "test", "echo")
    assert result.code == 0, result
    assert result.json()["ok"] is True and result.json()["answer"] == "pong"
    assert "agent 'echo' ok in" in result.err
    assert snapshot_tree(root_dir) == before  # no thread, no registry entry, no runs.jsonl line


def test_agent_test_runs_a_step_protocol_command_line(uwf, tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text("check:\n  - |\n    ---\n    answer: pong from the script\n    ---\n")
    result = uwf("agent", "test", f"uwf-script --script {script}")
    assert result.code == 0, result
    assert result.json()["answer"] == "pong from the script"


def test_agent_test_names_what_went_wrong(uwf):
    assert _add(uwf, "crash", 'echo "first problem line" >&2; echo "second" >&2; exit 7').code == 0
    crashed = uwf("agent", "test", "crash")
    assert crashed.code == 1
    report = crashed.json()
    assert report["ok"] is False and "exited with code 7" in report["error"] and report["stderr"] == "first problem line"
    assert _add(uwf, "chatty", 'echo "Sure! Here is my answer."').code == 0
    chatty = uwf("agent", "test", "chatty").json()
    assert "no frontmatter" in chatty["error"] and "began: 'Sure! Here is my answer.'" in chatty["error"]
    assert _add(uwf, "slow", "sleep 30", "--timeout", "3").code == 0  # 3 s: the sandbox's start-up fits under load
    slow = uwf("agent", "test", "slow").json()
    assert "timed out after 3s" in slow["error"] and slow["seconds"] < 25
    missing = uwf("agent", "test", "nope-not-a-command")
    assert missing.code == 1 and "not found" in missing.json()["error"]


def test_the_timeout_bounds_extraction_too(uwf, root_dir):
    """A 2 s step whose extract model takes 10 s ends as a timeout near 2 s, not after the model."""
    with FakeOpenAI([{"delay": 10, "body": reply(json.dumps({"thesis": "t", "keyPoints": ["a"]}))}]) as server:
        (root_dir / "config.yaml").write_text(
            f"providers:\n  p:\n    baseUrl: {server.base_url}\nmodels:\n  m:\n    provider: p\n    name: fake\ndefaultModel: m\n"
        )
        assert _add(uwf, "prose", 'echo "no frontmatter here"').code == 0
        assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
        thread = uwf("thread", "start", "analyze-topic", "-p", "x").json()["thread"]
        started = time.monotonic()
        result = uwf("thread", "step", thread, "--agent", "prose", "--timeout", "2")
        took = time.monotonic() - started
    assert result.code == 1
    assert "timeout" in result.err
    assert uwf("thread", "runs", thread).json()[-1]["status"] == "timeout"
    assert took < 9  # the model's 10 s answer was not waited for


def test_cas_has_takes_prefixes_like_cas_get(uwf):
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    head = uwf("thread", "show", uwf("thread", "start", "analyze-topic", "-p", "x").json()["thread"]).json()["head"]
    assert uwf("cas", "has", head[:8]).code == 0
    assert uwf("cas", "has", head[:8].lower()).code == 0
    assert uwf("cas", "has", "ZZZZZZZZ").code == 1
    bad = uwf("cas", "has", "not!hash")
    assert bad.code == 1 and "not a hash" in bad.err


def test_wrong_kinds_of_names_say_what_was_expected(uwf):
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    thread = uwf("thread", "start", "analyze-topic", "-p", "x").json()["thread"]
    head = uwf("thread", "show", thread).json()["head"]
    fork = uwf("thread", "fork", thread)
    assert fork.code == 1 and f"is a thread, not a step" in fork.err and head in fork.err
    put = uwf("cas", "put", "nosuchtype", "{}")
    assert put.code == 1 and "unknown type 'nosuchtype'" in put.err and "start-node" in put.err


def test_stderr_excerpts_start_at_a_boundary():
    text = "alpha beta gamma\n" + "word " * 100
    cut = excerpt_end(text, 60)
    assert cut.startswith("…word") and len(cut) <= 61
    assert excerpt_end("short", 60) == "short"
    assert excerpt_end("x" * 100, 10) == "…" + "x" * 10  # no boundary at all: cut anyway


def test_a_step_is_recorded_under_the_alias_it_ran_as(uwf, tmp_path):
    """The StepNode, runs.jsonl and the views all name the agent as config.yaml does."""
    script = tmp_path / "script.yaml"
    script.write_text("analyst:\n  - |\n    ---\n    thesis: t\n    keyPoints: [a]\n    ---\n")
    assert uwf("agent", "add", "researcher", "--protocol", "step", "--", "uwf-script", "--script", str(script)).code == 0
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    thread = uwf("thread", "start", "analyze-topic", "-p", "x").json()["thread"]
    assert uwf("thread", "step", thread, "--agent", "researcher").json()["agent"] == "researcher"
    assert uwf("thread", "steps", thread).json()[-1]["agent"] == "researcher"
    assert uwf("thread", "runs", thread).json()[-1]["agent"] == "researcher"
    other = uwf("thread", "start", "analyze-topic", "-p", "y").json()["thread"]
    assert uwf("thread", "step", other, "--agent", f"uwf-script --script {script}").code == 0
    assert uwf("thread", "steps", other).json()[-1]["agent"] == "uwf-script"  # a bare command line: the agent's own name


def _setup_on_a_terminal(root_dir, answers: list[str]) -> str:
    """Run `uwf setup` with a pseudo-terminal as its controlling terminal (getpass reads
    /dev/tty), typing each answer when its question appears; returns the whole transcript."""
    import os
    import pty
    import select

    from conftest import _uwf_command

    pid, fd = pty.fork()
    if pid == 0:  # the child: uwf setup on the terminal
        os.environ["UWF_STORAGE_ROOT"] = str(root_dir)
        command = _uwf_command()
        os.execv(command[0], [*command, "setup"])
    transcript = b""
    pending = list(answers)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            transcript += chunk
            # A question ends with ": " and nothing after it (the echo of an answer ends a line).
            if pending and transcript.endswith(b": "):
                os.write(fd, pending.pop(0).encode() + b"\r")
    if os.waitpid(pid, os.WNOHANG) == (0, 0):  # still asking: out of answers; don't hang the suite
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    return transcript.decode("utf-8", "replace")


def test_interactive_setup_can_skip_each_part_and_asks_for_the_default_agent(root_dir):
    transcript = _setup_on_a_terminal(root_dir, ["local", "http://127.0.0.1:9/v1", "", "fake-model", "claude, llm", ""])
    assert "blank: skip the LLM setup" in transcript and "no key stored" in transcript
    assert "Default agent (claude, llm, uwf-builtin" in transcript
    config = (root_dir / "config.yaml").read_text()
    assert 'defaultAgent: "claude"' in config and "llm:" in config
    assert not (root_dir / ".env").exists()  # no key was given, so none is written


def test_interactive_setup_skipped_entirely_writes_no_provider(root_dir):
    transcript = _setup_on_a_terminal(root_dir, ["", ""])
    assert "Base URL" not in transcript and "Default agent" not in transcript
    assert "\nproviders:" not in (root_dir / "config.yaml").read_text()


def test_interactive_setup_with_a_key_and_a_model_takes_the_offered_builtin_agent(root_dir):
    """Enter on the offered default (uwf-builtin, usable without a config entry) writes the key
    and the config; it used to fail at the end and lose the key."""
    transcript = _setup_on_a_terminal(root_dir, ["openrouter", "", "sk-typed-once", "anthropic/claude-sonnet-4", "", ""])
    assert "Default agent (uwf-builtin; \"none\" skips) [uwf-builtin]" in transcript
    assert "error" not in transcript
    assert 'defaultAgent: "uwf-builtin"' in (root_dir / "config.yaml").read_text()
    assert "OPENROUTER_API_KEY=sk-typed-once" in (root_dir / ".env").read_text()


def test_interactive_setup_asks_again_after_a_typo_instead_of_aborting(root_dir):
    answers = ["local", "not-a-url", "http://127.0.0.1:9/v1", "sk-x", "", "claud", "claude, llm", "lm", "llm"]
    transcript = _setup_on_a_terminal(root_dir, answers)
    assert "'not-a-url' is not an http(s) URL; try again" in transcript
    assert "unknown agent preset 'claud'" in transcript
    assert "'lm' is not an agent here" in transcript
    config = (root_dir / "config.yaml").read_text()
    assert 'defaultAgent: "llm"' in config and "claude:" in config and "127.0.0.1:9" in config
    assert "LOCAL_API_KEY=sk-x" in (root_dir / ".env").read_text()


def test_interactive_setup_with_a_provider_and_no_model_still_asks_for_the_default_agent(root_dir):
    transcript = _setup_on_a_terminal(root_dir, ["local", "", "", "", "", "uwf-script"])
    assert "Default agent (\"none\" skips; uwf-builtin needs a model)" in transcript
    assert 'defaultAgent: "uwf-script"' in (root_dir / "config.yaml").read_text()


def test_the_demo_scripted_agent_passes_its_check(uwf):
    """The demo's agent is `uwf-script --script-dir examples`: examples/ has the check's script."""
    assert uwf("setup", "--agent", f"script=uwf-script --script-dir {EXAMPLES}").code == 0
    result = uwf("agent", "test", "script")
    assert result.code == 0, result
    assert result.json()["answer"] == "pong"


def test_an_agent_that_fails_on_stdout_is_quoted_from_stdout(uwf):
    assert _add(uwf, "quiet", 'echo "Not logged in · Please run /login"; exit 1').code == 0
    report = uwf("agent", "test", "quiet").json()
    assert report["error"] == "agent 'quiet' exited with code 1; no stderr; stdout: Not logged in · Please run /login"


def test_setup_warns_when_a_preset_cannot_work_yet(uwf, tmp_path):
    """A preset whose CLI is not on PATH, or aider without an extract model to read its answer
    (it prints a banner first): written all the same, with one warning line each."""
    bare_path = {"PATH": f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin"}  # no agent CLI here
    result = uwf("setup", "--agent-preset", "aider", "--agent-preset", "llm", env=bare_path)
    assert result.code == 0, result
    warnings = [line for line in result.err.splitlines() if line.startswith("uwf: warning:")]
    assert any("'aider': aider is not on PATH" in line for line in warnings)
    assert any("'llm': llm is not on PATH" in line for line in warnings)
    assert any("'aider' prints more than its answer" in line and "uwf setup --provider" in line for line in warnings)
    fake = tmp_path / "aider"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    quiet = uwf("setup", "--provider", "p", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                "--agent-preset", "aider", env=bare_path)
    assert quiet.code == 0 and "warning" not in quiet.err, quiet


def test_a_preset_an_earlier_uwf_wrote_is_read_as_todays(uwf, root_dir):
    """`uwf setup --agent-preset claude` used to make ~/.claude/projects/ writable as it is; such an
    entry, unchanged since, now gets the private copy, and a changed one is left as written."""
    (root_dir / "config.yaml").write_text(
        "agents:\n  claude:\n    command: claude\n"
        "    args: [-p, --permission-mode, acceptEdits, --output-format, text, --setting-sources, user]\n"
        "    protocol: text\n    timeout: 1800\n    env:\n      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: \"1\"\n"
        "    writable: [~/.claude/projects/, ~/.claude/.credentials.json]\n"
        "  mine:\n    command: claude\n    args: [-p]\n    protocol: text\n    writable: [~/.claude/projects/]\n"
    )
    listed = {entry["name"]: entry for entry in uwf("agent", "list").json()}
    assert listed["claude"]["state"] == ["~/.claude/"] and "writable" not in listed["claude"]
    assert listed["claude"]["source"] == "config.yaml (preset claude)"
    assert listed["mine"]["writable"] == ["~/.claude/projects/"]  # yours, as you wrote it (a write there is a warning)
