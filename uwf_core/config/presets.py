"""Known agent CLIs as ready-made config entries (`uwf setup --agent-preset NAME`).

Each line runs unattended (no question can hang a step) and runs only what the user asked:
nothing installs software, scrapes URLs, or runs commands a workspace configures (hooks,
test and lint commands, a `.env` that points the CLI elsewhere). Each names its CLI's state
directory as `state`: the agent gets a private copy of it for each run (engine/contain/state_dirs.py),
so what it writes there — memories, transcripts, config it rewrites, skills — never reaches the
sessions you run yourself; no preset writes anything outside the workspace as it is.
docs/how-to/agent-clis.md records the version each was tried with, inside the sandbox, and what it may
write, reach and run. A preset names no secret, since each CLI keeps its own login
(`uwf agent add NAME --secret VAR -- ...` for one that reads a key).
"""

from __future__ import annotations

from ..encoding.records import replace
from .model import AgentConfig, Config

PRESET_TIMEOUT = 1800.0  # seconds: an agent CLI doing real work takes minutes; none may hang forever

# For CLIs that take a prompt only as an argument (hermes, cursor-agent): an argument is seen by
# every local user (`ps`) and limited to 128 KiB, so the prompt goes in a file of the agent's
# private /tmp and the argument only says where it is.
PROMPT_FILE_TASK = (
    "Your whole task is in the file {prompt_file}. Read all of it first, then do what it says, "
    "and give your answer exactly in the format it asks for."
)


PRESETS: dict[str, AgentConfig] = {
    "claude": AgentConfig(
        "claude",
        "claude",
        (
            "-p", "--permission-mode", "acceptEdits", "--output-format", "text",
            "--setting-sources", "user",  # a workspace's .claude/settings*.json (its hooks) is not read
        ),
        "text",
        PRESET_TIMEOUT,
        env={"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},  # no telemetry, error reports or update checks
        # a private copy: its transcripts, memories and session files stay there; ~/.claude.json (MCP servers) is read-only
        state=("~/.claude/",),
    ),
    "codex": AgentConfig(
        "codex",
        "codex",
        (
            "exec", "--skip-git-repo-check", "--sandbox", "workspace-write",
            "-c", "sandbox_workspace_write.exclude_slash_tmp=true",  # its shell writes the workspace only
            "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true",
            "-",
        ),
        "text",
        PRESET_TIMEOUT,
        state=("${CODEX_HOME:-~/.codex}/",),  # it rewrites its config.toml and installs skills at every start: in its copy
    ),
    "aider": AgentConfig(
        "aider",
        "aider",
        (
            "--message-file", "{prompt_file}",
            "--yes-always", "--no-pretty", "--no-stream",
            "--no-detect-urls", "--disable-playwright",  # never scrape a URL or install a browser
            "--no-auto-commits", "--no-gitignore",  # committing is the workflow's call, not aider's
            "--no-auto-test", "--no-notifications",  # it runs no command the workspace could name
            "--no-check-update", "--no-show-release-notes", "--no-show-model-warnings", "--analytics-disable",
        ),
        "text",
        PRESET_TIMEOUT,
        # a workspace's own aider config, model settings (an api_base) and .env are not read
        hide=(".aider.conf.yml", ".aider.model.settings.yml", ".aider.model.metadata.json", ".env"),
    ),
    "hermes": AgentConfig(
        "hermes", "hermes", ("-z", PROMPT_FILE_TASK), "text", PRESET_TIMEOUT,
        state=("${HERMES_HOME:-~/.hermes}/",),  # its config.yaml, SOUL.md, memories and skills: its copy's
    ),
    "llm": AgentConfig(
        "llm", "llm", ("--no-stream", "--no-log"), "text", PRESET_TIMEOUT,
        state=("${LLM_USER_PATH:-~/.config/io.datasette.llm}/",),  # it opens its log database even with --no-log
    ),
    "cursor-agent": AgentConfig(
        "cursor-agent",
        "cursor-agent",
        ("-p", PROMPT_FILE_TASK, "--output-format", "text", "--force"),
        "text",
        PRESET_TIMEOUT,
    ),
}

# What the presets made writable before their state directories became private copies: an entry
# `uwf setup` wrote then, unchanged since, is read as today's preset (upgraded).
LEGACY_PLACES = {
    "claude": (("~/.claude/projects/", "~/.claude/.credentials.json"), ()),
    "codex": (("${CODEX_HOME:-~/.codex}/",), ()),
    "hermes": (("${HERMES_HOME:-~/.hermes}/",), ()),
    "llm": (
        ("${LLM_USER_PATH:-~/.config/io.datasette.llm}/",),
        tuple(f"${{LLM_USER_PATH:-~/.config/io.datasette.llm}}/{name}" for name in
              ("extra-openai-models.yaml", "keys.json", "default_model.txt", "aliases.json")),
    ),
}


def upgrade_presets(config: Config) -> Config:
    """config.yaml as read, each preset entry an earlier uwf wrote read as today's (`upgraded`)."""
    agents = {name: upgraded(agent) for name, agent in config.agents.items()}
    return config if agents == config.agents else replace(config, agents=agents)


def upgraded(agent: AgentConfig) -> AgentConfig:
    """A preset's entry as an earlier uwf wrote it (its CLI's state directory writable as it is)
    as today's preset; any other entry as it is."""
    for name, (writable, readable) in LEGACY_PLACES.items():
        preset = PRESETS[name]
        if (agent.writable, agent.readable, agent.state) == (writable, readable, ()) and (
            replace(agent, name=name, writable=(), readable=(), state=preset.state) == preset
        ):
            return replace(preset, name=agent.name)
    return agent


# Presets whose CLI prints more than its answer (aider: its banner first), so that uwf reads the
# answer with the extract model: `uwf setup` warns when none is configured.
NEEDS_EXTRACT_MODEL = frozenset({"aider"})
