"""What an empty root says: where it will be created if it is new (a mistyped --root must not
look like an empty store), how to start a thread or get workflows, and how to configure an agent."""

from __future__ import annotations

import os

from rich.text import Text

from uwf_core.api import Repo, list_workflows


class Welcome:
    """The text for the pane a thread's output would fill, and the one-line toast that goes with it."""

    def __init__(self, repo: Repo) -> None:
        """Raises UwfError when the root cannot be read (the damage banner says why)."""
        self.location = repo.location
        self.workflows = [entry.name for entry in list_workflows(repo)]
        self.agent = repo.config.default_agent
        self.new = "://" not in self.location and not os.path.exists(self.location)

    def text(self) -> Text:
        text = Text()
        if self.new:
            text.append("A new root: ", style="bold yellow")
            text.append(self.location, style="bold")
            text.append(" does not exist yet.\nIt is created there when you put a workflow or start a thread; "
                        "if that is not the root you meant, q quits.\n\n")
        text.append("No threads yet.\n\n", style="bold")
        if self.workflows:
            text.append("• Press ")
            text.append("n", style="bold yellow")
            text.append(f" to start one from a workflow ({', '.join(self.workflows[:4])}).\n")
        else:
            text.append("• No workflows here: register one with ")
            text.append("uwf workflow put FILE", style="bold")
            text.append(",\n  or try the demo, the examples stepping offline: ")
            text.append("uwf-tui --demo", style="bold")
            text.append("\n")
        if not self.agent:
            text.append("• No agent is configured to step threads: ")
            text.append("uwf setup", style="bold")
            text.append("\n  (e.g. ")
            text.append("uwf setup --agent-preset claude --default-agent claude", style="bold")
            text.append("; `uwf agent presets` lists the others).\n")
        text.append("\n? shows every key.", style="dim")
        return text

    def toast(self) -> tuple[str, str]:
        """(message, title): where a short terminal shows it whole."""
        hint = "n starts one" if self.workflows else "`uwf-tui --demo` opens the examples"
        title = f"A new root: {self.location} does not exist yet" if self.new else "No threads yet"
        return f"{hint}{'' if self.agent else '; `uwf setup` configures an agent'}. ? shows every key.", title
