"""`uwf mcp`'s thread_step tool against `uwf thread step`: the same no-op step, through one
server process that stays (the imports, the opened root and the sandbox's probe paid once) and
as a process per step, in turn in one run (issue 43's goal: ≤ 0.5x)."""

from __future__ import annotations

import time


def mcp_rows(report, Row, uwf, run_timed, runs: int) -> None:
    try:
        import anyio
        from mcp import Client, StdioServerParameters
    except ImportError:
        print("mcp: the mcp extra is not installed (pip install -e '.[mcp]'); skipped", flush=True)
        return
    print("a step through uwf mcp vs a uwf thread step process", flush=True)
    served, served_thread = uwf.root("mcp-served", 100)
    cli, cli_thread = uwf.root("mcp-cli", 100)
    ours: list[float] = []
    theirs: list[float] = []

    async def main() -> None:
        server = StdioServerParameters(command=uwf.cli()[0], args=["--root", served, "mcp", "--allow", "write"])
        async with Client(server, read_timeout_seconds=120) as client:
            await client.call_tool("thread_step", {"thread": served_thread})  # warm: the server's imports
            for _ in range(runs):
                started = time.perf_counter()
                result = await client.call_tool("thread_step", {"thread": served_thread})
                ours.append(time.perf_counter() - started)
                if result.is_error:
                    raise SystemExit(f"uwf mcp thread_step failed: {result.content[0].text}")
                theirs.append(run_timed(uwf.cli("--root", cli, "thread", "step", cli_thread)))

    anyio.run(main)
    report.add(Row("thread_step tool call (uwf mcp), no-op text agent", None, None, against="uwf thread step, a process",
                   goal="≤ 0.5x", ours_runs=ours, theirs_runs=theirs))
