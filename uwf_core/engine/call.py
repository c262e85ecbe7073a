"""One agent call inside a step: what the protocols share. The environment is built once,
the working directory checked once, and every spawn goes through one outcome policy
(timeout, cancel, killed thread, exit code)."""

from __future__ import annotations

import os
import sys
import time
from functools import cached_property

from ..encoding.records import field, record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..errors import UwfError
from ..store.records import OutsideWrites
from ..telemetry.spans import Span
from .attempt import StepError, StepOptions
from .contain.process import MAX_STDOUT_BYTES, ProcessOutcome, run_process
from .resolve import ResolvedAgent

if TYPE_CHECKING:
    from ..config.env import Secrets
    from ..repo import Repo
    from ..store.base import StepLease
    from ..thread.model import ThreadContext
    from ..thread.moderator import Decision
    from ..thread.ops import ThreadInfo
    from ..workflow.model import Role, Workflow
    from .prompt import Prompt
    from .python.load import PythonFunction
    from .contain.sandbox import Policy


def agent_env(repo: Repo, resolved: ResolvedAgent) -> dict[str, str]:
    """The caller's environment, the .env keys the agent's entry names (and no others: step
    agents built on the kit read .env themselves), the entry's own env, and uwf's script
    directory at the end of PATH so the bundled agents and `uwf` itself are found even
    when the virtualenv is not activated."""
    from ..config.env import SECRETS_FD_ENV, TRACE_EXPORT_PREFIX

    env = {name: value for name, value in os.environ.items() if not name.startswith(TRACE_EXPORT_PREFIX)}  # uwf's collector
    env.pop(SECRETS_FD_ENV, None)  # the file a step agent of ours was handed is not its children's
    env.update(named_secrets(repo, resolved))
    env.update(resolved.env)
    scripts = os.path.dirname(sys.executable)
    path = env.get("PATH", "")
    if scripts not in path.split(os.pathsep):
        env["PATH"] = f"{path}{os.pathsep}{scripts}" if path else scripts
    return env


def named_secrets(repo: Repo, resolved: ResolvedAgent) -> dict[str, str]:
    """The keys the agent's entry names (`secrets:`), and no others: from the environment when it
    has them, else from .env; one that is in neither fails the step."""
    found = {}
    for name in resolved.secrets:
        value = os.environ.get(name, repo.env_values.get(name))
        if value is None:
            raise StepError(
                f"agent '{resolved.label}' names the secret {name}, which is neither in {repo.env_path} nor in the environment"
            )
        found[name] = value
    return found


@record
class AgentCall:
    repo: Repo
    info: ThreadInfo
    workflow: Workflow
    context: ThreadContext
    decision: Decision
    resolved: ResolvedAgent
    lease: StepLease
    options: StepOptions
    deadline: float | None = None  # time.monotonic() when the step's --timeout (or the entry's) runs out
    started_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    stage: str | None = None  # a sandboxed step agent's staging directory (engine/protocols/step.py)
    outside: OutsideWrites | None = None  # what its runs wrote outside the workspace (engine/contain/run_guard.py)
    ran: bool = False  # its protocol ran (a reused step runs none)

    @property
    def role(self) -> Role:
        return self.workflow.roles[self.decision.role]

    @property
    def timeout(self) -> float | None:
        return self.options.timeout if self.options.timeout is not None else self.resolved.timeout

    def __post_init__(self) -> None:
        """The timeout bounds the whole call from here: every agent run, extraction and correction."""
        if self.timeout is not None and self.deadline is None:
            self.deadline = time.monotonic() + self.timeout

    def time_left(self) -> float | None:
        if self.deadline is None:
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise StepError(f"agent '{self.resolved.label}' ran out of the step's {self.timeout:g}s timeout", "timeout")
        return left

    @property
    def secrets(self) -> Secrets:
        return self.repo.secrets

    @cached_property
    def schema(self) -> dict:
        return self.repo.nodes.schema(self.role.meta)

    @cached_property
    def prompt_parts(self) -> Prompt:
        """The prompt in the parts it is stored by (write_answer shares them between steps)."""
        from .prompt import build_prompt_parts

        return build_prompt_parts(self.workflow, self.role, self.schema, self.context, self.decision.instruction)

    @cached_property
    def prompt(self) -> str:
        return self.prompt_parts.text

    @cached_property
    def agent_key(self) -> str:
        """The resolved agent entry's fingerprint (memoized replay indexes answers under it); a
        python agent's includes its code's identity, so changed code is not replayed."""
        from .reuse.index import agent_fingerprint

        return agent_fingerprint(self.resolved, self.python.identity if self.resolved.protocol == "python" else None)

    @cached_property
    def python(self) -> PythonFunction:
        """A python agent's function (registered for this session, or imported)."""
        from .python.load import function_of

        try:
            return function_of(self.repo, self.resolved)
        except UwfError as exc:
            raise StepError(f"python agent '{self.resolved.label}' ({self.resolved.python}): {exc.message}") from None

    @property
    def sees_store(self) -> bool:
        """A step-protocol agent writes its own nodes; any other agent is not shown the store."""
        return self.resolved.protocol == "step"

    @cached_property
    def contained(self) -> bool:
        """In a bubblewrap sandbox (else in the fallback containment, or uncontained)."""
        from .contain.sandbox import BUBBLEWRAP, containment

        return self.resolved.sandbox and containment().kind == BUBBLEWRAP

    @property
    def containment(self) -> str:
        """How the agent runs, as the records say it: bubblewrap, process-group (why), none."""
        return containment_of(self.resolved)

    @cached_property
    def env(self) -> dict[str, str]:
        from .reuse.index import AGENT_ENV

        env = agent_env(self.repo, self.resolved)
        if self.resolved.sandbox:
            from .contain.policy import agent_environment

            env = agent_environment(env)  # no agent socket or session bus: a way out of any sandbox
        if self.sees_store or not self.contained:
            location = self.repo.location  # a directory as the place it leads to (the sandbox mounts that)
            env["UWF_STORAGE_ROOT"] = os.path.realpath(location) if os.path.isdir(location) else location
        else:
            env.pop("UWF_STORAGE_ROOT", None)  # the root is hidden from it: no path to a store that is not there
        env.update(
            UWF_THREAD=self.info.thread,
            UWF_ROLE=self.role.name,
            UWF_HEAD=self.info.head,
            UWF_WORKFLOW=self.workflow.hash or "",
        )
        env[AGENT_ENV] = self.agent_key  # the kit indexes its answer for memoized replay
        env["UWF_WORKSPACE"] = self.workspace
        if self.resolved.alias:
            env["UWF_AGENT"] = self.resolved.label  # the kit records the step under the user's name for it
        else:
            env.pop("UWF_AGENT", None)
        if self.decision.instruction:
            env["UWF_INSTRUCTION"] = self.decision.instruction
        else:
            env.pop("UWF_INSTRUCTION", None)
        return env

    @cached_property
    def workspace(self) -> str:
        """The thread's workspace, else the caller's directory: what the agent may write."""
        workspace = self.context.start.workspace
        if workspace:
            from ..thread.files import thread_workspace

            workspace = thread_workspace(self.repo, self.info.thread, self.context.start)
        if workspace and not os.path.isdir(workspace):
            raise StepError(f"the thread's workspace {workspace} does not exist")
        return os.path.abspath(workspace or os.getcwd())

    @cached_property
    def cwd(self) -> str:
        """The thread's workspace (else the caller's directory), or the route's `location` inside it."""
        base = self.workspace
        location = self.decision.location
        if not location:
            return base
        real_base = os.path.realpath(base)
        path = os.path.realpath(os.path.join(base, location))
        if path != real_base and not path.startswith(real_base + os.sep):
            raise StepError(f"location '{location}' of role '{self.role.name}' leads out of the workspace {base}")
        if not os.path.isdir(path):
            raise StepError(f"location '{location}' of role '{self.role.name}' is not a directory in the workspace {base}")
        return path

    @cached_property
    def policy(self) -> Policy:
        """What the agent may see and touch (engine/contain/sandbox.py)."""
        from .contain.policy import agent_policy

        backend = self.repo.backend
        env_files = (self.repo.env_path, os.environ.get("UWF_ENV_FILE") or "", os.path.join(os.path.expanduser("~"), ".uwf", ".env"))
        return agent_policy(
            cwd=self.cwd,
            workspace=self.workspace,
            sees_store=self.sees_store,
            store=(backend.store_dirs, backend.node_dirs, backend.socket_dirs),
            env_files=tuple(path for path in env_files if path),
            argv=self.resolved.argv,
            env=self.env,
            runs_steps=self.is_ours("uwf-subflow"),
            stage=self.stage,
            private_dirs=backend.private_dirs,
            writable=self.resolved.writable,
            readable=self.resolved.readable,
            hide=self.resolved.hide,
            state=self.resolved.state,
            scratch=backend.scratch_dir,
            network=self.resolved.network,
            sandbox=self.resolved.sandbox,
            forks_dir=self._forks_dir(),
        )

    def _forks_dir(self) -> str | None:
        """The root's directory of forks' workspaces, when this thread's workspace is one of them."""
        if self.context.start.workspace is None or self.workspace == os.path.realpath(self.context.start.workspace):
            return None
        from ..thread.files import workspaces_dir

        try:
            return workspaces_dir(self.repo)
        except UwfError:
            return None

    def open_stage(self) -> str | None:
        """A staging directory for a sandboxed step agent's nodes (uwf takes them in after checking
        them); None where it writes the store itself: no sandbox, uwf-subflow, a PostgreSQL root."""
        if self.sees_store and self.contained and not self.is_ours("uwf-subflow"):
            self.stage = self.repo.backend.new_stage()
        return self.stage

    def is_ours(self, *names: str) -> bool:
        """Whether the agent is one of uwf's own bundled commands (uwf-subflow, uwf-builtin...),
        installed beside this uwf: a command of that name elsewhere is anyone's. A relative path is
        the agent's (its cwd), as the sandbox runs it; a relative PATH entry counts for nothing."""
        from .contain.which import which

        command = self.resolved.argv[0] if self.resolved.argv else ""
        if os.path.basename(command) not in names:
            return False
        if os.sep in command:
            found = os.path.join(self.cwd, command)
        else:
            path = os.pathsep.join(entry for entry in self.env.get("PATH", "").split(os.pathsep) if os.path.isabs(entry))
            found = which(command, path=path)
        ours = os.path.dirname(os.path.abspath(sys.executable))
        return found is not None and os.path.dirname(os.path.normpath(found)) == ours

    def spawn(self, argv: list[str], stdin_text: str | None, prompt_data: bytes | None = None) -> ProcessOutcome:
        """Run the agent, contained; `prompt_data` is its {prompt_file} in a sandbox's /tmp."""
        shown = self.options.on_output
        on_output = None if shown is None else lambda line: shown(self.secrets.text(line))
        _warn_uncontained(self.resolved, on_output)
        env, fds = self.env, ()
        if self.sees_store:  # its kit reads its keys from this file, since the sandbox hides .env
            from ..config.env import SECRETS_FD_ENV, secrets_file

            fds = (secrets_file(self.step_agent_keys()),)
            env = {**env, SECRETS_FD_ENV: str(fds[0])}
        if self.stage:
            env = {**env, **self.repo.backend.stage_env(self.stage)}
        with self.agent_span(self.resolved.argv) as span:
            pipe = _trace_pipe(span, stdin_text if stdin_text is not None else prompt_data)
            if pipe is not None:
                env, fds = {**env, **pipe.env}, (*fds, pipe.fd)
            guard = None
            try:
                from .contain.run_guard import RunGuard

                guard = RunGuard.open(
                    self.resolved, workspace=self.workspace, env=self.env, scratch=self.repo.backend.scratch_dir,
                    cache=self.repo.backend.cache_dir, thread=self.info.thread, boxed=self.contained, stage=self.stage,
                    keys=tuple(secret for secret, _ in self.secrets.byte_replacements()))
                outcome = run_process(
                    argv,
                    cwd=self.cwd,
                    env=env,
                    stdin_text=stdin_text,
                    timeout=self.time_left(),
                    on_output=on_output, on_start=lambda pid: self.lease.update(pgid=pid),
                    cancel=KillWatch(self.repo, self.info.thread, self.options.cancel),
                    policy=self.policy if guard is None else guard.policy(self.policy),
                    prompt_data=prompt_data,
                    pass_fds=fds,
                    redact=self.secrets.window,  # before the stderr is cut to its tail: never half a key kept
                )
            finally:
                for fd in fds:
                    if pipe is None or fd != pipe.fd:
                        os.close(fd)
                if pipe is not None:
                    pipe.collect()
                if guard is not None:
                    self._settle(guard)
            span.put({"process.pid": outcome.pid, "process.exit_code": outcome.exit_code, "uwf.timed_out": outcome.timed_out or None,
                      "uwf.cancelled": outcome.cancelled or None})
            if pipe is not None and pipe.content:
                span.put({"output.value": outcome.stdout})
            refused = guard.refusal() if guard is not None else None
            if refused is not None:
                raise refused
            self._check(outcome)
        return outcome

    def _settle(self, guard) -> None:
        """What the run left outside its workspace, on record; what a later session trusts, said."""
        try:
            written = guard.settle()
        except (OSError, UwfError) as exc:  # a copy that cannot be read back: said, never the step's own failure hidden
            written = OutsideWrites(notes=(f"what the run wrote outside its workspace could not all be read back: {exc}",))
        written = written.mapped(self.secrets.text)  # a file or branch the agent named after a key it was given
        self.outside = written if self.outside is None else self.outside.merged(written)
        say = self.options.on_warning or self.options.on_output
        if say is not None:
            for line in (*written.warnings, *written.notes):
                say(f"uwf: warning: {line}")

    def agent_span(self, command: tuple[str, ...] | list[str]):
        """The span of one run of this agent, under the step's (engine/tracing.py)."""
        from .tracing import agent_span
        in_process = self.resolved.protocol == "python" and not self.resolved.isolate  # it is uwf: nothing contains it
        containment = "none" if in_process or not self.resolved.sandbox else "bubblewrap" if self.contained else "subreaper"
        return agent_span(self.resolved.label, self.resolved.protocol, command, containment)

    def step_agent_keys(self) -> dict[str, str]:
        """What a step agent may use of .env: the keys its entry names; for uwf's own agents, each
        provider's key (uwf-builtin's model, the extract fallback); for uwf-subflow, which runs a
        child thread's agents as uwf does, all of it (each child gets only what its entry names)."""
        if self.is_ours("uwf-subflow"):
            return dict(self.repo.env_values)
        names = set(self.resolved.secrets)
        if self.is_ours("uwf-builtin", "uwf-script"):
            names.update(provider.api_key_env for provider in self.repo.config.providers.values() if provider.api_key_env)
        return {name: value for name, value in self.repo.env_values.items() if name in names}

    def _check(self, outcome: ProcessOutcome) -> None:
        tail = self.secrets.text(outcome.stderr_tail.strip())
        label = self.resolved.label
        if outcome.timed_out:
            last = f"; its last stderr: {excerpt_end(tail, 200)}" if tail else ""
            raise StepError(f"agent '{label}' timed out after {self.timeout:g}s; its process group was killed{last}", "timeout", tail)
        if outcome.cancelled:
            if self.info.thread not in self.repo.threads.heads():
                raise StepError(f"thread {self.info.thread} was killed while agent '{label}' ran; its process group was stopped", "killed", tail)
            why = self.options.cancel.why() if self.options.cancel is not None else ""
            raise StepError(f"agent '{label}' was cancelled{why}; its process group was killed", "killed", tail)
        if outcome.overflowed:
            raise StepError(
                f"agent '{label}' printed more than {MAX_STDOUT_BYTES // 1_000_000} MB on stdout (an answer is at most "
                f"8,000,000 characters); its process group was killed", "failed", tail,
            )
        if outcome.exit_code == 0:
            return  # a kill meanwhile is caught by the compare-and-set of the head
        if self.contained:
            from .contain.sandbox import setup_failure

            failure = setup_failure(outcome.raw_exit_code, outcome.stderr_tail)
            if failure:
                raise StepError(f"agent '{label}' could not be started: its sandbox could not be set up ({failure})", "failed", tail)
        if self.info.thread not in self.repo.threads.heads():
            raise StepError(f"thread {self.info.thread} was killed while agent '{label}' ran", "killed", tail)
        how = f"was killed by signal {-outcome.exit_code}" if outcome.exit_code < 0 else f"exited with code {outcome.exit_code}"
        if tail:
            suffix = f"; stderr: {excerpt_end(tail, 300)}"
        else:  # some CLIs (Claude Code) print their error on stdout
            out = self.secrets.text(outcome.stdout.strip())
            suffix = f"; no stderr; stdout: {excerpt_end(out, 300)}" if out else "; it printed nothing"
        raise StepError(f"agent '{label}' {how}{suffix}", "failed", tail)


_WARNED: set[str] = set()


def containment_of(resolved: ResolvedAgent) -> str:
    """bubblewrap, process-group (and why: no bubblewrap here), none (`sandbox: false`), or in
    uwf's process (a python agent not isolated)."""
    from .contain.sandbox import BUBBLEWRAP, containment

    if resolved.protocol == "python" and not resolved.isolate:
        return "in uwf's process"
    if resolved.protocol == "human":
        return "none (a person)"
    if not resolved.sandbox:
        return "none (sandbox: false)"
    box = containment()
    return BUBBLEWRAP if box.kind == BUBBLEWRAP else f"process-group ({box.reason})"


def _trace_pipe(span, prompt: str | bytes | None):
    """The pipe an agent reports its own spans on, when this step is traced; with content on, the
    span shows the prompt."""
    from .tracing import active_trace

    trace = active_trace()
    if trace is None or not isinstance(span, Span):
        return None
    from ..telemetry.pipe import TracePipe

    pipe = TracePipe(span, trace.trace_id, trace.content)
    if trace.content and prompt is not None:
        span.put({"input.value": prompt if isinstance(prompt, str) else prompt.decode("utf-8", "replace")})
    return pipe


def _warn_uncontained(resolved: ResolvedAgent, on_output) -> None:
    """Once per process (and per agent that turned it off): an agent about to run without a
    sandbox is said to, and why, before it runs."""
    from .contain.sandbox import BUBBLEWRAP, containment

    if not resolved.sandbox:
        key, message = resolved.label, (
            f"uwf: warning: agent '{resolved.label}' runs without a sandbox (sandbox: false in its entry): it can write "
            f"anywhere you can and read the root's .env; only its processes are ended with the step"
        )
    else:
        box = containment()
        if box.kind == BUBBLEWRAP or box.nested:
            return
        advice = "install bubblewrap" if "not installed" in (box.reason or "") else "see docs/explanation/containment.md"
        key, message = "", (
            f"uwf: warning: agents run without a sandbox: {box.reason}; each runs in a process group that uwf ends "
            f"with its step, but it can write outside its workspace and read the root ({advice})"
        )
    if key in _WARNED or on_output is None:  # said where it can be seen (a worker says it once as it starts)
        return
    _WARNED.add(key)
    on_output(message)


class KillWatch:
    """The step's cancel flag, set also when the thread is archived (killed) meanwhile: `uwf thread
    kill` on another host cannot signal this agent's process group, so the step looks itself,
    every few seconds, and stops its agent."""

    EVERY_SECONDS = 2.0

    def __init__(self, repo: Repo, thread: str, cancel) -> None:
        self.repo = repo
        self.thread = thread
        self.cancel = cancel
        self.next_look = time.monotonic() + self.EVERY_SECONDS
        self.killed = False

    def is_set(self) -> bool:
        if self.cancel is not None and self.cancel.is_set():
            return True
        if not self.killed and time.monotonic() >= self.next_look:
            self.next_look = time.monotonic() + self.EVERY_SECONDS
            try:
                self.killed = self.thread not in self.repo.threads.heads()
            except UwfError:
                pass  # a damaged index is the compare-and-set's to report
        return self.killed

    def why(self) -> str:
        return self.cancel.why() if self.cancel is not None and self.cancel.is_set() else ""


def excerpt_end(text: str, limit: int) -> str:
    """The last `limit` characters of `text`, starting at a line or word boundary, not mid-word."""
    if len(text) <= limit:
        return text
    tail = text[-limit:]
    for boundary in ("\n", " "):
        cut = tail.find(boundary)
        if 0 <= cut < limit // 2:
            return "…" + tail[cut + 1 :]
    return "…" + tail
