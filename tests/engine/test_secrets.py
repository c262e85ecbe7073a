"""Secrets stay in .env: an agent receives only the keys its entry names, and a key that an
agent prints (answer, stderr, failure) is redacted before anything is stored or shown.
After each step the whole root is searched: no key may appear outside .env."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES
from fake_openai import FakeOpenAI, grounded, reply
from uwf_core.config.env import Secrets
from uwf_core.config.model import AgentConfig, Config, ProviderConfig

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
    writable = f"    writable: [{dumps}]\n"
    agents = _agent("plain", f'env > {dumps}/plain; printf -- "{ANSWER}"', writable) + _agent(
        "named", f'env > {dumps}/named; printf -- "{ANSWER}"', "    secrets: [DEPLOY_TOKEN]\n" + writable
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
    # Without a sandbox it can read .env behind uwf's back: what it prints is still redacted.
    script = f'echo "auth failed for $DEPLOY_TOKEN" >&2; tr "\\n" " " < "{root_dir}/.env" >&2; exit 4'
    _config(root_dir, _agent("leaky", script, "    secrets: [DEPLOY_TOKEN]\n"))
    thread = _thread(uwf)
    result = uwf("thread", "step", thread, "--agent", "leaky", env={"UWF_BWRAP": ""})
    assert result.code == 1
    assert "exited with code 4" in result.err
    assert "auth failed for [redacted:DEPLOY_TOKEN]" in result.err
    assert "OPENROUTER_API_KEY=[redacted:OPENROUTER_API_KEY] DEPLOY_TOKEN=[redacted:DEPLOY_TOKEN]" in result.err
    assert OTHER_TOKEN not in result.err and PROVIDER_KEY not in result.err
    runs = uwf("thread", "runs", thread).json()
    assert runs[-1]["status"] == "failed" and "[redacted:DEPLOY_TOKEN]" in runs[-1]["stderr"]
    assert _leaks(root_dir) == []


@pytest.mark.parametrize("after", [*(f"yes x | head -c {n} | tr -d '\\n'" for n in range(3975, 3990, 3)),
                                   "i=0; while [ $i -lt 1330 ]; do printf '\\342\\202\\254'; i=$((i+1)); done"])  # 1,330 euros: 3 bytes each
def test_the_stderr_kept_is_redacted_before_it_is_cut(uwf, root_dir, after):
    """The tail of a failing agent's stderr (2,000 characters) is cut after redaction, and the bytes
    kept as it came (4,000) lose a key's end their cut left: an adversary's trials saw
    `9abcdefXYZ...` stored, after ASCII and after three-byte characters."""
    script = f'printf "%s" "$DEPLOY_TOKEN" >&2; {after} >&2; exit 1'
    _config(root_dir, _agent("cut", script, "    secrets: [DEPLOY_TOKEN]\n"))
    thread = _thread(uwf)
    assert uwf("thread", "step", thread, "--agent", "cut").code == 1
    stored = uwf("thread", "runs", thread).json()[-1]["stderr"]
    assert not any(OTHER_TOKEN[start:] in stored for start in range(len(OTHER_TOKEN) - 4)), stored[:60]
    assert _leaks(root_dir) == []


def test_a_window_cut_inside_a_key_keeps_nothing_of_it():
    secrets = Secrets({"LONG_KEY": "k" * 10 + "-" + "0123456789" * 500, "TOKEN": "tok-deploy-abcdef987654"})
    long_key = secrets.by_name["LONG_KEY"]
    assert secrets.window(long_key[-4000:]) == ""  # a 5,011-character key (a PEM key is ~3,250): the whole window is its end
    assert secrets.window("abcdef987654 then the rest") == " then the rest"
    assert secrets.window("\ufffdf987654 and more tok-deploy-abcdef987654") == " and more [redacted:TOKEN]"
    assert secrets.window("nothing of a key here") == "nothing of a key here"


def test_the_extract_model_never_sees_a_key_the_agent_printed(uwf, root_dir):
    prose = f'echo "The thesis is that the key $DEPLOY_TOKEN works."'
    extracted = grounded({"thesis": "the key works", "keyPoints": ["works"]},
                         {"thesis": "the key [redacted:DEPLOY_TOKEN] works", "keyPoints": "works"})
    with FakeOpenAI([extracted]) as server:
        _config(root_dir, _agent("prose", prose, "    secrets: [DEPLOY_TOKEN]\n"), server.base_url)
        with (root_dir / "config.yaml").open("a") as handle:
            handle.write("defaultModel: m\nsummarizer: false\n")
        thread = _thread(uwf)
        result = uwf("thread", "step", thread, "--agent", "prose")
    assert result.code == 0, result
    sent = json.dumps(server.requests[0]["body"])
    assert OTHER_TOKEN not in sent and "[redacted:DEPLOY_TOKEN]" in sent
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {PROVIDER_KEY}"  # the extractor has its key
    assert _leaks(root_dir) == []


def test_a_step_agent_on_the_kit_redacts_what_it_writes(uwf, root_dir, tmp_path):
    """The kit redacts the keys it was handed (the provider's); a .env key it was not handed but
    came across (here, in its script) makes uwf refuse the step and remove what it wrote."""
    script = tmp_path / "script.yaml"
    script.write_text(f"analyst:\n  - |\n    ---\n    thesis: leaked {PROVIDER_KEY}\n    keyPoints: [x]\n    ---\n    body\n")
    other = tmp_path / "other.yaml"
    other.write_text(f"analyst:\n  - |\n    ---\n    thesis: leaked {OTHER_TOKEN}\n    keyPoints: [x]\n    ---\n    body\n")
    _config(root_dir, f"  scripted:\n    command: uwf-script\n    args: [--script, {script}]\n"
                      f"  other:\n    command: uwf-script\n    args: [--script, {other}]\n")
    thread = _thread(uwf)
    assert uwf("thread", "step", thread, "--agent", "scripted").code == 0
    assert uwf("thread", "steps", thread).json()[-1]["output"]["thesis"] == "leaked [redacted:OPENROUTER_API_KEY]"
    second = _thread(uwf)
    head = uwf("thread", "show", second).json()["head"]
    refused = uwf("thread", "step", second, "--agent", "other")
    assert refused.code == 1 and "wrote the value of DEPLOY_TOKEN into node" in refused.err, refused
    assert uwf("thread", "show", second).json()["head"] == head
    assert _leaks(root_dir) == []
    assert uwf("cas", "fsck").code == 0  # what it wrote went whole: no node names a removed one


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
    agent = f"  big:\n    command: sh\n    args: [-c, {json.dumps(command)}]\n    protocol: text\n    writable: [{tmp_path}]\n"
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
    _config(root_dir, f"  kit:\n    command: {sys.executable}\n    args: [{agent}]\n    writable: [{tmp_path}]\n")
    thread = _thread(uwf)
    result = uwf("thread", "step", thread, "--agent", "kit")
    assert result.code == 0, result
    child = (tmp_path / "child_env").read_text()
    assert OTHER_TOKEN not in child and PROVIDER_KEY not in child


CALLER_KEY = "sk-ant-from-the-callers-shell-0123456789"
CALLER_TOKEN = "ghp-callers-own-token-abcdef0123"


def test_a_key_from_the_callers_environment_is_stored_and_shown_nowhere(uwf, root_dir):
    """The docs tell users to export ANTHROPIC_API_KEY for Claude Code: an agent sees it, and
    whatever it prints of it (or of any variable named like a key) is redacted before anything is
    stored, printed, or sent to the extract model."""
    echoes = (
        'echo "using $ANTHROPIC_API_KEY and $MY_SERVICE_TOKEN" >&2; '
        'printf -- "---\\nthesis: key $ANTHROPIC_API_KEY\\nkeyPoints: [$MY_SERVICE_TOKEN]\\n---\\nbody $ANTHROPIC_API_KEY\\n"'
    )
    prose = 'echo "My thesis: the key $ANTHROPIC_API_KEY works."'
    fails = 'echo "401 for key $ANTHROPIC_API_KEY" >&2; exit 2'
    extracted = grounded({"thesis": "the key works", "keyPoints": ["it works"]},
                         {"thesis": "My thesis: the key [redacted:ANTHROPIC_API_KEY] works", "keyPoints": "works"})
    caller = {"ANTHROPIC_API_KEY": CALLER_KEY, "MY_SERVICE_TOKEN": CALLER_TOKEN}
    with FakeOpenAI([extracted]) as server:
        _config(root_dir, _agent("echoes", echoes) + _agent("prose", prose) + _agent("fails", fails), server.base_url)
        with (root_dir / "config.yaml").open("a") as handle:
            handle.write("defaultModel: m\nsummarizer: false\n")
        shown = ""
        for agent in ("echoes", "prose", "fails"):
            thread = _thread(uwf)
            result = uwf("thread", "step", thread, "--agent", agent, env=caller)
            assert result.code == (1 if agent == "fails" else 0), result
            shown += result.out + result.err + uwf("thread", "read", thread).out + uwf("thread", "runs", thread).out
        sent = json.dumps(server.requests)
    assert "[redacted:ANTHROPIC_API_KEY]" in shown and "[redacted:MY_SERVICE_TOKEN]" in shown
    for key in (CALLER_KEY, CALLER_TOKEN):
        assert key not in shown and key not in sent
        assert [str(path) for path in root_dir.rglob("*") if path.is_file() and key.encode() in path.read_bytes()] == []


def test_keys_from_the_environment_are_secrets_by_name_and_both_values_of_a_name_are_redacted():
    config = Config(agents={"a": AgentConfig("a", "x", secrets=("CUSTOM",))})
    environ = {"OPENAI_API_KEY": "sk-env-value-1234", "GH_TOKEN": "gh-token-value", "CUSTOM": "custom-value",
               "DB_PASSWORD": "hunter2-long", "HOME": "/home/someone", "TERM_PROGRAM": "terminal-app"}
    secrets = Secrets.of(config, {"OPENAI_API_KEY": "sk-dotenv-value-5678"}, environ)
    assert secrets.names == {"OPENAI_API_KEY", "GH_TOKEN", "CUSTOM", "DB_PASSWORD"}
    text = secrets.text("sk-env-value-1234 sk-dotenv-value-5678 /home/someone")
    assert text == "[redacted:OPENAI_API_KEY] [redacted:OPENAI_API_KEY] /home/someone"


def test_a_key_typed_into_a_prompt_is_stored_redacted_and_the_user_is_told(uwf, root_dir):
    """`thread start -p` and `thread resume -p`: a .env value (or a key of the environment) in the
    prompt never reaches the StartNode, so no agent, bundle or view ever sees it."""
    _config(root_dir, _agent("plain", f'printf -- "{ANSWER}"'))
    assert uwf("workflow", "put", str(EXAMPLES / "analyze-topic.yaml")).code == 0
    started = uwf("thread", "start", "analyze-topic", "-p", f"deploy with {OTHER_TOKEN} please",
                  env={"GITHUB_TOKEN": "ghp-environment-key-555"})
    assert started.code == 0, started
    assert "held the value of DEPLOY_TOKEN" in started.err and OTHER_TOKEN not in started.err
    thread = started.json()["thread"]
    prompt = uwf("cas", "get", "--payload", started.json()["head"]).json()["prompt"]
    assert prompt == "deploy with [redacted:DEPLOY_TOKEN] please"
    assert uwf("thread", "step", thread, "--agent", "plain").json()["done"] is True
    resumed = uwf("thread", "resume", thread, "-p", "now use ghp-environment-key-555", env={"GITHUB_TOKEN": "ghp-environment-key-555"})
    assert resumed.code == 0 and "held the value of GITHUB_TOKEN" in resumed.err, resumed
    assert "ghp-environment-key-555" not in uwf("thread", "read", thread).out
    assert _leaks(root_dir) == []
