"""A root whose steps are traced: a three-role workflow run by uwf-builtin against the tests'
OpenAI-compatible server (fake_openai.py), for the receiver and the Phoenix tests."""

from __future__ import annotations

from fake_openai import reply

KEY = "sk-test-TRACE-SECRET-0042"
THREE_STEPS = """\
name: three-steps
description: three roles in turn
roles:
{roles}
conditions: {{}}
graph:
  $START:
    - role: plan
      condition: null
  plan:
    - role: build
      condition: null
  build:
    - role: check
      condition: null
  check:
    - role: $END
      condition: null
"""
ROLE = """\
  {name}:
    description: does its part
    goal: Do the {name} part.
    procedure: Do it.
    output: Frontmatter with a note.
    meta:
      type: object
      properties:
        note: {{type: string}}
      required: [note]
"""


def setup_traced_root(uwf, tmp_path, base_url: str) -> None:
    """uwf-builtin as the default agent on `base_url`, and the three-steps workflow."""
    result = uwf(
        "setup", "--provider", "fake", "--base-url", base_url, "--api-key", KEY, "--model", "fake-model", "--summarizer", "off",
        "--agent", "builtin=uwf-builtin", "--default-agent", "builtin",
    )  # fmt: skip
    assert result.code == 0, result
    path = tmp_path / "three-steps.yaml"
    path.write_text(THREE_STEPS.format(roles="".join(ROLE.format(name=name) for name in ("plan", "build", "check"))))
    put = uwf("workflow", "put", str(path))
    assert put.code == 0, put


def traced_workspace() -> str:
    """A directory with a note in it, for uwf-builtin's list_dir to list."""
    import tempfile

    workspace = tempfile.mkdtemp(prefix="traced-")
    with open(f"{workspace}/notes.txt", "w") as notes:
        notes.write("a note\n")
    return workspace


def start_thread(uwf, env: dict | None = None) -> str:
    """A thread with a workspace of its own."""
    result = uwf("thread", "start", "three-steps", "-p", "Make a small thing.", "-w", traced_workspace(), env=env)
    assert result.code == 0, result
    return result.json()["thread"]


def queue_step(srv, step: int) -> None:
    """One step's LLM calls: a tool turn, then the answer (tokens differ per step to tell them apart)."""
    srv.add(
        reply(None, [("list_dir", {})], prompt_tokens=100 + step, completion_tokens=10 + step),
        reply(f"---\nnote: step {step} done\n---\nDone.", prompt_tokens=200 + step, completion_tokens=20 + step),
    )
