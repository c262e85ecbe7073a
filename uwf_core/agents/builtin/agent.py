"""`uwf-builtin`: a tool-calling agent over any OpenAI-compatible endpoint.

The model comes from config.yaml (modelOverrides '<workflow>.<role>', '<role>'
or 'builtin', else defaultModel; or --model). Tools work inside the thread's
workspace; run_command and fetch_url only with --allow-run-command /
--allow-fetch-url in the agent's args. Every assistant message, tool call,
tool result (truncated) and token count goes into the detail node; API keys
are never recorded.
"""

from __future__ import annotations

import sys

from ...config.env import Secrets, env_with_secrets
from ...encoding.records import field, record
from ...errors import UwfError
from ...llm.client import ChatClient, model_alias_for, resolve_model
from ...llm.usage import Usage
from ...telemetry.spans import TOOL, content_on, span
from ..kit import AgentAnswer, AgentContext, make_undumpable, run_agent
from .tools import ToolSettings, call_tool, tool_definitions, truncate

NAME = "uwf-builtin"
DEFAULT_MAX_TURNS = 30
RECORD_CHARS = 2000

SYSTEM_PROMPT = (
    "You are an autonomous agent performing one role in a uwf workflow. Use the tools to inspect and change "
    "the workspace as your role requires. When your work is done, reply without calling tools, with your final "
    "answer in the deliverable format the task describes: a YAML frontmatter block, then a markdown body."
)
FINAL_REQUEST = (
    "You have used all your tool turns. Give your final answer now, in the deliverable format "
    "(YAML frontmatter, then a markdown body), without calling any tool."
)


def _configure(parser) -> None:
    parser.add_argument("--model", metavar="ALIAS", help="model alias from config.yaml (default: modelOverrides, then defaultModel)")
    parser.add_argument("--max-turns", type=int, default=DEFAULT_MAX_TURNS, metavar="N", help="tool-calling turns before a final answer is required")
    parser.add_argument("--allow-run-command", action="store_true", help="offer the run_command tool")
    parser.add_argument("--allow-fetch-url", action="store_true", help="offer the fetch_url tool")
    parser.add_argument("--command-timeout", type=float, default=120.0, metavar="S", help="run_command's default timeout")


@record
class Session:
    """One conversation: kept across corrections so `continue_` resumes it."""

    client: ChatClient
    settings: ToolSettings
    max_turns: int
    secrets: Secrets
    messages: list[dict] = field(default_factory=list)
    turns: list[dict] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    def record(self, text: object, limit: int = RECORD_CHARS) -> str:
        return truncate(self.secrets.text("" if text is None else str(text)), limit)

    def detail(self) -> dict:
        model = self.client.model
        return {
            "model": model.alias,
            "modelName": model.name,
            "provider": model.provider,
            "turns": self.turns,
            "usage": self.usage.to_json(),
            "tools": [tool["function"]["name"] for tool in tool_definitions(self.settings)],
        }


def _loop(session: Session) -> str:
    tools = tool_definitions(session.settings)
    for _ in range(session.max_turns):
        response = session.client.complete(session.messages, tools=tools)
        session.usage = session.usage + response.usage
        calls = response.tool_calls
        session.turns.append(
            {
                "role": "assistant",
                "content": session.record(response.content),
                "toolCalls": [
                    {"id": c.get("id"), "name": (c.get("function") or {}).get("name"), "arguments": session.record((c.get("function") or {}).get("arguments"))}
                    for c in calls
                ],
                "usage": response.usage.to_json(),
                "finishReason": response.finish_reason,
            }
        )
        message = {"role": "assistant", "content": response.content or None}
        if calls:
            message["tool_calls"] = calls
        session.messages.append(message)
        if not calls:
            return response.content
        for call in calls:
            function = call.get("function") or {}
            name = function.get("name") or ""
            with span(f"tool {name}", TOOL, {"tool.name": name, "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}) as traced:
                result, ok = call_tool(session.settings, name, function.get("arguments") or "{}")
                result = session.secrets.text(result)  # a key a tool turned up goes neither to the model nor to the record
                if content_on():
                    traced.put({"input.value": session.secrets.text(function.get("arguments") or "{}"), "output.value": result})
                if not ok:
                    traced.fail(result)
            session.messages.append({"role": "tool", "tool_call_id": call.get("id"), "content": result})
            session.turns.append({"role": "tool", "name": name, "ok": ok, "result": session.record(result)})
            sys.stderr.write(f"{NAME}: {name} -> {'ok' if ok else result[:120]}\n")
    session.messages.append({"role": "user", "content": FINAL_REQUEST})
    session.turns.append({"role": "user", "content": FINAL_REQUEST})
    response = session.client.complete(session.messages)
    session.usage = session.usage + response.usage
    session.turns.append({"role": "assistant", "content": session.record(response.content), "toolCalls": [], "usage": response.usage.to_json()})
    if response.tool_calls or not response.content.strip():
        raise UwfError(f"the model gave no final answer after {session.max_turns} tool turns (raise --max-turns?)")
    return response.content


def run(ctx: AgentContext) -> AgentAnswer:
    options = ctx.options
    if options.get("max_turns", 1) < 1:
        raise UwfError("--max-turns must be at least 1")
    config = ctx.repo.config
    alias = options.get("model") or model_alias_for(config, "builtin", ctx.workflow.name, ctx.role.name)
    model = resolve_model(config, alias, env_with_secrets(ctx.repo.env_values), purpose=f"{NAME} (role '{ctx.role.name}')")
    secrets = ctx.repo.secrets
    settings = ToolSettings(
        workspace=ctx.workspace,
        allow_run_command=bool(options.get("allow_run_command")),
        allow_fetch_url=bool(options.get("allow_fetch_url")),
        command_timeout=float(options.get("command_timeout") or 120.0),
        hidden_env=secrets.names,  # run_command's shell never sees a .env key
    )
    if settings.allow_run_command:
        make_undumpable()  # the keys it holds for its model calls stay out of its shell's reach
    session = Session(ChatClient(model, purpose="builtin"), settings, int(options.get("max_turns") or DEFAULT_MAX_TURNS), secrets)
    session.messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": ctx.prompt}]
    text = _loop(session)
    return AgentAnswer(text, session.detail(), session)


def continue_(ctx: AgentContext, session: Session, message: str) -> AgentAnswer:
    session.messages.append({"role": "user", "content": message})
    session.turns.append({"role": "user", "content": session.record(message)})
    text = _loop(session)
    return AgentAnswer(text, session.detail(), session)


def main(argv: list[str] | None = None) -> int:
    return run_agent(NAME, run, argv, continue_=continue_, configure=_configure, description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
