"""Regressions for what review found: placeholders inside the prompt, setup writing
nothing when refused, the human agent without a terminal, huge integers."""

from __future__ import annotations

from uwf_core.config.model import AgentConfig, with_agent


def test_placeholders_inside_the_prompt_stay_as_written(uwf, root, tmp_path):
    seen = tmp_path / "seen.txt"
    agent = tmp_path / "echo.sh"
    agent.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {seen}\necho \'{{"thesis": "t", "keyPoints": ["k"]}}\'\n')
    agent.chmod(0o755)
    assert uwf("workflow", "put", "examples/analyze-topic.yaml").code == 0
    root.save_config(with_agent(root.config, AgentConfig("echo", str(agent), ("{prompt}",), "text", writable=(str(tmp_path),))))
    thread = uwf("thread", "start", "analyze-topic", "-p", "Explain {role} and {thread} literally").json()["thread"]
    result = uwf("thread", "step", thread, "--agent", "echo")
    assert result.code == 0, result
    assert "Explain {role} and {thread} literally" in seen.read_text()


def test_setup_refused_writes_no_key(uwf, root_dir):
    result = uwf("setup", "--provider", "p", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "sk-never-written", "--agent-preset", "bogus")
    assert result.code == 1 and "unknown agent preset 'bogus'" in result.err
    assert not (root_dir / ".env").exists() and not (root_dir / "config.yaml").exists()


def test_human_agent_without_a_terminal_says_how(uwf):
    assert uwf("workflow", "put", "examples/analyze-topic.yaml").code == 0
    thread = uwf("thread", "start", "analyze-topic", "-p", "x").json()["thread"]
    result = uwf("thread", "step", thread, "--agent", "human", input="")
    assert result.code == 1
    assert result.err.strip().splitlines()[-1].startswith(f"uwf: error: role 'analyst' waits for a person: answer it with `uwf thread answer {thread}`")
    again = uwf("thread", "step", thread, "--agent", "human", input="")
    assert again.code == 1
    runs = uwf("thread", "runs", thread).json()
    assert [run["status"] for run in runs] == ["asking"]  # on record once, however often it is asked


def test_a_number_too_large_for_json_is_refused_cleanly(uwf):
    result = uwf("cas", "put", "detail", '{"n": 1' + "0" * 400 + "}")
    assert result.code == 1
    assert "Traceback" not in result.err and "too large" in result.err
