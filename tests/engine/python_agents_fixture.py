"""Python agent functions the tests name by entry point (`tests.engine.python_agents_fixture:...`):
importable in uwf's process and in an isolated child alike."""

from __future__ import annotations

import asyncio
import os
import time

from uwf_core.api import PythonAnswer

ANSWERS = {
    "planner": {"plan": "p", "steps": ["s"]},
    "developer": {"filesChanged": ["a.py"], "summary": "s"},
}


def solve(ctx):
    """Answers solve-issue's roles; the reviewer approves the second time it runs."""
    if ctx.role == "reviewer":
        seen = sum(1 for step in ctx.steps if step.role == "reviewer")
        return {"approved": seen >= 1, "comments": "ok" if seen else "again"}
    return ANSWERS[ctx.role]


async def solve_async(ctx):
    await asyncio.sleep(0.01)
    return solve(ctx)


def raises(ctx):
    raise ValueError(f"no plan for {ctx.role}")


def sleeps(ctx):
    """Sleeps past any short deadline without looking at it."""
    time.sleep(float(os.environ.get("UWF_TEST_SLEEP", "3")))
    return solve(ctx)


def checks(ctx):
    """Works in pieces and stops at the deadline, as a cooperative function should."""
    while True:
        ctx.check()
        time.sleep(0.05)


async def sleeps_async(ctx):
    await asyncio.sleep(30)
    return solve(ctx)


def wrong_then_right(ctx):
    """Misses a required field, then answers the correction properly."""
    if ctx.correction is None:
        return {"plan": "p"}
    return ANSWERS["planner"]


def always_wrong(ctx):
    return {"plan": 3}


def text_answer(ctx):
    return "---\nplan: from text\nsteps: [one, two]\n---\nThe plan, in words.\n"


def leaks(ctx):
    """Returns the key it was handed, in the output and the detail."""
    key = ctx.secrets["UWF_TEST_KEY"]
    return PythonAnswer(output={"plan": f"use {key}", "steps": []}, detail={"note": f"key {key}", "model": "m1", "usage": {"promptTokens": 3, "completionTokens": 2}})


def prints(ctx):
    print("hello from", ctx.role)
    return solve(ctx)


def pid(ctx):
    return {"plan": str(os.getpid()), "steps": [os.getcwd()]}


def programs(ctx):
    """Runs a program, as a test runner would, and writes to descriptor 1 itself."""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", "print('child says hi')"], check=True)
    os.write(1, b"raw write\n")
    return solve(ctx)


def stuck(ctx):
    """Never looks at its deadline or its cancel flag."""
    time.sleep(60)
    return solve(ctx)


def returns_a_set(ctx):
    return {"plan": "p", "steps": {"a"}}


def reads_prompt(ctx):
    """Reads its prompt, as a function that calls a model would."""
    assert "## Task" in ctx.prompt
    return solve(ctx)
