"""The agent kit: write a step-protocol agent in Python by supplying `run(ctx)`
(and, for corrections, `continue_(ctx, session, message)`).

The kit parses `<agent> [options] <thread-id> <role>`, loads the root's .env,
builds the thread's context and the prompt, calls `run`, extracts the
structured output from the answer (frontmatter fast path, then the LLM
fallback when a model is configured, then up to two corrections through
`continue_`), writes output + detail + StepNode, and prints the StepNode's
hash. Every failure becomes one clear line on stderr and a non-zero exit.
"""

from __future__ import annotations

import os
import sys
import time
from functools import cached_property

from ..encoding.records import field, record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import UwfError
from ..repo import Repo
from ..store.cas import CasStore
from ..thread.context import context_of
from ..thread.model import ThreadContext
from ..workflow.model import Role, Workflow

if TYPE_CHECKING:
    from argparse import ArgumentParser
    from typing import Any, Callable

    from ..engine.extraction.extract import Fallback
    from ..engine.extraction.llm import LlmExtractor
    from ..engine.prompt import Prompt


@record
class AgentContext:
    """Everything an agent needs to do one role's work."""

    repo: Repo
    thread: str
    workflow: Workflow
    role: Role
    context: ThreadContext
    instruction: str | None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def store(self) -> CasStore:
        return self.repo.nodes

    @property
    def schema(self) -> dict[str, Any]:
        return self.store.schema(self.role.meta)

    @property
    def workspace(self) -> str:
        return os.environ.get("UWF_WORKSPACE") or self.context.start.workspace or os.getcwd()

    @cached_property
    def prompt_parts(self) -> Prompt:
        """The prompt in the parts it is stored by (see engine/prompt.Prompt)."""
        from ..engine.prompt import build_prompt_parts

        return build_prompt_parts(self.workflow, self.role, self.schema, self.context, self.instruction)

    @cached_property
    def prompt(self) -> str:
        return self.prompt_parts.text

    def count_of_role(self) -> int:
        """How many times this role has already run in the thread (resumed history included)."""
        return self.context.role_count(self.role.name)


@record(frozen=True)
class AgentAnswer:
    """What `run` returns: the raw answer text, anything to keep in the detail node
    (turns, tool calls, usage...), and a session handed back to `continue_`."""

    text: str
    detail: dict[str, Any] = field(default_factory=dict)
    session: object = None


if TYPE_CHECKING:
    RunFunction = Callable[[AgentContext], "AgentAnswer | str"]
    ContinueFunction = Callable[[AgentContext, object, str], "AgentAnswer | str"]


def load_agent_context(repo: Repo, thread: str, role_name: str, options: dict[str, Any] | None = None) -> AgentContext:
    """The context of `role_name`'s step at the thread's head: what `run(ctx)` is given (and what a
    python agent that writes its own step builds from `ctx.repo`)."""
    from ..thread.moderator import evaluate
    from ..workflow.ops import workflow_of

    head = os.environ.get("UWF_HEAD") if os.environ.get("UWF_THREAD") == thread else None
    if not head:
        head = repo.threads.heads().get(thread)
        if head is None:
            raise UwfError(f"thread {thread} is not active in {repo.location}")
    context = context_of(repo, head)
    workflow = workflow_of(repo, context.start.workflow)
    role = workflow.roles.get(role_name)
    if role is None:
        raise UwfError(f"workflow '{workflow.name}' has no role '{role_name}'")
    instruction = os.environ.get("UWF_INSTRUCTION") if os.environ.get("UWF_ROLE") == role_name else None
    if instruction is None and "UWF_ROLE" not in os.environ:
        decision = evaluate(workflow, context)
        instruction = decision.instruction if decision.role == role_name else None
    return AgentContext(repo, thread, workflow, role, context, instruction, dict(options or {}))


def _answer(value: AgentAnswer | str) -> AgentAnswer:
    return AgentAnswer(value) if isinstance(value, str) else value


def complete_step(
    ctx: AgentContext,
    answer: AgentAnswer,
    *,
    agent_label: str,
    started_ms: int,
    continue_: ContinueFunction | None = None,
    fallback: Fallback | None = None,
) -> str:
    """Extract the structured output (fast path, fallback, corrections) and write the step."""
    from ..engine.extraction.extract import extract_with_corrections
    from ..engine.record import write_answer
    from ..engine.reuse.index import kit_agent_fingerprint

    secrets = ctx.repo.secrets
    current = [answer]

    def retry(message: str) -> str:
        assert continue_ is not None  # passed as the retry only then
        current[0] = _answer(continue_(ctx, current[0].session, message))
        return current[0].text

    # Parsed as written; write_answer redacts the answer and the output before they are stored.
    outcome = extract_with_corrections(
        answer.text, ctx.schema, cache_key=ctx.role.meta, fallback=fallback, retry=retry if continue_ else None
    )
    detail = {"extract": outcome.extracted.method, "corrections": outcome.corrections}
    if outcome.extracted.evidence is not None:
        detail["extractEvidence"] = outcome.extracted.evidence
    if outcome.usage is not None:
        from ..engine.extraction.extract import usage_detail

        detail.update(usage_detail(ctx.repo.config, outcome.usage))
    detail.update(current[0].detail)
    return write_answer(
        ctx.store,
        context=ctx.context,
        role=ctx.role,
        agent=agent_label,
        protocol="step",
        prompt=ctx.prompt_parts,
        answer=outcome.text,
        output=outcome.extracted.output,
        detail=detail,
        secrets=secrets,
        instruction=ctx.instruction,
        started_ms=started_ms,
        agent_key=kit_agent_fingerprint(),  # indexed for memoized replay when uwf runs this agent
    )


def _llm_fallback(repo: Repo) -> LlmExtractor | None:
    """The LLM extractor (None when no extract model is configured); built only if the fast path fails."""
    from ..config.env import env_with_secrets
    from ..engine.extraction.llm import fallback_for

    return fallback_for(repo.config, env_with_secrets(repo.env_values), secrets=repo.secrets)


def run_agent(
    name: str,
    run: RunFunction,
    argv: list[str] | None = None,
    *,
    continue_: ContinueFunction | None = None,
    configure: Callable[[ArgumentParser], object] | None = None,
    description: str = "",
    llm_fallback: bool = True,
) -> int:
    """The whole step protocol around `run`; returns the exit code."""
    import argparse

    from ..errors import speak_cli

    speak_cli()  # an agent program's errors are read where the step's are: in the CLI's words
    parser = argparse.ArgumentParser(prog=name, description=description or f"{name}: a uwf step-protocol agent")
    if configure is not None:
        configure(parser)
    parser.add_argument("thread", help="the thread id (uwf passes it)")
    parser.add_argument("role", help="the role to perform (uwf passes it)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    started = int(time.time() * 1000)
    try:
        repo = Repo.open()  # .env stays on the Repo: a child agent (uwf-subflow's) must not inherit it
        ctx = load_agent_context(repo, args.thread, args.role, vars(args))
        answer = _answer(run(ctx))
        from ..engine.extraction.extract import lazy_fallback

        fallback = lazy_fallback(lambda: _llm_fallback(repo)) if llm_fallback else None
        step = complete_step(ctx, answer, agent_label=_agent_label(name), started_ms=started, continue_=continue_, fallback=fallback)
    except UwfError as exc:
        sys.stderr.write(f"{name}: error: {' '.join(exc.message.split())}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    sys.stdout.write(step + "\n")
    return 0


def make_undumpable() -> None:
    """The keys this agent holds stay out of reach of the processes it starts: a process that is
    not dumpable cannot be read through /proc (its memory, environment, open files) by another
    of the same user without the right to trace it, nor traced."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass  # not Linux


def _agent_label(name: str) -> str:
    """The name the step is recorded under: the config alias uwf ran this agent as (so the
    StepNode, runs.jsonl and every view agree), else the agent's own name."""
    alias = os.environ.get("UWF_AGENT")
    return alias if alias and os.environ.get("UWF_THREAD") else name
