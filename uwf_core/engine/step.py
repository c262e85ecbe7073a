"""One step of a thread: moderator → agent → verify → compare-and-set the head.

perform_step is the single implementation every caller uses (the CLI, `thread
run`, the TUI, sub-workflows). It returns a result instead of printing,
streams the agent's stderr lines to a callback, and can be cancelled. On any
failure the head stays where it was, and every attempt is in runs.jsonl.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Callable

from ..config.model import env_with_secrets, load_config
from ..encoding.ids import is_cas_ref
from ..errors import UwfError
from ..store.builtin_schemas import BUILTIN_HASHES
from ..store.cas import CasStore
from ..store.fs import threads as thread_index
from ..store.fs.files import Root
from ..store.fs.locks import StepLock
from ..store.fs.runs import RunRecord, append_run
from ..thread.context import STEP_TYPE, build_context
from ..thread.model import StepContext, StepNode, ThreadContext
from ..thread.moderator import REASON_DONE, REASON_MAX_STEPS, Decision, evaluate
from ..thread.ops import ThreadInfo, active_thread
from ..workflow.model import Workflow
from ..workflow.ops import workflow_from_node
from .process import Cancel, ProcessOutcome, run_process
from .resolve import ResolvedAgent, resolve_agent

OutputCallback = Callable[[str], None]


@dataclass(frozen=True)
class HumanRequest:
    """What a person is asked when a role's agent is `human`."""

    thread: str
    workflow: str
    role: str
    prompt: str
    schema: dict
    template: str
    instruction: str | None


# Returns the person's answer (frontmatter markdown or a JSON object), or None to cancel.
HumanInput = Callable[[HumanRequest], "str | None"]


class StepError(UwfError):
    """A step attempt that failed; `status` is how runs.jsonl records it."""

    def __init__(self, message: str, status: str = "failed", stderr: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.stderr = stderr


@dataclass(frozen=True)
class StepResult:
    workflow: str
    thread: str
    head: str
    done: bool
    role: str | None = None  # the role that ran; None when the thread just finished
    agent: str | None = None
    reason: str | None = None

    def to_json(self) -> dict:
        data = {"workflow": self.workflow, "thread": self.thread, "head": self.head, "done": self.done}
        if self.role:
            data["role"] = self.role
        if self.agent:
            data["agent"] = self.agent
        if self.reason:
            data["reason"] = self.reason
        return data


@dataclass
class _Attempt:
    """Bookkeeping for the runs.jsonl line of one attempt."""

    root: Root
    info: ThreadInfo
    started_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    role: str | None = None
    agent: str | None = None

    def record(self, status: str, step: str | None = None, error: str | None = None, stderr: str | None = None) -> None:
        now = int(time.time() * 1000)
        append_run(
            self.root,
            RunRecord(
                thread=self.info.thread,
                workflow=self.info.workflow,
                role=self.role,
                agent=self.agent,
                status=status,
                head=self.info.head,
                step=step,
                startedAt=self.started_ms,
                completedAt=now,
                durationMs=now - self.started_ms,
                error=error,
                stderr=stderr or None,
            ),
        )


def perform_step(
    root: Root,
    thread: str,
    *,
    agent: str | None = None,
    timeout: float | None = None,
    on_output: OutputCallback | None = None,
    cancel: Cancel | None = None,
    human: HumanInput | None = None,
) -> StepResult:
    store = CasStore(root)
    thread_id = active_thread(root, thread, store).thread
    with StepLock(root, thread_id) as lock:
        if lock.interrupted is not None:
            _record_interrupted(root, store, thread_id, lock)
        info = active_thread(root, thread_id, store)
        attempt = _Attempt(root, info)
        try:
            return _step(root, store, info, attempt, lock, agent, timeout, on_output, cancel, human)
        except StepError as exc:
            attempt.record(exc.status, error=exc.message, stderr=exc.stderr)
            raise
        except UwfError as exc:
            attempt.record("failed", error=exc.message)
            raise
        except KeyboardInterrupt:
            attempt.record("killed", error="interrupted (Ctrl-C)")
            raise
        except Exception as exc:  # a bug, but still an attempt: on record before the traceback
            attempt.record("failed", error=f"internal error: {type(exc).__name__}: {exc}")
            raise


def _record_interrupted(root: Root, store: CasStore, thread: str, lock: StepLock) -> None:
    lost = lock.interrupted
    info = active_thread(root, thread, store)
    attempt = _Attempt(root, info, started_ms=lost.started_at or int(time.time() * 1000), role=lost.role, agent=lost.agent)
    attempt.record("killed", error=f"uwf (pid {lost.pid}) died during this step; the head did not move")


def _step(root, store, info, attempt, lock, agent_override, timeout, on_output, cancel, human) -> StepResult:
    context = build_context(store, info.head)
    workflow = workflow_from_node(store, context.start.workflow)
    decision = evaluate(workflow, context)
    if decision.is_end:
        return _finish(root, info, decision, workflow)
    attempt.role = decision.role
    config = load_config(root)
    resolved = resolve_agent(
        config, workflow.name, decision.role, context.start.agents, agent_override, config_file=root.config_file
    )
    attempt.agent = resolved.label
    lock.update(role=decision.role, agent=resolved.label)
    run = _AgentRun(root, store, info, workflow, context, decision, resolved, lock, timeout, on_output, cancel)
    run.human = human
    new_head = run.execute()
    done = _next_is_end(store, workflow, context, new_head)
    try:
        thread_index.compare_and_set_head(
            root, info.thread, info.head, new_head, archive_reason=REASON_DONE if done else None, workflow=workflow.hash
        )
    except thread_index.ConflictError as exc:
        record = thread_index.last_history_record(root, info.thread)
        killed = record is not None and record.get("reason") == "killed" and info.thread not in thread_index.load_threads(root)
        raise StepError(exc.message, "killed" if killed else "failed") from None
    attempt.record("ok", step=new_head)
    return StepResult(info.workflow, info.thread, new_head, done, decision.role, resolved.label, REASON_DONE if done else None)


def _finish(root: Root, info: ThreadInfo, decision: Decision, workflow: Workflow) -> StepResult:
    if decision.end_reason == REASON_MAX_STEPS:
        thread_index.archive_thread(root, info.thread, workflow.hash, REASON_MAX_STEPS, expected=info.head)
        raise StepError(
            f"thread {info.thread} reached maxSteps ({workflow.max_steps}) of workflow '{workflow.name}' without finishing; "
            f"archived with reason max-steps (fork a step or resume it to go on)"
        )
    thread_index.archive_thread(root, info.thread, workflow.hash, REASON_DONE, expected=info.head)
    return StepResult(info.workflow, info.thread, info.head, True, reason=REASON_DONE)


def _next_is_end(store: CasStore, workflow: Workflow, context: ThreadContext, new_head: str) -> bool:
    """Ask the moderator again: does the thread end after this step?

    A routing error here does not undo the step; the next step reports it.
    """
    node = store.get(new_head)
    step = StepNode.from_payload(node.payload)
    added = StepContext(new_head, step.role, step.output, step.detail, step.agent, step.start, load_output=store.payload)
    extended = ThreadContext(new_head, context.start_hash, context.start, [*context.steps, added], context.since_start + 1)
    try:
        decision = evaluate(workflow, extended)
    except UwfError:
        return False
    return decision.is_end and decision.end_reason == REASON_DONE


def agent_env(root: Root, extra: dict[str, str]) -> dict[str, str]:
    """The caller's environment, .env's keys for what is unset, the agent's own env, and
    uwf's script directory at the end of PATH so the bundled agents and `uwf` itself
    are found even when the virtualenv is not activated."""
    import sys

    env = env_with_secrets(root)
    env.update(extra)
    scripts = os.path.dirname(sys.executable)
    path = env.get("PATH", "")
    if scripts not in path.split(os.pathsep):
        env["PATH"] = f"{path}{os.pathsep}{scripts}" if path else scripts
    return env


class _AgentRun:
    """Spawn the resolved agent for one role and turn its result into a verified StepNode."""

    def __init__(self, root, store, info, workflow, context, decision, resolved, lock, timeout, on_output, cancel) -> None:
        self.root: Root = root
        self.store: CasStore = store
        self.info: ThreadInfo = info
        self.workflow: Workflow = workflow
        self.context: ThreadContext = context
        self.decision: Decision = decision
        self.role = workflow.roles[decision.role]
        self.resolved: ResolvedAgent = resolved
        self.lock: StepLock = lock
        self.timeout = timeout if timeout is not None else resolved.timeout
        self.on_output = on_output
        self.cancel = cancel
        self.started_ms = int(time.time() * 1000)

    def env(self) -> dict[str, str]:
        env = agent_env(self.root, self.resolved.env)
        env.update(
            UWF_STORAGE_ROOT=self.root.path,
            UWF_THREAD=self.info.thread,
            UWF_ROLE=self.role.name,
            UWF_HEAD=self.info.head,
            UWF_WORKFLOW=self.workflow.hash or "",
        )
        if self.decision.instruction:
            env["UWF_INSTRUCTION"] = self.decision.instruction
        else:
            env.pop("UWF_INSTRUCTION", None)
        return env

    def cwd(self) -> str:
        workspace = self.context.start.workspace
        if workspace and not os.path.isdir(workspace):
            raise StepError(f"the thread's workspace {workspace} does not exist")
        return workspace or os.getcwd()

    def spawn(self, argv: list[str], stdin_text: str | None) -> ProcessOutcome:
        outcome = run_process(
            argv,
            cwd=self.cwd(),
            env=self.env(),
            stdin_text=stdin_text,
            timeout=self.timeout,
            on_output=self.on_output,
            on_start=lambda pid: self.lock.update(pgid=pid),
            cancel=self.cancel,
        )
        self._check_outcome(outcome)
        return outcome

    def _check_outcome(self, outcome: ProcessOutcome) -> None:
        tail = outcome.stderr_tail.strip()
        suffix = f"; stderr: {tail[-300:]}" if tail else ""
        if outcome.timed_out:
            raise StepError(f"agent '{self.resolved.label}' timed out after {self.timeout:g}s; its process group was killed", "timeout", tail)
        if outcome.cancelled:
            raise StepError(f"agent '{self.resolved.label}' was cancelled; its process group was killed", "killed", tail)
        if self.info.thread not in thread_index.load_threads(self.root):
            raise StepError(f"thread {self.info.thread} was killed while agent '{self.resolved.label}' ran", "killed", tail)
        if outcome.exit_code != 0:
            how = f"was killed by signal {-outcome.exit_code}" if outcome.exit_code < 0 else f"exited with code {outcome.exit_code}"
            raise StepError(f"agent '{self.resolved.label}' {how}{suffix}", "failed", tail)

    human: HumanInput | None = None

    def execute(self) -> str:
        if self.resolved.is_human:
            return self._human_protocol()
        if self.resolved.protocol == "text":
            return self._text_protocol()
        return self._step_protocol()

    # -- a person answers: the TUI's form, or $EDITOR from the CLI ------------------

    def _human_protocol(self) -> str:
        from .extract import ExtractError, extract_fast
        from .prompt import build_prompt, frontmatter_template

        if self.human is None:
            raise StepError(
                f"role '{self.role.name}' is assigned to a human: step it in uwf-tui, or run `uwf thread step` on a terminal (it opens $EDITOR)"
            )
        schema = self.store.schema(self.role.meta)
        prompt = build_prompt(self.workflow, self.role, schema, self.context, self.decision.instruction)
        request = HumanRequest(self.info.thread, self.workflow.name, self.role.name, prompt, schema, frontmatter_template(schema), self.decision.instruction)
        answer = self.human(request)
        if answer is None:
            raise StepError(f"the human answer for role '{self.role.name}' was cancelled", "killed")
        try:
            extracted = extract_fast(answer, schema, cache_key=self.role.meta)
        except ExtractError as exc:
            raise StepError(f"the human answer for role '{self.role.name}' cannot be used: {exc.message}") from None
        return write_step(
            self.store,
            context=self.context,
            role=self.role.name,
            meta=self.role.meta,
            output=extracted.output,
            agent="human",
            instruction=self.decision.instruction,
            started_ms=self.started_ms,
            detail={
                "agent": "human",
                "protocol": "human",
                "prompt": self.store.put(BUILTIN_HASHES["content"], prompt),
                "content": self.store.put(BUILTIN_HASHES["content"], answer),
                "extract": extracted.method,
            },
        )

    # -- step protocol: the agent writes its nodes; uwf verifies -----------------------

    def _step_protocol(self) -> str:
        outcome = self.spawn([*self.resolved.argv, self.info.thread, self.role.name], None)
        lines = [line.strip() for line in outcome.stdout.splitlines() if line.strip()]
        if not lines:
            raise StepError(f"agent '{self.resolved.label}' printed nothing; the step protocol expects the new StepNode's hash as the last line of stdout")
        answer = lines[-1]
        hash_ = answer.upper() if is_cas_ref(answer.upper()) else answer
        verify_step_node(self.store, hash_, self.context, self.role.name, self.role.meta, self.resolved.label)
        return hash_

    # -- text protocol: uwf builds the prompt, extracts, writes the nodes ---------------

    def _text_protocol(self) -> str:
        from .extract import ExtractError, extract_with_corrections
        from .extract_llm import fallback_for
        from .prompt import build_prompt

        schema = self.store.schema(self.role.meta)
        prompt = build_prompt(self.workflow, self.role, schema, self.context, self.decision.instruction)
        outcome = self._run_text(prompt)
        last = {"outcome": outcome}

        def retry(message: str) -> str:
            last["outcome"] = self._run_text(f"{prompt}\n\n# Correction\n\n{message}\n")
            return last["outcome"].stdout

        try:
            result = extract_with_corrections(
                outcome.stdout,
                schema,
                cache_key=self.role.meta,
                fallback=fallback_for(load_config(self.root), self.env()),
                retry=retry,
            )
        except ExtractError as exc:
            raise StepError(f"could not read the output of agent '{self.resolved.label}': {exc.message}", "failed", last["outcome"].stderr_tail) from None
        detail = {
            "agent": self.resolved.label,
            "protocol": "text",
            "prompt": self.store.put(BUILTIN_HASHES["content"], prompt),
            "content": self.store.put(BUILTIN_HASHES["content"], result.text),
            "extract": result.extracted.method,
            "corrections": result.corrections,
            "exitCode": last["outcome"].exit_code,
            "durationMs": int(time.time() * 1000) - self.started_ms,
        }
        if result.usage is not None:
            detail["extractUsage"] = result.usage.to_json()
        return write_step(
            self.store,
            context=self.context,
            role=self.role.name,
            meta=self.role.meta,
            output=result.extracted.output,
            agent=self.resolved.label,
            instruction=self.decision.instruction,
            started_ms=self.started_ms,
            detail=detail,
        )

    def _run_text(self, prompt: str) -> ProcessOutcome:
        argv, stdin_text, prompt_file = self._text_argv(prompt)
        try:
            return self.spawn(argv, stdin_text)
        finally:
            if prompt_file:
                os.unlink(prompt_file)

    def _text_argv(self, prompt: str) -> tuple[list[str], str | None, str | None]:
        prompt_file = None
        uses_prompt = any("{prompt}" in arg or "{prompt_file}" in arg for arg in self.resolved.argv)
        if any("{prompt_file}" in arg for arg in self.resolved.argv):
            prompt_file = _write_prompt_file(self.root, prompt)
        values = {"prompt": prompt, "prompt_file": prompt_file or "", "thread": self.info.thread, "role": self.role.name}
        # One pass, so a placeholder inside the inserted prompt is left as the text it is.
        argv = [PLACEHOLDER.sub(lambda match: values[match[1]], arg) for arg in self.resolved.argv]
        return argv, None if uses_prompt else prompt, prompt_file


PLACEHOLDER = re.compile(r"\{(prompt|prompt_file|thread|role)\}")


def _write_prompt_file(root: Root, prompt: str) -> str:
    from ..store.fs.files import atomic_write, temp_path_for

    path = temp_path_for(os.path.join(root.path, "tmp", "prompt.md")).removesuffix(".tmp") + ".md"
    atomic_write(path, prompt.encode("utf-8"), mode=0o600, sync=False)
    return path


def write_step(
    store: CasStore,
    *,
    context: ThreadContext,
    role: str,
    meta: str,
    output: object,
    agent: str,
    detail: dict,
    instruction: str | None = None,
    started_ms: int | None = None,
) -> str:
    """Store output, detail and the StepNode continuing `context`'s head; returns the StepNode hash."""
    now = int(time.time() * 1000)
    output_hash = store.put(meta, output, what=f"output of role '{role}'")
    detail = {**detail, "startedAt": started_ms or now, "completedAt": now}
    detail_hash = store.put(BUILTIN_HASHES["detail"], detail, what="detail")
    step = StepNode(
        start=context.start_hash,
        prev=None if context.head_is_start else context.head,
        role=role,
        output=output_hash,
        detail=detail_hash,
        agent=agent,
        instruction=instruction,
        started_at=started_ms or now,
        completed_at=now,
    )
    return store.put(STEP_TYPE, step.to_payload(), what="StepNode")


def verify_step_node(store: CasStore, answer: str, context: ThreadContext, role: str, meta: str, agent: str) -> None:
    """Refuse anything but a valid StepNode that continues this thread's head for this role."""
    from ..store.schemas import validation_errors

    who = f"agent '{agent}'"
    if not is_cas_ref(answer):
        raise StepError(f"{who} printed {answer[:80]!r} as its last line, which is not a node hash")
    if not store.has(answer):
        raise StepError(f"{who} answered {answer}, which is not in the store")
    node = store.get(answer)
    if node.type != STEP_TYPE:
        raise StepError(f"{who} answered {answer}, which is not a StepNode (its type is {node.type})")
    step = StepNode.from_payload(node.payload)
    if step.start != context.start_hash:
        raise StepError(f"{who} answered {answer}, a StepNode of another thread (its start is {step.start}, this thread's is {context.start_hash})")
    expected_prev = None if context.head_is_start else context.head
    if step.prev != expected_prev:
        raise StepError(f"{who} answered {answer}, whose prev is {step.prev} but the head is {expected_prev}")
    if step.role != role:
        raise StepError(f"{who} answered {answer} for role '{step.role}', but role '{role}' was asked for")
    for name in ("output", "detail"):
        if not store.has(getattr(step, name)):
            raise StepError(f"{who} answered {answer}, whose {name} {getattr(step, name)} is not in the store")
    output = store.get(step.output)
    errors = validation_errors(store.schema(meta), output.payload, cache_key=meta)
    if errors:
        raise StepError(f"{who} answered {answer}, whose output does not match role '{role}''s schema: {errors[0]}")


def run_thread(
    root: Root,
    thread: str,
    *,
    max_steps: int | None = None,
    agent: str | None = None,
    timeout: float | None = None,
    on_output: OutputCallback | None = None,
    on_step: Callable[[StepResult], None] | None = None,
    cancel: Cancel | None = None,
    human: HumanInput | None = None,
) -> StepResult:
    """Step until the thread is done, a step fails (raised), or `max_steps` steps ran."""
    taken = 0
    result = None
    while max_steps is None or taken < max_steps:
        result = perform_step(root, thread, agent=agent, timeout=timeout, on_output=on_output, cancel=cancel, human=human)
        if on_step is not None:
            on_step(result)
        if result.done:
            return result
        taken += 1
        if cancel is not None and cancel.is_set():
            break
    if result is None:
        from ..thread.ops import thread_info

        info = thread_info(root, thread)
        return StepResult(info.workflow, info.thread, info.head, info.done, reason=info.reason)
    return result
