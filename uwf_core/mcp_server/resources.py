"""The resources `uwf mcp` offers, and the watch that announces them updated: a thread as
`thread read` prints it, the thread list, a step's details, a workflow's YAML, a CAS node. The
watch is the root's own change signal (a directory root's state files, polled; a PostgreSQL
root's NOTIFY), the one a worker waits on."""

from __future__ import annotations

import json
import threading
from contextlib import asynccontextmanager

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

from ..errors import UwfError
from .gate import Gate, one_line

THREADS = "uwf://threads"
WATCH_SECONDS = 1.0  # the longest the watch waits before it looks at its stop flag


def thread_uri(thread: str) -> str:
    return f"uwf://thread/{thread}"


def register(server: MCPServer, gate: Gate) -> None:
    repo = gate.repo

    @server.resource(THREADS, name="threads", mime_type="application/json")
    def threads() -> str:
        """The root's active threads, newest first (as the thread_list tool returns them)."""
        from ..thread.reports import threads_report

        return _answer(lambda: json.dumps(threads_report(repo), indent=2))

    @server.resource("uwf://thread/{thread}", name="thread", mime_type="text/markdown")
    def thread(thread: str) -> str:
        """A thread's steps as Markdown, as `uwf thread read` prints them."""
        from ..thread.read import read_thread

        return _answer(lambda: read_thread(repo, thread))

    @server.resource("uwf://step/{step}", name="step", mime_type="application/json")
    def step(step: str) -> str:
        """A step's output, detail, answer and prompt."""
        from ..thread.details import step_details

        return _answer(lambda: json.dumps(step_details(repo, step).to_json(), indent=2))

    @server.resource("uwf://workflow/{workflow}", name="workflow", mime_type="application/yaml")
    def workflow(workflow: str) -> str:
        """A workflow's YAML, as it was put."""
        from ..workflow.ops import workflow_source

        return _answer(lambda: workflow_source(repo, workflow))

    @server.resource("uwf://node/{hash}", name="node", mime_type="application/json")
    def node(hash: str) -> str:  # noqa: A002 — the URI's own word
        """A CAS node: {type, payload} (`uwf cas get`)."""
        return _answer(lambda: json.dumps(repo.nodes.get(hash).envelope(), indent=2))


def _answer(read):
    try:
        return read()
    except UwfError as exc:
        raise ResourceError(one_line(exc)) from None


@asynccontextmanager
async def watching(gate: Gate, bus: InMemorySubscriptionBus):
    """While the server runs: each thread whose head moves announced as updated, and the thread
    list when a thread starts or ends."""
    stop = threading.Event()

    def watch() -> None:
        backend = gate.repo.backend
        token = backend.change_token()
        heads = _heads(gate)
        while not stop.is_set():
            current = backend.wait_for_change(token, WATCH_SECONDS)
            if current == token:
                continue
            token, before, heads = current, heads, _heads(gate)
            events = [ResourceUpdated(thread_uri(thread)) for thread, head in heads.items() if before.get(thread) != head]
            events += [ResourceUpdated(thread_uri(thread)) for thread in before.keys() - heads.keys()]  # archived: read once more
            if before.keys() != heads.keys():
                events += [ResourceUpdated(THREADS), ResourcesListChanged()]
            for event in events:
                anyio.from_thread.run(bus.publish, event)

    async with anyio.create_task_group() as group:
        group.start_soon(_run_watch, watch, stop)
        try:
            yield
        finally:
            stop.set()
            group.cancel_scope.cancel()


async def _run_watch(watch, stop: threading.Event) -> None:
    try:
        await anyio.to_thread.run_sync(watch, abandon_on_cancel=True)
    except UwfError:
        pass  # a root that cannot be read now: tools say why; only the announcements stop
    finally:
        stop.set()


def _heads(gate: Gate) -> dict[str, str]:
    try:
        return dict(gate.repo.threads.heads())
    except UwfError:
        return {}
