"""The LangGraph side of the benchmark: the same three-role loop (planner -> developer ->
reviewer, back to developer while the reviewer does not approve) with no-op nodes, each step
appending {role, output, agent} to the state, checkpointed in SQLite (SqliteSaver), one node
per `invoke` (interrupt after each). Run as a fresh process per step, as `uwf thread step` is:

    python langgraph_side.py step DB THREAD
    python langgraph_side.py build DB THREAD N      # a checkpoint whose state holds N steps
    python langgraph_side.py grow DB THREAD N       # N invokes in one process (prints seconds, wall and CPU)
    python langgraph_side.py fork DB THREAD AT NEW  # a new thread from the checkpoint after AT steps

Needs `pip install -e '.[bench]'` (langgraph, langgraph-checkpoint-sqlite).
"""

from __future__ import annotations

import operator
import sqlite3
import sys
import time
from typing import Annotated, TypedDict

ROLES = ("planner", "developer", "reviewer")
OUTPUTS = {"planner": {"plan": "p"}, "developer": {"summary": "s"}, "reviewer": {"approved": False}}


class State(TypedDict):
    prompt: str
    steps: Annotated[list, operator.add]


def _node(role: str):
    def node(state: State) -> dict:
        return {"steps": [{"role": role, "output": OUTPUTS[role], "agent": "noop"}]}

    return node


def _route(state: State) -> str:
    return "developer" if state["steps"][-1]["output"].get("approved") is False else "__end__"


def graph(saver):
    from langgraph.graph import START, StateGraph

    builder = StateGraph(State)
    for role in ROLES:
        builder.add_node(role, _node(role))
    builder.add_edge(START, "planner")
    builder.add_edge("planner", "developer")
    builder.add_edge("developer", "reviewer")
    builder.add_conditional_edges("reviewer", _route)
    return builder.compile(checkpointer=saver, interrupt_after=list(ROLES))


def role_at(index: int) -> str:
    """The role of step `index` (0-based) of the loop: planner, then developer/reviewer."""
    return "planner" if index == 0 else ("developer" if index % 2 == 1 else "reviewer")


def open_graph(db: str):
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(db, check_same_thread=False)
    return conn, graph(SqliteSaver(conn))


def step(compiled, thread: str) -> None:
    config = {"configurable": {"thread_id": thread}}
    state = compiled.get_state(config)
    compiled.invoke(None if state.values else {"prompt": "bench", "steps": []}, config)


def build(compiled, thread: str, count: int) -> None:
    """A checkpoint after `count` steps, written at once (growing it step by step stores the whole
    state at every step: gigabytes at 10,000)."""
    config = {"configurable": {"thread_id": thread}}
    steps = [{"role": role_at(i), "output": OUTPUTS[role_at(i)], "agent": "noop"} for i in range(count)]
    compiled.update_state(config, {"prompt": "bench", "steps": steps}, as_node=role_at(count - 1))


def main(argv: list[str]) -> None:
    mode, db, thread = argv[:3]
    conn, compiled = open_graph(db)
    try:
        if mode == "step":
            step(compiled, thread)
        elif mode == "build":
            build(compiled, thread, int(argv[3]))
        elif mode == "grow":
            started, cpu = time.perf_counter(), time.process_time()
            for _ in range(int(argv[3])):
                step(compiled, thread)
            print(time.perf_counter() - started, time.process_time() - cpu)
        elif mode == "fork":
            at, new = int(argv[3]), argv[4]
            config = {"configurable": {"thread_id": thread}}
            found = next(s for s in compiled.get_state_history(config) if len(s.values.get("steps", [])) == at)
            compiled.update_state({"configurable": {"thread_id": new}}, found.values, as_node=role_at(at - 1))
        else:
            raise SystemExit(f"unknown mode {mode}")
    finally:
        conn.close()


if __name__ == "__main__":
    main(sys.argv[1:])
