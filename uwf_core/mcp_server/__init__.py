"""`uwf mcp`: uwf as a Model Context Protocol server (the `mcp` extra).

A front end beside the CLI and the TUI, over the same public functions: tools that list, show,
lint and put workflows and start, step, run, fork, kill, pick and answer threads; resources for
a thread (as `thread read` prints it), a step, a workflow and a CAS node, announced as updated
when a thread moves. Read-only unless started with `--allow write`: an MCP client is often an
agent, and what it may change is the user's choice, not its own.
"""
