"""Async functions as agents: each awaits (a model SDK's call, in real use) and is cancelled at
its step's deadline. No model, no network: the sleeps stand for the calls.

    python examples/python/async_agents.py            # in a throwaway root
    python examples/python/async_agents.py ROOT       # in ROOT (then: uwf-tui --root ROOT)
"""

import asyncio
import sys
import tempfile
from pathlib import Path

from uwf_core.api import PythonContext, Repo, put_workflow, run_thread, start_thread, thread_steps

repo = Repo.open(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="uwf-async-"))
put_workflow(repo, Path(__file__).with_name("draft-review.yaml"))


@repo.agents.register("writer", timeout=30)
async def write(ctx: PythonContext) -> dict[str, object]:
    await asyncio.sleep(0.1)  # the model's call
    notes = ctx.output_of("critic")
    return {"draft": f"On {ctx.task}" + (f" ({notes['notes']})" if notes else "")}


@repo.agents.register("critic", timeout=30)
async def critique(ctx: PythonContext) -> dict[str, object]:
    await asyncio.sleep(0.1)
    draft = ctx.output_of("writer")["draft"]
    return {"approved": "(" in draft, "notes": "say why"}


thread = start_thread(repo, "draft-review", "asynchronous agents", agents={"writer": "writer", "critic": "critic"}).thread
result = run_thread(repo, thread)
print(f"done: {result.done} ({result.reason}) in {len(thread_steps(repo, thread))} steps; thread {thread}")
