"""Known agent CLIs as ready-made config entries (`uwf setup --agent-preset NAME`)."""

from __future__ import annotations

from .model import AgentConfig

# Agent CLIs as text-protocol entries, with the command lines their own docs give.
# {prompt} is replaced by the assembled prompt; without it, the prompt goes to stdin.
PRESETS: dict[str, AgentConfig] = {
    "claude": AgentConfig("claude", "claude", ("-p", "--output-format", "text"), "text"),
    "codex": AgentConfig("codex", "codex", ("exec", "--sandbox", "workspace-write", "-"), "text"),
    "hermes": AgentConfig("hermes", "hermes", ("chat", "-q", "{prompt}", "--yolo", "--quiet"), "text"),
    "cursor-agent": AgentConfig("cursor-agent", "cursor-agent", ("-p", "{prompt}", "--output-format", "text", "--force"), "text"),
    "aider": AgentConfig("aider", "aider", ("--message", "{prompt}", "--yes-always", "--no-pretty", "--no-stream"), "text"),
}
