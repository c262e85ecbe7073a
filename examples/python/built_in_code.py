"""A workflow built in code — no YAML file — checked exactly as `uwf workflow put` checks one,
and run by two functions.

    python examples/python/built_in_code.py            # in a throwaway root
"""

import sys
import tempfile

from uwf_core.api import PythonContext, Repo, RoleSpec, Route, WorkflowSpec, put_workflow, run_thread, start_thread

OBJECT = "object"

WORKFLOW = WorkflowSpec(
    name="outline-expand",
    description="An outliner and a writer who expands each point",
    roles={
        "outliner": RoleSpec(
            "Outlines the text", goal="You outline texts.", procedure="List three points for the task.",
            output="The points.",
            schema={"type": OBJECT, "properties": {"points": {"type": "array", "items": {"type": "string"}}}, "required": ["points"]},
        ),
        "writer": RoleSpec(
            "Expands the outline", goal="You write clear prose.", procedure="Write a paragraph per point.",
            output="The text.",
            schema={"type": OBJECT, "properties": {"text": {"type": "string"}}, "required": ["text"]},
        ),
    },
    graph={"$START": [Route("outliner")], "outliner": [Route("writer")], "writer": [Route("$END")]},
    max_steps=5,
)

repo = Repo.open(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="uwf-built-"))
put_workflow(repo, WORKFLOW)  # refused with every problem, each with its field, if the spec is wrong


@repo.agents.register("outliner")
def outline(ctx: PythonContext) -> dict[str, object]:
    return {"points": [f"what {ctx.task} is", "why it matters", "how to start"]}


@repo.agents.register("writer")
def expand(ctx: PythonContext) -> dict[str, object]:
    points = ctx.output_of("outliner")["points"]
    return {"text": "\n\n".join(f"{point.capitalize()}." for point in points)}


thread = start_thread(repo, "outline-expand", "content addressing", agents={"outliner": "outliner", "writer": "writer"}).thread
result = run_thread(repo, thread)
print(f"done: {result.done} ({result.reason}); thread {thread}")
