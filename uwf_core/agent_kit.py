"""The agent kit's documented import path (`from uwf_core.agent_kit import run_agent`); it lives in agents/kit.py."""

from .agents.kit import AgentAnswer, AgentContext, run_agent

__all__ = ["AgentAnswer", "AgentContext", "run_agent"]
