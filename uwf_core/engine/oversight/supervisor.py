"""The seeds' supervisor and summarizer: uwf's own LLM checks on a thread.

Every `supervisorInterval` steps (the workflow's, else config.yaml's) a supervisor model reads the
task and the recent steps and answers `continue` or `kill`; on `kill` the thread ends (reason
killed, the supervisor's reason in the archive record, return code 1). When a thread finishes, a
summarizer model (`modelOverrides.summarizer`) writes one summary of the run into the archive
record. Both are StepNodes in the thread's chain with reserved roles (`$supervisor`, `$summary`),
so they are auditable, shown as rows of their own, priced by the ledger and counted against a
budget; the moderator, conditions and agents' prompts never see them (thread/context.py).

Models (step_checks.model_alias, passed in): the alias named `supervisor` / `summarizer` in config.yaml's models (the
seeds' names), else `modelOverrides.supervisor` / `.summarizer`, else `defaultModel` for the
supervisor. The calls go through uwf's OpenAI-compatible client, with the root's keys.
"""

from __future__ import annotations

import json
import time

from ...encoding.records import record
from ...errors import UwfError
from ...store.builtin_schemas import BUILTIN_HASHES
from ...thread.model import (
    SUMMARIZER_AGENT,
    SUMMARY_ROLE,
    SUPERVISOR_AGENT,
    SUPERVISOR_ROLE,
    ThreadContext,
)
from ...thread.nodes import read_step
from ...thread.write import write_step

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Callable

    from ...repo import Repo
    from ...workflow.model import Workflow

KILL = "kill"
CONTINUE = "continue"

DECISION_SCHEMA = {
    "title": "supervisor-decision",
    "description": "uwf's supervisor: whether a thread goes on, and why",
    "type": "object",
    "additionalProperties": False,
    "required": ["decision", "reason"],
    "properties": {"decision": {"type": "string", "enum": [CONTINUE, KILL]}, "reason": {"type": "string"}},
}
SUMMARY_SCHEMA = {
    "title": "thread-summary",
    "description": "uwf's summarizer: one account of a finished run",
    "type": "object",
    "additionalProperties": False,
    "required": ["summary"],
    "properties": {"summary": {"type": "string"}},
}

SUPERVISOR_PROMPT = (
    "You supervise a thread of a multi-role agent workflow. Read the task and the most recent steps and decide "
    'whether the thread should go on. Reply with one JSON object and nothing else: {"decision": "continue" or '
    '"kill", "reason": "<one sentence>"}. Kill only a thread that is looping without progress, has left its '
    "task, or is doing something harmful; otherwise continue."
)
SUMMARIZER_PROMPT = (
    "You write the summary of a finished run of a multi-role agent workflow for someone who did not watch it: "
    "what was asked, what each role did, and how it ended, in a few plain sentences. Reply with the summary only."
)
MAX_OUTPUT_CHARS = 1500  # of one step's output in a check's prompt
MAX_SUMMARY_CHARS = 4000
SUPERVISED_STEPS = 10  # at most this many recent steps go to the supervisor
SUMMARIZED_STEPS = 30


class CheckError(UwfError):
    """A supervisor or summarizer call that could not be made or answered nonsense."""


@record(frozen=True)
class Check:
    head: str  # the check's StepNode
    decision: str | None  # the supervisor's: continue or kill (None for a summary)
    text: str  # the supervisor's reason, or the summary

    @property
    def kills(self) -> bool:
        return self.decision == KILL


def supervise(repo: Repo, context: ThreadContext, workflow: Workflow, alias: str | None, time_left: Callable[[], float | None] | None = None) -> Check:
    """Ask the supervisor (model `alias`) about the thread at `context` (its head is the newest
    step) and record its decision as a `$supervisor` step after it."""
    steps = list(context.steps[-min(SUPERVISED_STEPS, context.since_start) :])
    first = context.since_start - len(steps) + 1
    text = "\n\n".join(
        [
            _task(context, workflow),
            f"Steps taken since the start: {context.since_start} (maxSteps {workflow.max_steps}). The most recent:",
            *(_step_text(first + i, step) for i, step in enumerate(steps)),
        ]
    )
    started = int(time.time() * 1000)
    answer, usage, model = _complete(repo, "supervisor", alias, SUPERVISOR_PROMPT, text, time_left, json_mode=True)
    decision, reason = _decision(answer)
    output = {"decision": decision, "reason": reason}
    head = _record(repo, context, SUPERVISOR_ROLE, DECISION_SCHEMA, output, SUPERVISOR_AGENT, text, answer, usage, model, started)
    return Check(head, decision, repo.secrets.text(reason))  # as the node holds it


def summarize(repo: Repo, context: ThreadContext, workflow: Workflow, alias: str | None, time_left: Callable[[], float | None] | None = None) -> Check:
    """Ask the summarizer (model `alias`) for one summary of the run at `context` and record it as
    a `$summary` step after its head."""
    steps = list(context.steps[-min(SUMMARIZED_STEPS, context.since_start) :]) if context.since_start else []
    first = context.since_start - len(steps) + 1
    text = "\n\n".join([_task(context, workflow), "The steps of the run:", *(_step_text(first + i, s) for i, s in enumerate(steps))])
    started = int(time.time() * 1000)
    answer, usage, model = _complete(repo, "summarizer", alias, SUMMARIZER_PROMPT, text, time_left, json_mode=False)
    summary = answer.strip()
    if not summary:
        raise CheckError(f"the summarizer ({model.describe()}) answered with no text")
    summary = summary if len(summary) <= MAX_SUMMARY_CHARS else summary[: MAX_SUMMARY_CHARS - 1] + "…"
    head = _record(repo, context, SUMMARY_ROLE, SUMMARY_SCHEMA, {"summary": summary}, SUMMARIZER_AGENT, text, answer, usage, model, started)
    return Check(head, None, repo.secrets.text(summary))  # as the node holds it


def _task(context: ThreadContext, workflow: Workflow) -> str:
    prompt = context.start.prompt if len(context.start.prompt) <= 4000 else context.start.prompt[:3999] + "…"
    return f"Workflow: {workflow.name} ({workflow.description})\nRoles: {', '.join(workflow.roles)}\n\nTask:\n{prompt}"


def _step_text(number: int, step) -> str:
    output = json.dumps(step.output, ensure_ascii=False, sort_keys=True)
    output = output if len(output) <= MAX_OUTPUT_CHARS else output[: MAX_OUTPUT_CHARS - 1] + "…"
    return f"Step {number}: {step.role} (agent: {step.agent})\n{output}"


def _complete(repo: Repo, purpose: str, alias: str | None, system: str, text: str, time_left, *, json_mode: bool):
    """(the answer's text, its usage, the model) from one chat completion; secrets redacted first."""
    from ...config.env import env_with_secrets
    from ...llm.client import ChatClient, resolve_model

    try:
        model = resolve_model(repo.config, alias, env_with_secrets(repo.env_values), purpose=f"the {purpose}")
        messages = [{"role": "system", "content": system}, {"role": "user", "content": repo.secrets.text(text)}]
        response = ChatClient(model, time_left=time_left, purpose=purpose).complete(messages, json_mode=json_mode)
    except UwfError as exc:
        raise CheckError(f"the {purpose} could not be asked: {exc.message}") from None
    return response.content, response.usage, model


def _decision(answer: str) -> tuple[str, str]:
    text = answer.strip()
    if text.startswith("```"):  # a fenced answer, despite JSON mode
        text = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    decision = data.get("decision") if isinstance(data, dict) else None
    decision = decision.strip().lower() if isinstance(decision, str) else None
    if decision not in (CONTINUE, KILL):
        raise CheckError(f"the supervisor answered {answer.strip()[:120]!r}, not {{\"decision\": \"continue\" or \"kill\", \"reason\": ...}}")
    reason = data.get("reason")
    return decision, reason.strip() if isinstance(reason, str) and reason.strip() else "(no reason given)"


def _record(repo: Repo, context: ThreadContext, role: str, schema: dict, output: dict, agent: str, prompt: str, answer: str, usage, model, started: int) -> str:
    """The check as a StepNode after the head, with the files of the step before it (a check
    changes none), its prompt and answer as content nodes and its usage priced like any step's."""
    store = repo.nodes
    secrets = repo.secrets
    content = BUILTIN_HASHES["content"]
    with store.nodes.batch():
        detail = {
            "agent": agent,
            "protocol": role[1:],
            "model": model.alias,
            "modelName": model.name,
            "usage": usage.to_json(),
            "prompt": store.put(content, secrets.text(prompt)),
            "content": store.put(content, secrets.text(answer)),
        }
        files = read_step(store, context.head).files if not context.head_is_start else context.start.files
        return write_step(
            store,
            start=context.start_hash,
            prev=None if context.head_is_start else context.head,
            role=role,
            meta=store.put_schema(schema),
            output=secrets.redact(output),
            agent=agent,
            detail=detail,
            started_ms=started,
            files=files,
        )
