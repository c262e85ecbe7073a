"""`uwf-tui --demo`: a fresh root with the examples registered, the scripted agent
configured, and a few threads to look at, so a newcomer can step by keypress
with no API key."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from uwf_core.api import (
    Repo,
    SetupRequest,
    UwfError,
    apply_setup,
    list_threads,
    put_workflow,
    start_thread,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEMO_PROMPTS = {
    "solve-issue": "Users can log in with an empty password; the API answers 500.",
    "triage-bug": "Bug report: the app crashes when I press Enter on the login page.",
    "analyze-topic": "Why content-addressed storage suits agent workflows.",
}


def examples_dir() -> Path:
    """The examples: $UWF_EXAMPLES; else beside the package (a source checkout or an editable
    install); else where the wheel put them (<prefix>/share/uwf/examples: pip, pipx, uv tool)."""
    env = os.environ.get("UWF_EXAMPLES")
    if env:
        return Path(env)
    if EXAMPLES.is_dir():
        return EXAMPLES
    return Path(sys.prefix) / "share" / "uwf" / "examples"


def default_demo_root() -> str:
    return os.path.join(os.getcwd(), ".uwf-demo")


def setup_demo(path: str, *, threads: bool = True) -> Repo:
    """Register every example workflow, configure `uwf-script --script-dir <examples>`
    as the default agent, and start one thread per example (idempotent for workflows)."""
    examples = examples_dir()
    if not examples.is_dir():
        raise UwfError(f"the examples directory {examples} is missing (set UWF_EXAMPLES)")
    root = Repo.open(path)
    os.makedirs(root.location, exist_ok=True)
    for file in sorted(examples.glob("*.yaml")):
        if not file.name.endswith(".script.yaml"):
            put_workflow(root, str(file))
    apply_setup(root, SetupRequest(agents={"script": f"uwf-script --script-dir {examples}"}, default_agent="script"))
    if threads:
        if not list_threads(root, include_archived=True):
            for workflow, prompt in DEMO_PROMPTS.items():
                start_thread(root, workflow, prompt)
    return root
