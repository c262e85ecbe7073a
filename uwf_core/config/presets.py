"""Known agent CLIs as ready-made config entries (`uwf setup --agent-preset NAME`).

Each line runs unattended (no question can hang a step) and safely (nothing installs
software, scrapes URLs or reaches outside the workspace unasked). docs/agents.md records
the version each was tried with and what worked; a preset names no secret, since each CLI
keeps its own login (`uwf agent add NAME --secret VAR -- ...` for one that reads a key).
"""

from __future__ import annotations

from .model import AgentConfig

PRESET_TIMEOUT = 1800.0  # seconds: an agent CLI doing real work takes minutes; none may hang forever

# {prompt_file} where the CLI reads a file, stdin where it reads that; {prompt} only when the
# CLI takes neither (a prompt over 128 KiB is then refused with a clear error before spawning).
PRESETS: dict[str, AgentConfig] = {
    "claude": AgentConfig(
        "claude", "claude", ("-p", "--permission-mode", "acceptEdits", "--output-format", "text"), "text", PRESET_TIMEOUT
    ),
    "codex": AgentConfig(
        "codex", "codex", ("exec", "--skip-git-repo-check", "--sandbox", "workspace-write", "-"), "text", PRESET_TIMEOUT
    ),
    "aider": AgentConfig(
        "aider",
        "aider",
        (
            "--message-file", "{prompt_file}",
            "--yes-always", "--no-pretty", "--no-stream",
            "--no-detect-urls", "--disable-playwright",  # never scrape a URL or install a browser
            "--no-auto-commits", "--no-gitignore",  # committing is the workflow's call, not aider's
            "--no-check-update", "--no-show-release-notes", "--no-show-model-warnings", "--analytics-disable",
        ),
        "text",
        PRESET_TIMEOUT,
    ),
    "hermes": AgentConfig("hermes", "hermes", ("-z", "{prompt}"), "text", PRESET_TIMEOUT),
    "llm": AgentConfig("llm", "llm", ("--no-stream", "--no-log"), "text", PRESET_TIMEOUT),
    "cursor-agent": AgentConfig(
        "cursor-agent", "cursor-agent", ("-p", "{prompt}", "--output-format", "text", "--force"), "text", PRESET_TIMEOUT
    ),
}
