"""Secrets stay in .env: an agent receives only the keys its entry names, and a key that an
agent prints (answer, stderr, failure) is redacted before anything is stored or shown.
After each step the whole root is searched: no key may appear outside .env."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES
from fake_openai import FakeOpenAI, reply
from uwf_core.config.env import Secrets
from uwf_core.config.model import Config, ProviderConfig

PROVIDER_KEY = "sk-or-v1-provider-key-0123456789"
OTHER_TOKEN = "tok-deploy-abcdef987654"
ANSWER = "---\nthesis: t\nkeyPoints: [a]\n---\nbody\n"


def _leaks(root_dir: Path) -> list[str]:
    """Files under the root (other than .env) holding either key."""
    found = []
    for path in root_dir.rglob("*"):
        if path.is_file() and path.name != ".env":
            data = path.read_bytes()
            found += [f"{path.relative_to(root_dir)}: {name}" for name, key in (("provider", PROVIDER_KEY), ("token", OTHER_TOKEN)) if key.encode() in data]
    return found


def _config(root_dir: Path, agents: str, base_url: str = "http://127.0.0.1:9/v1") -> None:
    (root_dir / "config.yaml").write_text(
        f"providers:\n  openrouter:\n    baseUrl: {base_url}\n    apiKeyEnv: OPENROUTER_API_KEY\n"
        f"models:\n  m:\n    provider: openrouter\n    name: fake-model\n"
        f"agents:\n{agents}"
    )
    (root_dir / ".env").write_text(f"OPENROUTER_API_KEY={PROVIDER_KEY}\nDEPLOY_TOKEN={OTHER_TOKEN}\n")


def _thread(uwf) -> str:
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    return uwf("thread", "start", "analyze-topic", "-p", "topic").json()["thread"]


def _agent(name: str, script: str, extra: str = "") -> str:
    return f"  {name}:\n    command: sh\n    args: [-c, {json.dumps(script)}]\n    protocol: text\n{extra}"


def test_an_agent_gets_only_the_keys_it_names(uwf, root_dir, tmp_path):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    agents = _agent("plain", f'env > {dumps}/plain; printf -- "{ANSWER}"') + _agent(
        "named", f'env > {dumps}/named; printf -- "{ANSWER}"', "    secrets: [DEPLOY_TOKEN]\n"
    )
    _config(root_dir, agents)
    thread = _thread(uwf)
    assert uwf("thread", "step", thread, "--agent", "plain").code == 0
    other = uwf("thread", "start", "analyze-topic", "-p", "topic").json()["thread"]
    assert uwf("thread", "step", other, "--agent", "named").code == 0
    plain = (dumps / "plain").read_text()
    named = (dumps / "named").read_text()
    assert PROVIDER_KEY not in plain and OTHER_TOKEN not in plain
    assert f"DEPLOY_TOKEN={OTHER_TOKEN}" in named and PROVIDER_KEY not in named
    assert _leaks(root_dir) == []


def test_a_named_secret_missing_from_env_is_one_clear_error(uwf, root_dir):
    _config(root_dir, _agent("needs", f'printf -- "{ANSWER}"', "    secrets: [NOT_THERE]\n"))
    thread = _thread(uwf)
    head = uwf("thread", "show", thread).json()["head"]
    result = uwf("thread", "step", thread, "--agent", "needs")
    assert result.code == 1
    assert "names the secret NOT_THERE, which is neither in" in result.err
    assert uwf("thread", "show", thread).json()["head"] == head


def test_a_key_the_agent_prints_is_redacted_from_output_answer_and_stream(uwf, root_dir):
    script = (
        'echo "reading $DEPLOY_TOKEN" >&2; '
        'printf -- "---\\nthesis: the key is $DEPLOY_TOKEN\\nkeyPoints: [$DEPLOY_TOKEN]\\n---\\nbody $DEPLOY_TOKEN\\n"'
    )
    _config(root_dir, _agent("echoer", script, "    secrets: [DEPLOY_TOKEN]\n"))
    thread = _thread(uwf)
    result = uwf("thread", "step", thread, "--agent", "echoer")
    assert result.code == 0, result
    assert OTHER_TOKEN not in result.err and "reading [redacted:DEPLOY_TOKEN]" in result.err  # the streamed stderr
    steps = uwf("thread", "steps", thread).json()
    assert steps[-1]["output"] == {"thesis": "the key is [redacted:DEPLOY_TOKEN]", "keyPoints": ["[redacted:DEPLOY_TOKEN]"]}
    details = uwf("thread", "step-details", steps[-1]["hash"])
    assert "body [redacted:DEPLOY_TOKEN]" in details.out and OTHER_TOKEN not in details.out
    assert _leaks(root_dir) == []


def test_a_failing_agent_that_prints_keys_on_stderr_leaks_nothing(uwf, root_dir):
    # It even reads .env behind uwf's back: what it prints is still redacted.
    script = 'echo "auth failed for $DEPLOY_TOKEN" >&2; tr "\\n" " " < "$UWF_STORAGE_ROOT/.env" >&2; exit 4'
    _config(root_dir, _agent("leaky", script, "    secrets: [DEPLOY_TOKEN]\n"))
    thread = _thread(uwf)
    result = uwf("thread", "step", thread, "--agent", "leaky")
    assert result.code == 1
    assert "exited with code 4" in result.err
    assert "auth failed for [redacted:DEPLOY_TOKEN]" in result.err
    assert "OPENROUTER_API_KEY=[redacted:OPENROUTER_API_KEY] DEPLOY_TOKEN=[redacted:DEPLOY_TOKEN]" in result.err
    assert OTHER_TOKEN not in result.err and PROVIDER_KEY not in result.err
    runs = uwf("thread", "runs", thread).json()
    assert runs[-1]["status"] == "failed" and "[redacted:DEPLOY_TOKEN]" in runs[-1]["stderr"]
    assert _leaks(root_dir) == []


def test_the_extract_model_never_sees_a_key_the_agent_printed(uwf, root_dir):
    prose = f'echo "The thesis is that the key $DEPLOY_TOKEN works."'
    extracted = reply(json.dumps({"thesis": "the key works", "keyPoints": ["a"]}))
    with FakeOpenAI([extracted]) as server:
        _config(root_dir, _agent("prose", prose, "    secrets: [DEPLOY_TOKEN]\n"), server.base_url)
        with (root_dir / "config.yaml").open("a") as handle:
            handle.write("defaultModel: m\n")
        thread = _thread(uwf)
        result = uwf("thread", "step", thread, "--agent", "prose")
    assert result.code == 0, result
    sent = json.dumps(server.requests[0]["body"])
    assert OTHER_TOKEN not in sent and "[redacted:DEPLOY_TOKEN]" in sent
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {PROVIDER_KEY}"  # the extractor has its key
    assert _leaks(root_dir) == []


def test_a_step_agent_on_the_kit_redacts_what_it_writes(uwf, root_dir, tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text(f"analyst:\n  - |\n    ---\n    thesis: leaked {OTHER_TOKEN}\n    keyPoints: [x]\n    ---\n    body {PROVIDER_KEY}\n")
    _config(root_dir, f"  scripted:\n    command: uwf-script\n    args: [--script, {script}]\n")
    thread = _thread(uwf)
    assert uwf("thread", "step", thread, "--agent", "scripted").code == 0
    assert uwf("thread", "steps", thread).json()[-1]["output"]["thesis"] == "leaked [redacted:DEPLOY_TOKEN]"
    assert _leaks(root_dir) == []


def test_secrets_replace_longest_first_and_skip_short_values():
    secrets = Secrets({"LONG": "abcdef-123456", "SHORT": "abcdef", "FLAG": "1"})
    assert secrets.redact("x abcdef-123456 y abcdef 1") == "x [redacted:LONG] y [redacted:SHORT] 1"
    assert secrets.redact({"a": ["abcdef"], "b": 3}) == {"a": ["[redacted:SHORT]"], "b": 3}
    assert secrets.redact({"abcdef": 1}) == {"[redacted:SHORT]": 1}  # a key can be a field name too
    assert secrets.names == {"LONG", "SHORT"}


def test_a_key_printed_as_a_field_name_is_redacted(uwf, root_dir):
    """The role's schema allows extra fields: a key the agent uses as a field name is text it printed."""
    script = 'printf -- "---\\nthesis: t\\nkeyPoints: [a]\\n$DEPLOY_TOKEN: 1\\n---\\nbody\\n"'
    _config(root_dir, _agent("namer", script, "    secrets: [DEPLOY_TOKEN]\n"))
    thread = _thread(uwf)
    assert uwf("thread", "step", thread, "--agent", "namer").code == 0
    output = uwf("thread", "steps", thread).json()[-1]["output"]
    assert "[redacted:DEPLOY_TOKEN]" in output and OTHER_TOKEN not in json.dumps(output)
    assert _leaks(root_dir) == []


def test_cas_put_redacts_what_any_agent_writes(uwf, root_dir):
    """A step-protocol agent in any language writes its nodes with `uwf cas put`: a key in them is
    redacted there, with a warning, and the printed hash is the redacted node's."""
    _config(root_dir, "")
    put = uwf("cas", "put", "content", json.dumps(f"token {OTHER_TOKEN} in an answer"))
    assert put.code == 0 and "redacted" in put.err
    assert uwf("cas", "get", put.out.strip(), "--payload").json() == "token [redacted:DEPLOY_TOKEN] in an answer"
    plain = uwf("cas", "put", "content", json.dumps("nothing secret"))
    assert plain.code == 0 and plain.err == ""
    assert _leaks(root_dir) == []


def test_provider_keys_from_the_environment_are_secrets_too():
    config = Config(providers={"p": ProviderConfig("p", "http://x", "P_KEY")})
    secrets = Secrets.of(config, {"FROM_ENV_FILE": "value-from-dotenv"}, {"P_KEY": "key-from-environment", "HOME": "/home/someone"})
    assert secrets.names == {"P_KEY", "FROM_ENV_FILE"}


@pytest.mark.parametrize("where", ["args", "stdin"])
def test_a_prompt_too_long_for_an_argument_is_refused_before_spawning(uwf, root_dir, tmp_path, where):
    marker = tmp_path / "ran"
    args = f'touch {marker}; printf -- "{ANSWER}"'
    command = args + " # {prompt}" if where == "args" else args + "; cat >/dev/null"
    agent = f"  big:\n    command: sh\n    args: [-c, {json.dumps(command)}]\n    protocol: text\n"
    _config(root_dir, agent)
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    thread = uwf("thread", "start", "analyze-topic", "-p", "-", input="x" * 200_000).json()["thread"]
    result = uwf("thread", "step", thread, "--agent", "big")
    if where == "args":
        assert result.code == 1
        assert "too long for one command-line argument" in result.err and "{prompt_file}" in result.err
        assert not marker.exists()
    else:
        assert result.code == 0, result
        assert marker.exists()


def test_a_kit_agent_keeps_env_keys_to_itself(uwf, root_dir, tmp_path):
    """The kit reads .env for its own model calls but does not export it: a process the agent
    starts (a sub-workflow's child agents, a shell) sees no key."""
    agent = tmp_path / "env_agent.py"
    agent.write_text(
        "import os, subprocess, sys\n"
        "from uwf_core.api import run_agent\n"
        "def run(ctx):\n"
        "    seen = subprocess.run(['env'], capture_output=True, text=True).stdout\n"
        f"    open({str(tmp_path / 'child_env')!r}, 'w').write(seen)\n"
        "    return '---\\nthesis: t\\nkeyPoints: [a]\\n---\\n'\n"
        "sys.exit(run_agent('env-agent', run, llm_fallback=False))\n"
    )
    _config(root_dir, f"  kit:\n    command: {sys.executable}\n    args: [{agent}]\n")
    thread = _thread(uwf)
    result = uwf("thread", "step", thread, "--agent", "kit")
    assert result.code == 0, result
    child = (tmp_path / "child_env").read_text()
    assert OTHER_TOKEN not in child and PROVIDER_KEY not in child
