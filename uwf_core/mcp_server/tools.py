"""The tools `uwf mcp` offers, each the function a CLI command calls, its result the JSON that
command prints. Read tools first; then the ones that write, which the gate refuses unless the
server was started with `--allow write`."""

from __future__ import annotations

import contextvars
import functools
import inspect
import re
from typing import Annotated, Any, Callable

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from ..errors import UwfError
from .gate import Gate, Refused, one_line
from .stepping import run_blocking

READ = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
STEPS = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=True)  # an agent runs
KILL = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)
MAX_FILE_CHARS = 200_000  # a file's content in one answer
REFUSAL: contextvars.ContextVar[str | None] = contextvars.ContextVar("uwf_mcp_refusal", default=None)  # server.py's check of the arguments

Thread = Annotated[str, Field(description="a thread id (or a unique prefix of one)")]
Step = Annotated[str, Field(description="a step's hash (or a unique prefix); a start's for files")]
WorkflowName = Annotated[str, Field(description="a registered workflow's name, or a workflow hash")]
Yaml = Annotated[str, Field(description="a workflow as YAML text, as `uwf workflow put FILE` takes it")]
Agent = Annotated[str | None, Field(description="one of the root's agents for this step, over the workflow's choice")]


def register(server: MCPServer, gate: Gate) -> dict[str, frozenset[str]]:
    """The tools on `server`; each tool's argument names (the SDK passes over any other)."""
    tools = _Tools(server)
    _workflow_tools(tools, gate)
    _reading_tools(tools, gate)
    _writing_tools(tools, gate)
    return tools.arguments


class _Tools:
    """server.tool, with a uwf error (or a refusal) as the tool's one-line error: the SDK keeps
    the text of a ToolError only, and says nothing of any other exception but its tool's name."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.arguments: dict[str, frozenset[str]] = {}

    def tool(self, annotations: ToolAnnotations) -> Callable[[Callable], Callable]:
        def register(fn: Callable) -> Callable:
            is_async = inspect.iscoroutinefunction(fn)

            @functools.wraps(fn)
            async def wrapper(*args, **kwargs):  # async: the refusal is read in the request's own context
                _refuse_if_told()
                try:
                    if is_async:
                        return await fn(*args, **kwargs)
                    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))  # off the event loop
                except (UwfError, Refused) as exc:
                    raise ToolError(_as_tools(one_line(exc), self.arguments)) from None

            self.server.add_tool(wrapper, annotations=annotations, description=inspect.cleandoc(fn.__doc__ or ""))
            names = [name for name, param in inspect.signature(fn).parameters.items() if param.annotation not in (Context, "Context")]
            self.arguments[fn.__name__] = frozenset(names)
            return fn

        return register


def _as_tools(message: str, tools: dict) -> str:
    """A uwf error says what to do next as a command line (`uwf thread fork`): here, as the tool."""

    def tool(match: re.Match) -> str:
        name = f"{match.group(1)}_{match.group(2).replace('-', '_')}"
        return f"`{name}`" if name in tools else match.group(0)

    return re.sub(r"`uwf (thread|workflow) ([a-z-]+)[^`]*`", tool, message)


def _refuse_if_told() -> None:
    refusal = REFUSAL.get()
    if refusal is not None:
        raise ToolError(refusal)


def _workflow_tools(server: _Tools, gate: Gate) -> None:
    repo = gate.repo

    @server.tool(READ)
    def workflow_list() -> dict[str, Any]:
        """Registered workflows: {workflows: [{name, hash}]} (`uwf workflow list`)."""
        entries = repo.registry.entries()
        return {"workflows": [{"name": name, "hash": entries[name].hash} for name in sorted(entries)]}

    @server.tool(READ)
    def workflow_show(workflow: WorkflowName, source: bool = False) -> dict[str, Any]:
        """A workflow's payload (roles, graph, conditions); with source, the YAML it was put from."""
        from ..workflow.ops import load_workflow, workflow_source

        if source:
            return {"source": workflow_source(repo, workflow)}
        return load_workflow(repo, workflow).to_payload()

    @server.tool(READ)
    def workflow_graph(workflow: WorkflowName, mermaid: bool = False) -> str:
        """The roles and labelled transitions, as text (or a Mermaid flowchart)."""
        from ..workflow.graph_text import render_mermaid, render_text
        from ..workflow.ops import load_workflow

        loaded = load_workflow(repo, workflow)
        return render_mermaid(loaded) if mermaid else render_text(loaded)

    @server.tool(READ)
    def workflow_lint(yaml: Yaml) -> dict[str, Any]:
        """Check a workflow without storing it: {ok, problems: [{severity, message}]}."""
        from ..workflow.ops import lint_text

        draft = lint_text(yaml)
        problems = [{"severity": problem.severity, "message": problem.format(draft.document)} for problem in draft.problems]
        return {"ok": not draft.errors, "problems": problems}

    @server.tool(WRITE)
    def workflow_put(yaml: Yaml) -> dict[str, Any]:
        """Register a workflow (a new version when the name exists): {name, hash, changed, warnings}."""
        from ..workflow.ops import put_workflow_text

        gate.write("workflow_put")
        result = put_workflow_text(repo, yaml)
        return {"name": result.name, "hash": result.hash, "changed": result.changed, "warnings": result.warnings}


def _reading_tools(server: _Tools, gate: Gate) -> None:
    repo = gate.repo

    @server.tool(READ)
    def thread_list(all: bool = False) -> dict[str, Any]:  # noqa: A002 — the CLI's --all
        """{threads: [...]}: the active threads, newest first (with all, archived ones too, with their reason)."""
        from ..thread.reports import threads_report

        return {"threads": threads_report(repo, include_archived=all)}

    @server.tool(READ)
    def thread_show(thread: Thread) -> dict[str, Any]:
        """{workflow, thread, head, done, steps, ...}: what runs, waits or asks now, its files."""
        from ..thread.reports import thread_report

        return thread_report(repo, thread)

    @server.tool(READ)
    def thread_steps(thread: Thread) -> dict[str, Any]:
        """{steps: [...]}: a thread's steps, oldest first: hash, role, agent, output, detail, containment."""
        from ..thread.reports import steps_report

        return {"steps": steps_report(repo, thread)}

    @server.tool(READ)
    def thread_read(
        thread: Thread,
        quota: Annotated[int | None, Field(ge=1, description="at most this many characters (the newest steps kept)")] = None,
        before: Annotated[str | None, Field(description="only the steps before this step's hash")] = None,
    ) -> str:
        """The whole thread as Markdown, as an agent of it reads its history."""
        from ..thread.read import read_thread

        return read_thread(repo, thread, quota=quota, before=before)

    @server.tool(READ)
    def thread_dry_run(
        thread: Thread,
        role: Annotated[str | None, Field(description="preview this role's step instead of the moderator's choice")] = None,
        agent: Agent = None,
    ) -> dict[str, Any]:
        """What the next step would do (role and why, agent and why, the prompt); writes nothing."""
        from ..engine.dry_run import dry_run

        return dry_run(repo, thread, role=role, agent=gate.agent(agent)).to_json()

    @server.tool(READ)
    def thread_cost(thread: Thread, tree: bool = False) -> dict[str, Any]:
        """Tokens and cost per step, agent, model and role; with tree, the forks' too."""
        from ..thread.ledger import thread_cost as cost, tree_cost

        return (tree_cost(repo, thread) if tree else cost(repo, thread)).to_json()

    @server.tool(READ)
    def step_details(step: Step) -> dict[str, Any]:
        """A step's output, detail, answer and prompt, with the attempt that wrote it."""
        from ..thread.details import step_details as details

        return details(repo, step).to_json()

    @server.tool(READ)
    def thread_files(
        step: Step, path: Annotated[str | None, Field(description="a file's path: its content as the step left it")] = None
    ) -> dict[str, Any]:
        """The paths a step added, modified and deleted (by hand before it, and by it); with path,
        that file's content in the step's snapshot."""
        from ..thread.files import file_at
        from ..thread.ops import resolve_node
        from ..thread.reports import files_report

        if path is None:
            return files_report(repo, step)
        kind, content = file_at(repo, resolve_node(repo, step), path)
        text = content.decode("utf-8", "replace")
        data: dict[str, Any] = {"path": path, "kind": kind, "size": len(content), "content": text[:MAX_FILE_CHARS]}
        if len(text) > MAX_FILE_CHARS:
            data["truncated"] = True
        if b"\0" in content[:8192]:
            data["binary"] = True
        return data

    @server.tool(READ)
    def inbox() -> dict[str, Any]:
        """{waiting: [...]}: the threads waiting for a person's answer (a human role), oldest first."""
        from ..engine.queue.inbox import inbox as waiting

        return {"waiting": [item.to_json() for item in waiting(repo)]}

    @server.tool(READ)
    def ps() -> dict[str, Any]:
        """{running: [...]}: every step in flight on the root, from any host: thread, role, agent, host, pid, since."""
        from ..thread.reports import running_report

        return {"running": running_report(repo)}


def _writing_tools(server: _Tools, gate: Gate) -> None:
    repo = gate.repo

    @server.tool(WRITE)
    def thread_start(
        workflow: WorkflowName,
        prompt: Annotated[str, Field(min_length=1, description="the task")],
        workspace: Annotated[str | None, Field(description="the agents' working directory, inside the server's")] = None,
        agents: Annotated[dict[str, str] | None, Field(description="role -> one of the root's agents, for this thread")] = None,
    ) -> dict[str, Any]:
        """Start a thread (no step is run): {workflow, thread, head}."""
        from ..thread.ops import start_thread

        gate.write("thread_start")
        bindings = {role: gate.agent(agent) for role, agent in (agents or {}).items()}
        info = start_thread(repo, workflow, prompt, gate.workspace(workspace), bindings or None)
        return {"workflow": info.workflow, "thread": info.thread, "head": info.head}

    @server.tool(STEPS)
    async def thread_step(
        thread: Thread,
        ctx: Context,
        agent: Agent = None,
        timeout: Annotated[float | None, Field(gt=0, description="the whole step's time limit in seconds")] = None,
    ) -> dict[str, Any]:
        """One moderator -> agent -> extract cycle. The agent's output lines come as progress;
        cancelling the call stops the agent (the attempt is recorded, the head does not move)."""
        from ..encoding.records import replace
        from ..engine.step import perform_step

        gate.write("thread_step")
        chosen = gate.agent(agent)
        result = await run_blocking(ctx, lambda options: perform_step(repo, thread, replace(options, agent=chosen, timeout=timeout)))
        return result.to_json()

    @server.tool(STEPS)
    async def thread_run(
        thread: Thread,
        ctx: Context,
        max_steps: Annotated[int, Field(ge=1, le=1000, description="stop after this many steps")] = 10,
        agent: Agent = None,
    ) -> dict[str, Any]:
        """Step until the thread is done, a step fails, or max_steps steps; progress as thread_step."""
        from ..encoding.records import replace
        from ..engine.step import run_thread

        gate.write("thread_run")
        chosen = gate.agent(agent)
        result = await run_blocking(ctx, lambda options: run_thread(repo, thread, replace(options, agent=chosen), max_steps=max_steps))
        return result.to_json()

    @server.tool(WRITE)
    def thread_fork(
        step: Annotated[str, Field(description="a step's hash (or a unique prefix); with from_role, a thread")],
        output: Annotated[dict[str, Any] | None, Field(description="fork from a copy of the step with this output (agent 'human')")] = None,
        workspace: Annotated[str | None, Field(description="the fork's own directory, inside the server's")] = None,
        from_role: Annotated[str | None, Field(description="fork from the thread's last step of this role")] = None,
        nth: Annotated[int | None, Field(ge=1, description="with from_role: its nth step of that role, 1 the first")] = None,
    ) -> dict[str, Any]:
        """A new thread whose head is an existing step: {workflow, thread, head, workspace}."""
        from ..thread.ops import fork_thread, fork_with_output, role_step
        from ..thread.reports import fork_report

        gate.write("thread_fork")
        if nth is not None and from_role is None:
            raise Refused("nth counts the steps of the role from_role names: give it")
        if from_role is not None:
            step = role_step(repo, step, from_role, nth)
        where = gate.workspace(workspace)
        info = fork_thread(repo, step, where) if output is None else fork_with_output(repo, step, output, where)
        return fork_report(repo, info)

    @server.tool(WRITE)
    def thread_resume(thread: Thread, prompt: Annotated[str, Field(min_length=1, description="the new task")]) -> dict[str, Any]:
        """Continue an archived thread with a new prompt: {workflow, thread, head}."""
        from ..thread.ops import resume_thread

        gate.write("thread_resume")
        info = resume_thread(repo, thread, prompt)
        return {"workflow": info.workflow, "thread": info.thread, "head": info.head}

    @server.tool(KILL)
    def thread_kill(thread: Thread) -> dict[str, Any]:
        """Archive a thread as killed and stop its running agent."""
        from ..engine.control import kill_thread

        gate.write("thread_kill")
        return kill_thread(repo, thread).to_json()

    @server.tool(WRITE)
    def thread_pause(thread: Thread) -> dict[str, Any]:
        """Pause a thread: its step in flight finishes, none starts after it (thread_step,
        thread_run, `uwf worker` on any host) until thread_unpause."""
        from ..thread.pause import pause_thread

        gate.write("thread_pause")
        thread_id, now = pause_thread(repo, thread)
        return {"thread": thread_id, "paused": True, "already": not now}

    @server.tool(WRITE)
    def thread_unpause(thread: Thread) -> dict[str, Any]:
        """Let a paused thread go on (a queued one: the workers take it up again)."""
        from ..thread.pause import unpause_thread

        gate.write("thread_unpause")
        return {"thread": unpause_thread(repo, thread), "paused": False}

    @server.tool(WRITE)
    def thread_pick(step: Step, thread: Annotated[str | None, Field(description="the thread it becomes the next step of")] = None) -> dict[str, Any]:
        """Make a side-by-side candidate's step the thread's next step."""
        from ..engine.fanout.side_by_side import pick_step

        gate.write("thread_pick")
        return pick_step(repo, step, thread).to_json()

    @server.tool(WRITE)
    def thread_answer(
        thread: Thread, answer: Annotated[str, Field(min_length=1, description="the role's output: JSON, YAML, or frontmatter Markdown")]
    ) -> dict[str, Any]:
        """Answer a thread waiting for a person (see inbox): one step, recorded as agent `human`."""
        from ..engine.queue.inbox import answer_thread

        gate.write("thread_answer")
        result = answer_thread(repo, thread, answer)
        data = result.to_json()
        data["queued"] = any(entry.thread == result.thread for entry in repo.backend.queue.entries())
        return data
