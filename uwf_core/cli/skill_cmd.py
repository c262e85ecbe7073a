"""`uwf skill [TOPIC]`: Markdown for an agent that drives uwf (the seeds' agent-consumable docs)."""

from __future__ import annotations

from .output import emit_text


def register(groups, common) -> None:
    from .skill_text import TOPICS

    parser = groups.add_parser(
        "skill",
        help="Markdown for an agent that drives uwf: the commands, authoring a workflow, writing an agent",
        description="What an agent needs to drive uwf, made from this uwf's own parser, linter and config: "
        + "; ".join(f"{name}: {text}" for name, text in TOPICS.items()) + ". No topic: the list.",
        parents=[common],
    )
    parser.add_argument("topic", nargs="?", choices=sorted(TOPICS), help="the topic (default: the list of topics)")
    parser.set_defaults(handler=cmd_skill)


def cmd_skill(args) -> int:
    from .skill_text import render

    emit_text(render(args.topic))
    return 0
