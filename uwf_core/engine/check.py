"""`uwf agent test`: one tiny step through an agent, exactly as a real step would run it, in a
scratch root that is deleted afterwards, so the user's threads, registry and runs.jsonl
never see it."""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from ..encoding.records import record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import UwfError
from .attempt import StepError, StepOptions

if TYPE_CHECKING:
    from typing import Any

    from ..repo import Repo
    from .attempt import OutputCallback
    from .resolve import ResolvedAgent

CHECK_WORKFLOW = """\
name: uwf-agent-check
description: One role that proves an agent can take a prompt and answer in the format uwf reads.
roles:
  check:
    description: Answers a connectivity check from `uwf agent test`
    goal: This is a connectivity check of an agent by `uwf agent test`. Do not use tools or change files.
    procedure: Put the single word pong in the answer field.
    output: Nothing else is needed under the frontmatter.
    meta:
      type: object
      properties:
        answer:
          type: string
      required: [answer]
graph:
  $START:
    - role: check
  check:
    - role: $END
"""
CHECK_PROMPT = "Reply with answer: pong"
DEFAULT_CHECK_TIMEOUT = 120.0
MAX_CHECK_TIMEOUT = 300.0  # a preset's 1800 s is for real work; a check that long is a hang


@record(frozen=True)
class AgentCheck:
    """How one agent did: ok with its answer, or the one error a user needs."""

    agent: str
    ok: bool
    seconds: float
    answer: object = None
    error: str | None = None
    stderr_first_line: str | None = None
    containment: str | None = None  # "bubblewrap", "process-group" (no sandbox: why), or "none" (a python function in uwf)
    warning: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"agent": self.agent, "ok": self.ok, "seconds": round(self.seconds, 2)}
        if self.containment:
            data["containment"] = self.containment
        if self.ok:
            data["answer"] = self.answer
        else:
            data["error"] = self.error
            if self.stderr_first_line:
                data["stderr"] = self.stderr_first_line
        return data


def check_agent(repo: Repo, agent: str, *, timeout: float | None = None, on_output: OutputCallback | None = None) -> AgentCheck:
    """Step a one-role thread with `agent` (an alias or a command line) in a throwaway root that
    carries this root's config.yaml and .env, so the agent is resolved and given keys exactly as
    in a real step. `timeout` defaults to the entry's own up to MAX_CHECK_TIMEOUT, else
    DEFAULT_CHECK_TIMEOUT."""
    from ..repo import Repo
    from ..store.files import atomic_write, read_text
    from ..thread.model import StepNode
    from ..thread.ops import start_thread
    from ..workflow.ops import put_workflow
    from .resolve import resolve_agent
    from .contain.sandbox import BUBBLEWRAP, PROCESS_GROUP, containment
    from .step import perform_step

    config = repo.config
    resolved = resolve_agent(config, "uwf-agent-check", "check", override=agent)
    box = containment()
    kind = BUBBLEWRAP if resolved.sandbox and box.kind == BUBBLEWRAP else PROCESS_GROUP
    warning = None
    if resolved.protocol == "python" and not resolved.isolate:
        kind = "none"  # a function in uwf's own process (isolate: process runs it contained)
    elif not resolved.sandbox:
        warning = f"agent '{resolved.label}' runs without a sandbox (sandbox: false): it can write anywhere you can and read the root's .env"
    elif kind != BUBBLEWRAP:
        warning = f"agents run without a sandbox here: {box.reason}"
    report = {"containment": kind, "warning": warning}
    if resolved.protocol == "python":
        return _check_function(repo, resolved, report)
    if timeout is None:
        timeout = min(resolved.timeout, MAX_CHECK_TIMEOUT) if resolved.timeout else DEFAULT_CHECK_TIMEOUT
    scratch = tempfile.mkdtemp(prefix="uwf-agent-check-")
    started = time.monotonic()
    try:
        root = os.path.join(scratch, "root")
        workspace = os.path.join(scratch, "workspace")
        os.makedirs(workspace)
        check = Repo.open(root)
        check.save_config(config)
        env_text = read_text(repo.env_path)
        if env_text:
            atomic_write(check.env_path, env_text.encode("utf-8"), mode=0o600)
        definition = os.path.join(scratch, "check.yaml")
        atomic_write(definition, CHECK_WORKFLOW.encode("utf-8"))
        put_workflow(check, definition)
        info = start_thread(check, "uwf-agent-check", CHECK_PROMPT, workspace=workspace)
        try:
            result = perform_step(check, info.thread, StepOptions(agent=agent, timeout=timeout, on_output=on_output, checks=False, traced=False))
        except StepError as exc:
            error = exc.message.replace(check.env_path, repo.env_path)  # the user's .env, not the scratch copy
            return AgentCheck(
                resolved.label, False, time.monotonic() - started, error=error, stderr_first_line=_first_line(exc.stderr), **report
            )
        except UwfError as exc:
            error = exc.message.replace(check.env_path, repo.env_path)
            return AgentCheck(resolved.label, False, time.monotonic() - started, error=error, **report)
        step = StepNode.from_payload(check.nodes.get(result.head).payload)
        output = check.nodes.payload(step.output)
        return AgentCheck(resolved.label, True, time.monotonic() - started, answer=output.get("answer"), **report)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _check_function(repo: Repo, resolved: ResolvedAgent, report: dict[str, Any]) -> AgentCheck:
    """A python agent is written for its own roles (the check's pong role is not one): it is
    imported, as a step would, and named by what identifies its code; a step of its role tries it."""
    from .python.load import check_unrun, function_of

    started = time.monotonic()
    try:
        function = function_of(repo, resolved)
        if resolved.isolate and resolved.label not in repo.agents.functions:
            check_unrun(function.target)
    except UwfError as exc:
        return AgentCheck(resolved.label, False, time.monotonic() - started, error=f"python agent '{resolved.label}': {exc.message}", **report)
    how = "found and compiled, not run (it is imported in its own process, at a step)" if resolved.isolate else "imported"
    answer = {**function.to_detail(), "note": f"{how}; a python function is tried by a step of its own role"}
    return AgentCheck(resolved.label, True, time.monotonic() - started, answer=answer, **report)


def _first_line(text: str | None) -> str | None:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:200]
    return None

