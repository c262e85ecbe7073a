"""`uwf init`: a working workflow project in a new or empty directory, from a template: the
workflow, canned answers so it runs offline at once (or python agents), a README and a test."""

from __future__ import annotations

import os

from ..errors import UwfError
from . import scaffold_files as files

PROMPT = "Write a short note on content-addressed storage"
TEMPLATES = {
    "review-loop": "a writer and a reviewer until the reviewer approves (offline: uwf-script)",
    "solve-issue": "planner, developer and reviewer, the reviewer can send it back (offline: uwf-script)",
    "python": "review-loop with python function agents (agents.py)",
}


def init_project(directory: str, template: str = "review-loop") -> list[str]:
    """The files written (paths relative to `directory`); refused for a directory with anything
    in it, so nothing of the user's is ever replaced."""
    if template not in TEMPLATES:
        raise UwfError(f"no template {template!r} (the templates: {', '.join(TEMPLATES)})")
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise UwfError(f"{directory} is a file, not a directory")
    if os.path.isdir(directory) and os.listdir(directory):
        raise UwfError(f"{directory} is not empty: uwf init writes a new project into a new or empty directory")
    wanted = _files(template)
    os.makedirs(directory, exist_ok=True)
    for name, text in wanted.items():
        with open(os.path.join(directory, name), "x", encoding="utf-8") as handle:
            handle.write(text)
    return list(wanted)


def _files(template: str) -> dict[str, str]:
    if template == "python":
        roles = ["writer", "reviewer", "writer", "reviewer"]
        readme = files.README.format(name="review-loop", template=template, setup=files.PYTHON_SETUP, prompt=PROMPT, slug="review_loop",
                                     bindings=" --agent writer=write --agent reviewer=review")
        return {"review-loop.yaml": files.REVIEW_LOOP, "agents.py": files.AGENTS_PY, "README.md": readme,
                "test_review_loop.py": files.TEST_PYTHON.format(prompt=PROMPT, roles=roles)}
    workflow, script = (files.SOLVE_ISSUE, files.SOLVE_ISSUE_SCRIPT) if template == "solve-issue" else (files.REVIEW_LOOP, files.REVIEW_LOOP_SCRIPT)
    roles = (["planner", "developer", "reviewer", "developer", "reviewer"] if template == "solve-issue"
             else ["writer", "reviewer", "writer", "reviewer"])
    slug = template.replace("-", "_")
    readme = files.README.format(name=template, template=template, setup=files.SCRIPT_SETUP.format(name=template), prompt=PROMPT,
                                 slug=slug, bindings="")
    return {f"{template}.yaml": workflow, f"{template}.script.yaml": script, "README.md": readme,
            f"test_{slug}.py": files.TEST_SCRIPT.format(name=template, prompt=PROMPT, roles=roles)}
