"""A thread as markdown: the prompt, then each step's role, agent, structured
output and body. The newest steps are kept when a quota is given."""

from __future__ import annotations

import time

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..encoding.frontmatter import split_frontmatter
from ..errors import UwfError
from ..store.builtin_schemas import BUILTIN_HASHES
from ..store.cas import CasStore
from ..workflow.ops import workflow_of
from .context import context_of
from .details import ordered_output
from .model import StepContext, is_check_role, numbered
from .ops import thread_info
from .usage import step_usage, thread_usage

if TYPE_CHECKING:
    from typing import Any

    from ..repo import Repo


def _when(ms: int | None) -> str:
    if not ms:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + " UTC"


def step_body(store: CasStore, step: StepContext) -> str:
    """The markdown body of a step: its answer's text after the frontmatter."""
    try:
        detail = store.get(step.detail)
    except UwfError:
        return ""
    text = None
    if detail.type == BUILTIN_HASHES["content"] and isinstance(detail.payload, str):
        text = detail.payload
    elif isinstance(detail.payload, dict):
        content = detail.payload.get("content")
        if isinstance(content, str) and store.has(content):
            payload = store.payload(content)
            text = payload if isinstance(payload, str) else None
        elif isinstance(detail.payload.get("body"), str):
            text = detail.payload["body"]
    if text is None:
        return ""
    block = split_frontmatter(text)
    return (block[1] if block else text).strip()


def _render_step(store: CasStore, number: int, step: StepContext, schema: dict[str, Any] | None) -> str:
    import yaml

    when = _when(step.completed_at)
    took = ""
    if step.started_at and step.completed_at:
        took = f", {max(0, step.completed_at - step.started_at) / 1000:.1f}s"
    used = step_usage(store, step)
    tokens = f", {used.total_tokens:,} tokens" if used.requests else ""
    title = f"After step {number}: {step.role}" if is_check_role(step.role) else f"{number}. {step.role}"
    lines = [f"## {title} — {step.agent}", "", f"_step {step.hash}{', ' + when if when else ''}{took}{tokens}_", ""]
    if step.instruction:
        lines += [f"> {line}" for line in step.instruction.strip().splitlines()] + [""]
    output = yaml.safe_dump(ordered_output(step.output, schema), sort_keys=False, allow_unicode=True).rstrip()
    lines += ["```yaml", output, "```", ""]
    body = step_body(store, step)
    if body:
        lines += [body, ""]
    return "\n".join(lines)


def _schema(store: CasStore, meta: str) -> dict[str, Any] | None:
    try:
        return store.schema(meta)
    except UwfError:
        return None


def _checks(count: int) -> str:
    return f" and {count} check{'s' if count != 1 else ''}" if count else ""


def read_thread(repo: Repo, thread: str, *, quota: int | None = None, before: str | None = None) -> str:
    """The thread as one markdown document (`uwf thread read`), for a person or an LLM; `quota`
    (characters) keeps the newest steps, `before` stops before a step."""
    store = repo.nodes
    info = thread_info(repo, thread)
    context = context_of(repo, info.head, with_checks=True)
    workflow = workflow_of(repo, context.start.workflow)
    steps = numbered(context.steps)
    workflow_steps = sum(1 for _, step in steps if not is_check_role(step.role))
    if before:
        target = store.resolve(before)
        positions = [i for i, (_, step) in enumerate(steps) if step.hash == target]
        if not positions:
            raise UwfError(f"{target} is not a step of thread {info.thread}")
        steps = steps[: positions[0]]
    status = "active" if info.active else f"archived ({info.reason})"
    total = thread_usage(store, context.steps)
    tokens = (
        f", {total.total_tokens:,} tokens ({total.prompt_tokens:,} prompt, {total.completion_tokens:,} completion)"
        if total.requests
        else ""
    )
    header = [
        f"# Thread {info.thread} — {workflow.name}",
        "",
        f"_{status}, head {info.head}, {workflow_steps} step{'s' if workflow_steps != 1 else ''}{_checks(len(steps) - workflow_steps)}{tokens}_",
        "",
        "## Prompt",
        "",
        context.start.prompt.strip(),
        "",
    ]
    head_text = "\n".join(header)
    schemas = {name: _schema(store, role.meta) for name, role in workflow.roles.items()}
    blocks = [_render_step(store, number, step, schemas.get(step.role)) for number, step in steps]
    if quota is not None:
        budget = quota - len(head_text)
        kept: list[str] = []
        for block in reversed(blocks):
            if len(block) > budget and kept:
                break
            kept.append(block)
            budget -= len(block)
        kept.reverse()
        omitted = len(blocks) - len(kept)
        if omitted:
            kept.insert(0, f"_({omitted} earlier step{'s' if omitted > 1 else ''} omitted by --quota)_\n")
        blocks = kept
    text = (head_text + "\n" + "\n".join(blocks)).rstrip() + "\n"
    if quota is not None and len(text) > quota:
        text = text[: max(0, quota - 2)].rstrip() + "…\n"  # the quota counts the final newline
    return text
