"""A function run in a process of its own (`isolate=True`): contained like any agent (its
sandbox, only the keys its registration names) and killed with its process group at its
step's deadline. Defined in the script being run: the child loads this file again by its path,
under another name than `__main__`, so the script's own work must be under the guard below —
as for multiprocessing.

    python examples/python/isolated.py            # in a throwaway root
"""

import sys
import tempfile
from pathlib import Path

from uwf_core.api import PythonContext, Repo, put_workflow, run_thread, start_thread, step_details, thread_steps


def write(ctx: PythonContext) -> dict[str, object]:
    """Runs in the child: it may call anything; the step's deadline is a hard one."""
    import os

    return {"draft": f"Written by process {os.getpid()}: {ctx.task}"}


def critique(ctx: PythonContext) -> dict[str, object]:
    """Runs in uwf's own process."""
    return {"approved": True, "notes": "fine"}


if __name__ == "__main__":
    repo = Repo.open(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="uwf-isolated-"))
    put_workflow(repo, Path(__file__).with_name("draft-review.yaml"))
    repo.agents.register("writer", write, isolate=True, timeout=60)
    repo.agents.register("critic", critique)
    thread = start_thread(repo, "draft-review", "an isolated writer", agents={"writer": "writer", "critic": "critic"}).thread
    result = run_thread(repo, thread)
    first = thread_steps(repo, thread)[0]
    detail = step_details(repo, first.hash).detail  # the step's record: how the function was called
    assert isinstance(detail, dict)
    print(f"done: {result.done} ({result.reason}); the writer ran {detail['call']}")
    print(first.output["draft"])
