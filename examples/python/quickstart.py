"""uwf's counterpart of LangGraph's quick start: a workflow whose agents are Python functions,
run to its end in one process. No model, no network: swap the bodies of `write` and `critique`
for calls to the model SDK you use (return a dict matching the role's schema, or an answer text).

    python examples/python/quickstart.py            # in a throwaway root
    python examples/python/quickstart.py ROOT       # in ROOT (then: uwf-tui --root ROOT)
"""

import sys
import tempfile
from pathlib import Path

from uwf_core.api import PythonContext, Repo, put_workflow, run_thread, start_thread, thread_steps

repo = Repo.open(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="uwf-quickstart-"))
put_workflow(repo, str(Path(__file__).with_name("draft-review.yaml")))


@repo.agents.register("writer")
def write(ctx: PythonContext) -> dict[str, object]:
    notes = ctx.output_of("critic")
    draft = (ctx.output_of("writer") or {}).get("draft", f"A first draft of: {ctx.task}")
    if notes:
        draft = f"{draft}\n(revised: {notes['notes']})"
    return {"draft": draft}


@repo.agents.register("critic")
def critique(ctx: PythonContext) -> dict[str, object]:
    draft = ctx.output_of("writer")["draft"]
    if "revised" not in draft:
        return {"approved": False, "notes": "make it shorter"}
    return {"approved": True, "notes": "good"}


thread = start_thread(repo, "draft-review", "A haiku about version control", agents={"writer": "writer", "critic": "critic"}).thread
result = run_thread(repo, thread, on_step=lambda step: print(f"{step.role:>7} -> {step.head}"))
print(f"done: {result.done} ({result.reason}); root {repo.location}, thread {thread}")
print("the approved draft:", [step.output for step in thread_steps(repo, thread) if step.role == "writer"][-1]["draft"])
