"""A step-protocol agent in 20 lines, on uwf's agent kit: run the tests, report.

Plays the `tester` role of examples/develop.yaml, for example:
  uwf thread start develop -p "..." -w DIR \
    --agent tester="$PWD/.venv/bin/python $PWD/examples/test_runner_agent.py --command 'pytest -q'"
(absolute paths: the agent runs in the workspace DIR)
"""

import json
import subprocess
import sys

from uwf_core.api import AgentAnswer, run_agent


def configure(parser):
    parser.add_argument("--command", default="python -m pytest -q", help="the test command, run in the workspace")


def run(ctx):
    done = subprocess.run(ctx.options["command"], shell=True, cwd=ctx.workspace, capture_output=True, text=True)
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
    output = {"passed": done.returncode == 0, "report": tail or f"exit code {done.returncode}"}
    return AgentAnswer(json.dumps(output), {"command": ctx.options["command"], "exitCode": done.returncode})


if __name__ == "__main__":
    sys.exit(run_agent("test-runner", run, configure=configure, llm_fallback=False))
