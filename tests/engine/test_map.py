"""Map roles: one child thread per item, stepped maxParallel at a time, joined in item order; with
real `uwf` processes on a directory root and on a real PostgreSQL root."""

from __future__ import annotations

import signal
import time

import pytest
from place import runner

# A parent that plans items and maps `one` over them; `one` has a single role.
PARENT = """
name: plan-map
description: plan items, map one over them
roles:
  planner:
    description: lists items
    goal: g
    procedure: p
    output: o
    meta: {type: object, required: [items], properties: {items: {type: array, items: {type: string}}}}
  each:
    description: one child per item
    map: {over: items, workflow: one, prompt: "item {{index}}: {{item}}", maxParallel: PARALLEL, onFailure: FAILURE}
graph:
  $START: [{role: planner, condition: null}]
  planner: [{role: each, condition: null}]
  each: [{role: $END, condition: null}]
"""
CHILD = """
name: one
description: one item
roles:
  worker:
    description: does one item
    goal: g
    procedure: p
    output: o
    meta: {type: object, required: [text], properties: {text: {type: string}}}
graph:
  $START: [{role: worker, condition: null}]
  worker: [{role: $END, condition: null}]
"""
# The planner lists three items; a worker answers its item back after SLEEP seconds, and fails
# (exit 3) on an item that says "bad".
AGENT = (
    'prompt=$(cat); case "$UWF_ROLE" in planner) echo \'{"items": ["alpha", "ITEM2", "gamma"]}\';; '
    '*) sleep SLEEP; case "$prompt" in *bad*) echo broken >&2; exit 3;; esac; '
    'item=$(printf "%s" "$prompt" | grep -o "item [0-9]: [A-Za-z0-9]*" | head -1); echo "{\\"text\\": \\"$item\\"}";; esac'
)


@pytest.fixture(params=["dir", "postgresql"])
def place(request, root_dir, tmp_path):
    location = str(root_dir) if request.param == "dir" else request.getfixturevalue("pg_url")
    run = runner(location, str(root_dir / "host.env"))

    def setup(parallel: int = 3, failure: str = "fail", sleep: float = 0, second: str = "beta") -> str:
        (tmp_path / "one.yaml").write_text(CHILD)
        (tmp_path / "plan-map.yaml").write_text(PARENT.replace("PARALLEL", str(parallel)).replace("FAILURE", failure))
        run("workflow", "put", str(tmp_path / "one.yaml"))
        run("workflow", "put", str(tmp_path / "plan-map.yaml"))
        run("agent", "add", "fake", "--protocol", "text", "--", "sh", "-c", AGENT.replace("SLEEP", str(sleep)).replace("ITEM2", second))
        run("setup", "--default-agent", "fake")
        return run("thread", "start", "plan-map", "-p", "three items")["thread"]

    run.setup = setup
    return run


def _children(run, parent: str) -> list[dict]:
    [joined] = [step for step in run("thread", "steps", parent) if step["role"] == "each"]
    return joined["output"]["results"]


def test_a_map_over_three_items_joins_three_children_in_item_order(place):
    run = place
    parent = run.setup()
    result = run("thread", "run", parent)
    assert result["done"] and result["reason"] == "done"
    results = _children(run, parent)
    assert [r["index"] for r in results] == [0, 1, 2]
    assert [r["output"]["text"] for r in results] == ["item 0: alpha", "item 1: beta", "item 2: gamma"]
    assert all(r["status"] == "done" for r in results)
    listed = {t["thread"]: t for t in run("thread", "list", "--all")}
    for r in results:  # ordinary threads of the child workflow, each done
        assert listed[r["thread"]]["name"] == "one" and listed[r["thread"]]["reason"] == "done"
    [joined] = [s for s in run("thread", "steps", parent) if s["role"] == "each"]
    assert joined["agent"] == "uwf-map"
    detail = run("thread", "step-details", joined["hash"])["detail"]["payload"]
    assert detail["protocol"] == "map" and detail["children"] == [r["thread"] for r in results]
    [attempt] = [a for a in run("thread", "runs", parent) if a["role"] == "each"]
    assert attempt["status"] == "ok" and attempt["agent"] == "uwf-map"


def _intervals(run, children: list[str]) -> list[tuple[int, int]]:
    spans = []
    for child in children:
        attempts = run("thread", "runs", child)
        spans.append((min(a["startedAt"] for a in attempts), max(a["completedAt"] for a in attempts)))
    return sorted(spans)


@pytest.mark.parametrize("parallel", [1, 3])
def test_max_parallel_caps_the_children_stepping_at_once(place, parallel):
    run = place
    parent = run.setup(parallel=parallel, sleep=0.6)
    run("thread", "run", parent)
    spans = _intervals(run, [r["thread"] for r in _children(run, parent)])
    overlapping = any(later[0] < earlier[1] for earlier, later in zip(spans, spans[1:]))
    assert overlapping is (parallel > 1)  # one at a time, as the runs log shows; else at once


def test_a_failing_child_fails_the_step_and_a_new_step_goes_on_from_the_children(place):
    run = place
    parent = run.setup(failure="fail", second="bad")
    before = run("thread", "show", parent)
    failed = run("thread", "run", parent, code=1)
    assert "uwf: error: child 2 of 3 (thread " in failed.stderr and "exited with code 3" in failed.stderr
    head = run("thread", "show", parent)["head"]
    assert head != before["head"]  # the planner's step landed; the map's did not
    children = [t for t in run("thread", "list", "--all") if t["name"] == "one"]
    assert len(children) == 3
    again = run("thread", "step", parent, code=1)  # the same children: none started twice
    assert "child 2 of 3" in again.stderr
    assert len([t for t in run("thread", "list", "--all") if t["name"] == "one"]) == 3
    assert run("thread", "show", parent)["head"] == head


def test_a_failing_child_is_collected_when_the_workflow_says_so(place):
    run = place
    parent = run.setup(failure="collect", second="bad")
    assert run("thread", "run", parent)["done"]
    results = _children(run, parent)
    assert [r["status"] for r in results] == ["done", "failed", "done"]
    assert "exited with code 3" in results[1]["error"] and "output" not in results[1]


def test_killing_the_parent_kills_its_children(place):
    run = place
    parent = run.setup(sleep=60)
    running = run.spawn("thread", "run", parent)
    try:
        deadline = time.monotonic() + 60
        children = []
        while len(children) < 3 and time.monotonic() < deadline:
            children = [t["thread"] for t in run("thread", "list") if t["name"] == "one"]
            time.sleep(0.2)
        assert len(children) == 3
        shown = run("thread", "show", parent)
        assert shown["running"]["waiting"] == "0 of 3 children ended" and shown["running"]["agent"] == "uwf-map"
        run("thread", "kill", parent)
        _, err = running.communicate(timeout=60)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode == 1 and "Traceback" not in err
    archived = {t["thread"]: t.get("reason") for t in run("thread", "list", "--all")}
    assert [archived[child] for child in children] == ["killed"] * 3
    assert archived[parent] == "killed"


def test_a_map_stopped_half_way_finds_its_children_again(place):
    run = place
    parent = run.setup(parallel=1, sleep=1)
    running = run.spawn("thread", "run", parent)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the first child done, the second started
        done = [t for t in run("thread", "list", "--all") if t["name"] == "one" and t.get("reason") == "done"]
        if done:
            break
        time.sleep(0.1)
    running.send_signal(signal.SIGKILL)
    running.wait()
    assert run("thread", "run", parent)["done"]
    children = [t for t in run("thread", "list", "--all") if t["name"] == "one"]
    assert len(children) == 3  # the same three, not a second set
    assert [r["output"]["text"] for r in _children(run, parent)] == ["item 0: alpha", "item 1: beta", "item 2: gamma"]


def test_a_fork_after_the_join_does_not_run_the_children_again(place):
    run = place
    parent = run.setup()
    run("thread", "run", parent)
    steps = run("thread", "steps", parent)
    joined = next(s for s in steps if s["role"] == "each")
    fork = run("thread", "fork", joined["hash"])["thread"]
    assert run("thread", "run", fork)["done"]  # nothing is left after the map: it ends
    assert len([t for t in run("thread", "list", "--all") if t["name"] == "one"]) == 3
    planned = run("thread", "fork", steps[0]["hash"])["thread"]  # a fork before the map maps again
    run("thread", "run", planned)
    assert len([t for t in run("thread", "list", "--all") if t["name"] == "one"]) == 6


def test_the_map_form_is_linted(root_dir, uwf, tmp_path):
    (tmp_path / "one.yaml").write_text(CHILD)
    parent = PARENT.replace("PARALLEL", "2").replace("FAILURE", "fail")
    cases = {
        "unknown": (parent.replace("workflow: one", "workflow: nope"), "roles.each.map.workflow: no workflow named 'nope'"),
        "self": (parent.replace("workflow: one", "workflow: plan-map"), "roles.each.map.workflow: maps would never end: plan-map → plan-map"),
        "function": (parent.replace("over: items", "over: '$nosuch(items)'"), "over calls $nosuch, which is neither a JSONata function"),
        "over": (parent.replace("over: items", "over: 'items[['"), "roles.each.map.over: JSONata does not compile"),
        "parallel": (parent.replace("maxParallel: 2", "maxParallel: 0"), "roles.each.map.maxParallel: must be a positive integer"),
        "failure": (parent.replace("onFailure: fail", "onFailure: retry"), "roles.each.map.onFailure: must be one of fail, collect"),
        "field": (parent.replace("onFailure: fail", "onFailure: fail, each: 2"), "unknown map field 'each'"),
        "meta": (parent.replace("description: one child per item", "description: x\n    meta: {type: object}"), "a map role has only a description and its map"),
    }
    assert uwf("workflow", "put", str(tmp_path / "one.yaml")).code == 0
    for name, (text, message) in cases.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        done = uwf("workflow", "put", str(path))
        assert done.code == 1 and message in done.err, (name, done.err)
    assert [w["name"] for w in uwf("workflow", "list").json()] == ["one"]
    # A cycle through the registry: `one` mapping plan-map, which maps `one`, is refused where it forms.
    assert uwf("workflow", "put", str(tmp_path / "one.yaml")).code == 0
    (tmp_path / "plan-map.yaml").write_text(parent)
    assert uwf("workflow", "put", str(tmp_path / "plan-map.yaml")).code == 0
    looping = CHILD.replace("    goal: g\n    procedure: p\n    output: o\n    meta: {type: object, required: [text], properties: {text: {type: string}}}",
                            "    map: {over: x, workflow: plan-map}")
    assert "map: {over: x, workflow: plan-map}" in looping
    (tmp_path / "one-again.yaml").write_text(looping)
    done = uwf("workflow", "put", str(tmp_path / "one-again.yaml"))
    assert done.code == 1 and "maps would never end: one → plan-map → one" in done.err


def test_the_children_s_tokens_roll_up_into_the_parent_s_cost(root_dir, tmp_path):
    """Python agents that report usage: the map step's detail carries its children's tokens per
    model, and the parent's ledger counts them."""
    from uwf_core.api import PythonAnswer, Repo, put_workflow, run_thread, start_thread, thread_cost

    (tmp_path / "one.yaml").write_text(CHILD)
    (tmp_path / "plan-map.yaml").write_text(PARENT.replace("PARALLEL", "2").replace("FAILURE", "fail"))
    repo = Repo.open(str(root_dir))
    put_workflow(repo, str(tmp_path / "one.yaml"))
    put_workflow(repo, str(tmp_path / "plan-map.yaml"))

    def agent(ctx):
        if ctx.role == "planner":
            return {"items": ["a", "b", "c"]}
        return PythonAnswer({"text": ctx.task}, detail={"model": "m1", "usage": {"prompt_tokens": 10, "completion_tokens": 5}})

    repo.agents.register("fn", agent)
    from uwf_core.api import StepOptions

    parent = start_thread(repo, "plan-map", "x").thread
    assert run_thread(repo, parent, StepOptions(agent="fn")).done
    cost = thread_cost(repo, parent).to_json()
    assert cost["total"]["tokens"] == 45  # three children, 15 tokens each
    assert cost["byModel"]["m1"]["tokens"] == 45 and cost["byAgent"]["uwf-map"]["tokens"] == 45


def test_workers_step_the_children_on_more_than_one_worker(place):
    """`thread run --detach` and three `uwf worker` processes: the map queues its children, the
    workers share them, and the parent waits as `mapping` until they are done."""
    run = place
    parent = run.setup(parallel=3, sleep=1)
    run("thread", "run", parent, "--detach")
    workers = [run.spawn("worker", "--name", f"w{i}") for i in range(3)]
    try:
        deadline = time.monotonic() + 90
        seen = set()
        while time.monotonic() < deadline:
            listed = {t["thread"]: t for t in run("thread", "list", "--all")}
            shown = run("thread", "show", parent)
            seen.add(shown.get("reason") or _status(run, parent))
            seen.add(_progress(run, parent))
            if "waiting" in shown:
                seen.add(shown["waiting"])
            if listed[parent].get("reason"):
                break
            time.sleep(0.2)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.communicate(timeout=60)
    assert run("thread", "show", parent)["reason"] == "done"
    results = _children(run, parent)
    assert [r["output"]["text"] for r in results] == ["item 0: alpha", "item 1: beta", "item 2: gamma"]
    by = {a["worker"] for r in results for a in run("thread", "runs", r["thread"])}
    assert len(by) > 1, by  # the runs log names the worker of each attempt
    waited = [a for a in run("thread", "runs", parent) if a["status"] == "waiting"]
    assert [a["error"] for a in waited] == ["waiting for its 3 children, which workers step, 3 at a time"]  # one record, not one per look
    assert "mapping" in seen and "waiting for its 3 children, which workers step, 3 at a time" in seen
    assert {item for item in seen if isinstance(item, tuple)} <= {(0, 3), (1, 3), (2, 3), (3, 3)}  # (ended, total)
    assert any(isinstance(item, tuple) for item in seen)


def _progress(run, thread: str):
    from uwf_core.api import Repo, map_progress, thread_info

    repo = Repo.open(run.location)
    info = thread_info(repo, thread)
    return map_progress(repo, info) if info.active else None


def _status(run, thread: str) -> str:
    from uwf_core.api import Repo, thread_info, thread_statuses

    repo = Repo.open(run.location)
    return thread_statuses(repo, [thread_info(repo, thread)])[thread]


def test_dry_run_says_what_a_map_step_would_start(root_dir, uwf, tmp_path):
    (tmp_path / "one.yaml").write_text(CHILD)
    (tmp_path / "plan-map.yaml").write_text(PARENT.replace("PARALLEL", "2").replace("FAILURE", "collect"))
    for name in ("one", "plan-map"):
        assert uwf("workflow", "put", str(tmp_path / f"{name}.yaml")).code == 0
    assert uwf("agent", "add", "fake", "--protocol", "text", "--", "sh", "-c", AGENT.replace("SLEEP", "0").replace("ITEM2", "beta")).code == 0
    assert uwf("setup", "--default-agent", "fake").code == 0
    thread = uwf("thread", "start", "plan-map", "-p", "x").json()["thread"]
    assert uwf("thread", "step", thread).code == 0
    preview = uwf("thread", "dry-run", thread).json()
    assert (preview["outcome"], preview["role"], preview["agent"]) == ("map", "each", None)
    assert preview["note"] == (
        "a map: 3 child threads of workflow 'one' (one per item of items, 2 at a time, onFailure collect), "
        "no agent of its own; 0 started and still active"
    )
    assert [t["thread"] for t in uwf("thread", "list", "--all").json()] == [thread]  # nothing was started
