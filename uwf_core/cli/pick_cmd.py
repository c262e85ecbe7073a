"""`uwf thread step T --agents a,b [--pick first]` and `uwf thread pick STEP`: agents side by side."""

from __future__ import annotations

import argparse

from .common import command, repo_of
from .output import emit_json


def register_step_options(step) -> None:
    step.add_argument(
        "--agents", type=_agent_list, metavar="A,B,...",
        help="run the step once per agent, at the same time, each in a fork of the head (the thread does not move)",
    )
    step.add_argument(
        "--pick", choices=["first"],
        help="with --agents: move the thread to the first valid answer and cancel the other agents",
    )


def register(sub, common) -> None:
    pick = command(sub, common, "pick", cmd_pick, "move a thread to a step of one of its forks (a candidate of `step --agents`)")
    pick.add_argument("step", help="the chosen StepNode (hash or prefix)")
    pick.add_argument("--thread", metavar="THREAD", help="the thread to move (default: the one at an earlier step of STEP)")


def _agent_list(text: str) -> list[str]:
    agents = [name.strip() for name in text.split(",")]
    if any(not name for name in agents):
        raise argparse.ArgumentTypeError(f"expected agent names separated by commas, got {text!r}")
    return agents


def cmd_step_agents(args, repo, options) -> int:
    """`thread step --agents`: cmd_step's, once it has built the step options."""
    from ..engine.fanout.side_by_side import step_side_by_side
    from ..errors import UsageError

    if args.agent:
        raise UsageError("--agent and --agents exclude each other: --agents names every agent")
    result = step_side_by_side(repo, args.thread, args.agents, options, args.pick)
    emit_json(result.to_json())
    return 0


def cmd_pick(args) -> int:
    from ..engine.fanout.side_by_side import pick_step

    emit_json(pick_step(repo_of(args), args.step, args.thread).to_json())
    return 0
