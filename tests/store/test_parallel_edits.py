"""config.yaml and .env are read, changed and written back whole: parallel `uwf agent add` and
`uwf setup` runs each keep their change, on both backends (20 at once kept 3 before)."""

from __future__ import annotations

import os
import subprocess

from conftest import REPO, _uwf_command

from uwf_core.repo import Repo

RUNS = 16


def _all_at_once(root: str, commands: list[list[str]], env: dict | None = None) -> None:
    full = dict(os.environ, UWF_STORAGE_ROOT=root, **(env or {}))
    processes = [
        subprocess.Popen([*_uwf_command(), *command], cwd=str(REPO), env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for command in commands
    ]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err


def _agents_added(root: str) -> None:
    _all_at_once(root, [["agent", "add", f"a{i}", "--", "echo", str(i)] for i in range(RUNS)])
    assert {f"a{i}" for i in range(RUNS)} <= set(Repo.open(root).config.agents)


def test_parallel_agent_adds_keep_every_agent(tmp_path):
    _agents_added(str(tmp_path / "root"))


def test_parallel_agent_adds_keep_every_agent_on_postgresql(pg_url):
    _agents_added(pg_url)


def test_parallel_setups_keep_every_provider_and_key(tmp_path):
    root = str(tmp_path / "root")
    _all_at_once(root, [
        ["setup", "--provider", f"p{i}", "--base-url", f"http://127.0.0.1:9/{i}", "--api-key", f"sk-parallel-{i:02d}-0123456789"]
        for i in range(RUNS // 2)
    ] + [["setup", "--agent-preset", preset] for preset in ("claude", "codex", "aider", "hermes", "llm")])
    repo = Repo.open(root)
    assert {f"p{i}" for i in range(RUNS // 2)} <= set(repo.config.providers)
    assert {"claude", "codex", "aider", "hermes", "llm"} <= set(repo.config.agents)
    keys = repo.env_values
    assert {value for value in keys.values() if value.startswith("sk-parallel-")} == {f"sk-parallel-{i:02d}-0123456789" for i in range(RUNS // 2)}
    assert oct(os.stat(repo.env_path).st_mode & 0o777) == "0o600"
