"""A step-protocol test agent on the agent kit (tests only).

Answers each role from a JSON file of outputs (a role's n-th run in a thread gets the n-th, the
last one again after that), records a model and token usage in its detail as an LLM agent does,
and appends one line per call to a file, so a test can count the times an agent really ran.

    python counting_agent.py --answers FILE --calls FILE [--tokens N] [--model NAME] THREAD ROLE
"""

from __future__ import annotations

import json
import sys


def configure(parser) -> None:
    parser.add_argument("--answers", required=True, metavar="FILE")
    parser.add_argument("--calls", required=True, metavar="FILE")
    parser.add_argument("--tokens", type=int, default=100, metavar="N", help="prompt tokens per call (completion: half as many)")
    parser.add_argument("--model", default="test-model")


def run(ctx):
    import yaml

    from uwf_core.api import AgentAnswer

    options = ctx.options
    with open(options["calls"], "a", encoding="utf-8") as handle:
        handle.write(f"{ctx.thread} {ctx.role.name}\n")
    with open(options["answers"], encoding="utf-8") as handle:
        answers = json.load(handle)[ctx.role.name]
    index = ctx.count_of_role()
    output = answers[min(index, len(answers) - 1)]
    text = "---\n" + yaml.safe_dump(output, sort_keys=False) + f"---\nAnswer #{index + 1} of {ctx.role.name}.\n"
    tokens = options["tokens"]
    usage = {"promptTokens": tokens, "completionTokens": tokens // 2, "totalTokens": tokens + tokens // 2, "requests": 1}
    return AgentAnswer(text, {"model": options["model"], "usage": usage})


if __name__ == "__main__":
    from uwf_core.api import run_agent

    sys.exit(run_agent("counting-agent", run, configure=configure))
