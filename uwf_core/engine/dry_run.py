"""What the next step of a thread would do, with no agent run and nothing written.

The same decisions `perform_step` makes, in the same order, read-only: the moderator's role and
why, whether the budget would stop the thread, the agent and the rule that chose it, whether
memoized replay would reuse an earlier step, and the prompt exactly as the agent would get it.
No lock is taken and no derived data is kept (a missing chain record or running total is
computed and dropped), so the root is byte for byte what it was.
"""

from __future__ import annotations

from ..encoding.records import record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import UwfError
from ..thread.context import context_of
from ..thread.budget import REASON_BUDGET, BudgetStatus, budget_status
from ..thread.moderator import Decision, evaluate, route_to
from ..thread.ops import active_thread
from ..workflow.ops import workflow_of
from .resolve import ResolvedAgent, resolve_agent

if TYPE_CHECKING:
    from typing import Any

    from ..repo import Repo
    from ..store.records import RunningStep
    from ..thread.model import ThreadContext
    from ..thread.ops import ThreadInfo
    from ..workflow.model import Workflow


@record(frozen=True)
class AgentChoice:
    """The agent a step would run, and which rule chose it."""

    label: str  # what the StepNode would record as `agent`
    origin: str  # "--agent", "thread" (start --agent ROLE=AGENT), "agentOverrides" or "defaultAgent"
    source: str  # the same, in words (e.g. "agentOverrides.solve-issue.developer in config.yaml")
    spec: str  # what that rule named: a config alias or a command line
    alias: bool  # the spec is an agent entry of config.yaml
    protocol: str  # step, text or human
    argv: tuple[str, ...]  # the command; the step protocol appends the thread id and the role
    timeout: float | None
    reuse: bool  # memoized replay is on for this step

    @classmethod
    def of(cls, resolved: ResolvedAgent, reuse: bool) -> AgentChoice:
        return cls(
            resolved.label, resolved.origin, resolved.source, resolved.spec, resolved.alias, resolved.protocol,
            tuple(resolved.argv), resolved.timeout, reuse,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "origin": self.origin,
            "source": self.source,
            "spec": self.spec,
            "alias": self.alias,
            "protocol": self.protocol,
            "argv": list(self.argv),
            "timeout": self.timeout,
            "reuse": self.reuse,
        }


@record(frozen=True)
class DryRun:
    """The next step of a thread, as it would happen now."""

    thread: str
    workflow: str  # hash
    workflow_name: str
    head: str
    steps: int  # steps behind the head
    decision: Decision  # the moderator's (or, with --role, the caller's) choice and why
    forced: bool  # the role was given by the caller (--role), not chosen by the moderator
    outcome: str  # "step" (an agent would run), "reuse" (an earlier output would be reused), "map" (children would), "end", or "stop"
    end_reason: str | None  # done / max-steps / budget when the thread would end or stop
    agent: AgentChoice | None
    agent_error: str | None  # why no agent could run (none configured, a bad command line...)
    prompt: str | None  # the assembled prompt, exactly as the agent would get it
    reuse_from: str | None  # the earlier step whose output would be reused
    budget: BudgetStatus | None
    running: RunningStep | None  # a step in progress on the thread right now
    note: str | None = None  # anything else the caller should know, in one line

    @property
    def role(self) -> str | None:
        return None if self.decision.is_end else self.decision.role

    def to_json(self) -> dict[str, Any]:
        decision = self.decision
        return {
            "thread": self.thread,
            "workflow": self.workflow,
            "name": self.workflow_name,
            "head": self.head,
            "steps": self.steps,
            "outcome": self.outcome,
            "role": self.role,
            "endReason": self.end_reason,
            "routing": {
                "from": decision.source,
                "to": decision.role,
                "matched": decision.matched,
                "reason": decision.reason,
                "forced": self.forced,
                "instruction": decision.instruction,
                "location": decision.location,
            },
            "agent": self.agent.to_json() if self.agent is not None else None,
            "agentError": self.agent_error,
            "reuseFrom": self.reuse_from,
            "budget": self.budget.to_json() if self.budget is not None else None,
            "running": None if self.running is None else {"pid": self.running.pid, "role": self.running.role, "agent": self.running.agent},
            "note": self.note,
            "prompt": self.prompt,
        }


def dry_run(repo: Repo, thread: str, *, role: str | None = None, agent: str | None = None, reuse: bool = False) -> DryRun:
    """What `uwf thread step THREAD [--agent A] [--reuse]` would do now, without doing any of it.
    `role` previews that role's step instead of the moderator's choice."""
    from .reuse.index import find_reusable

    info = active_thread(repo, thread)
    context = context_of(repo, info.head, keep=False)
    workflow = workflow_of(repo, context.start.workflow)
    decision = route_to(workflow, context, role) if role else evaluate(workflow, context)
    running = repo.locks.running(info.thread)
    budget = budget_status(repo, context, workflow, keep=False)

    def result(outcome: str, end_reason: str | None = None, **more: Any) -> DryRun:
        values = dict(agent=None, agent_error=None, prompt=None, reuse_from=None, note=None)
        values.update(more)
        return DryRun(
            info.thread, workflow.hash or context.start.workflow, workflow.name, info.head, len(context.steps), decision,
            bool(role), outcome, end_reason, budget=budget, running=running, **values,
        )

    if decision.is_end:
        return result("end", decision.end_reason)
    if workflow.roles[decision.role].map is not None:
        return result("map", note=_map_note(repo, info, context, workflow, decision.role))
    schema = repo.nodes.schema(workflow.roles[decision.role].meta)
    prompt = next_prompt(workflow, decision, schema, context)
    try:
        resolved = resolve_agent(
            repo.config, workflow.name, decision.role, context.start.agents, agent, config_file=repo.backend.config.location,
            functions=repo.agents.entries,
        )
    except UwfError as exc:
        return result("step", prompt=prompt, agent_error=exc.message, note=_stop_note(budget))
    reusing = (reuse or resolved.reuse) and resolved.protocol != "human"
    choice = AgentChoice.of(resolved, reusing)
    found = find_reusable(repo.nodes, _key(repo, workflow, decision, resolved, schema, context), decision.role) if reusing else None
    if found is not None:
        return result("reuse", agent=choice, prompt=prompt, reuse_from=found)
    if budget is not None and budget.exceeded is not None:
        return result("stop", REASON_BUDGET, agent=choice, prompt=prompt, note=f"the thread would stop: {budget.exceeded}")
    return result("step", agent=choice, agent_error=cannot_start(repo, resolved), prompt=prompt, note=_stop_note(budget))


def _map_note(repo: Repo, info: ThreadInfo, context: ThreadContext, workflow: Workflow, role: str) -> str:
    """What a map step would start: how many children of which workflow, and how many exist."""
    from .fanout.map import child_ids, map_items

    spec = workflow.roles[role].map
    assert spec is not None  # dry_run notes a mapping role only
    try:
        items = map_items(context, spec, role)
    except UwfError as exc:
        return f"the map would fail: {exc.message}"
    heads = repo.threads.heads()
    started = sum(child in heads for child in child_ids(repo, info.thread, info.head, role, len(items)))
    limit = f", {spec.max_parallel} at a time" if spec.max_parallel else ""
    return (f"a map: {len(items)} child thread{'s' if len(items) != 1 else ''} of workflow '{spec.workflow}' (one per item of "
            f"{spec.over}{limit}, onFailure {spec.on_failure}), no agent of its own; {started} started and still active")


def agent_problem(repo: Repo, workflow_name: str, role: str, spec: str) -> str | None:
    """What would stop `spec` (an agent's name or a command line) from running `role` on this host:
    `cannot_start`'s answer, or why it cannot be resolved (None: nothing seen)."""
    try:
        return cannot_start(repo, resolve_agent(repo.config, workflow_name, role, override=spec, functions=repo.agents.entries))
    except UwfError as exc:
        return exc.message


def cannot_start(repo: Repo, resolved: ResolvedAgent) -> str | None:
    """What would stop the agent before it runs: a secret it names that is nowhere, or a command
    that is not on the agent's PATH (a relative path is the workspace's business: not checked)."""
    import os
    import shutil

    from .call import agent_env

    if resolved.protocol == "python":
        from .python.load import function_of

        try:
            function_of(repo, resolved)
        except UwfError as exc:
            return exc.message
        return None
    if resolved.protocol == "human" or not resolved.argv:
        return None
    try:
        env = agent_env(repo, resolved)
    except UwfError as exc:
        return exc.message
    command = resolved.argv[0]
    if os.sep in command and not os.path.isabs(command):
        return None
    if shutil.which(command, path=env.get("PATH")) is None:
        return f"agent command '{command}' not found" + ("" if os.sep in command else " on PATH")
    return None


def _stop_note(budget: BudgetStatus | None) -> str | None:
    if budget is not None and budget.unpriced is not None:
        return f"the step would fail: {budget.unpriced}"
    if budget is not None and budget.unrecorded is not None:
        return f"the budget counts only what agents record: {budget.unrecorded}"
    return None


def next_prompt(workflow: Workflow, decision: Decision, schema: dict[str, Any], context: ThreadContext) -> str:
    """The prompt the next step's agent (or person) would get."""
    from .prompt import build_prompt_parts

    return build_prompt_parts(workflow, workflow.roles[decision.role], schema, context, decision.instruction).text


def _key(repo: Repo, workflow: Workflow, decision: Decision, resolved: ResolvedAgent, schema: dict[str, Any], context: ThreadContext) -> str:
    from .prompt import build_prompt_parts
    from .reuse.replay import prompt_node_hash
    from .reuse.index import agent_fingerprint, inputs_key

    role = workflow.roles[decision.role]
    parts = build_prompt_parts(workflow, role, schema, context, decision.instruction)
    code = None
    if resolved.protocol == "python":
        from .python.load import function_of

        code = function_of(repo, resolved).identity
    key = inputs_key(role, agent_fingerprint(resolved, code), prompt_node_hash(repo.nodes, parts, repo.secrets, context))
    return _with_head_files(repo, context, key)


def _with_head_files(repo: Repo, context: ThreadContext, key: str) -> str:
    """A thread with snapshots keys a step by the files it finds too: here, the files the head's
    snapshot holds (a dry run writes nothing, so it takes no snapshot of its own)."""
    if not context.start.workspace:
        return key
    from ..thread.files import files_of, snapshots_on
    from .reuse.index import with_files

    tree = files_of(repo.nodes, context.head) if snapshots_on(repo, context.start) else None
    return with_files(key, tree) if tree else key
