"""The tools around forking, through the real CLI (issue 12): `uwf diff`, `uwf thread dry-run`,
`uwf bundle export/import`, memoized replay (`--reuse`, `reuse: true`), `uwf thread cost` and
budgets (`maxTokens`/`maxCost`, `thread start --max-tokens/--max-cost`).

Most tests run `count-up`: one role that counts to ten, a step at a time, answered by
tests/support/counting_agent.py, which records tokens like an LLM agent and counts its calls.
"""

from __future__ import annotations

import io
import json
import sqlite3
import sys
import tarfile
from pathlib import Path

import pytest

SUPPORT = Path(__file__).resolve().parents[1] / "support"
AGENT = SUPPORT / "counting_agent.py"

COUNT_UP = """\
name: count-up
description: Counts to ten
{budget}roles:
  counter:
    description: Counts
    goal: Count one further than the last step.
    procedure: Add one to the last number.
    output: The next number.
    meta:
      type: object
      properties:
        n: {{type: integer}}
      required: [n]
conditions:
  more:
    description: Not at ten yet
    expression: "steps[-1].output.n < 10"
graph:
  $START:
    - {{role: counter, condition: null}}
  counter:
    - {{role: counter, condition: more}}
    - {{role: $END, condition: null}}
"""


def ok(result):
    assert result.code == 0, result
    assert "Traceback" not in result.err, result.err
    return result


def one_error(result, *, progress: bool = False) -> str:
    """The one error line (after `thread run`'s progress lines, with `progress`)."""
    assert result.code == 1, result
    assert "Traceback" not in result.err, result.err
    lines = result.err.strip().splitlines()
    if progress:
        assert all(line.startswith("uwf: ") for line in lines), result.err
        lines = [line for line in lines if line.startswith("uwf: error: ")]
    assert len(lines) == 1 and lines[0].startswith("uwf: error: "), result.err
    return lines[0]


class CountUp:
    """A root with count-up registered and the counting agent as `counter` (the default agent)."""

    def __init__(self, uwf, root_dir: Path, tmp_path: Path, *, budget: str = "", reuse: bool = False, prices: str = "", tokens: int = 100) -> None:
        self.uwf = uwf
        self.root_dir = root_dir
        self.calls = tmp_path / "calls.txt"
        self.calls.write_text("")
        answers = tmp_path / "answers.json"
        answers.write_text(json.dumps({"counter": [{"n": n} for n in range(1, 11)]}))
        workflow = tmp_path / "count-up.yaml"
        workflow.write_text(COUNT_UP.format(budget=budget))
        args = [str(AGENT), "--answers", str(answers), "--calls", str(self.calls), "--tokens", str(tokens)]
        config = [
            "agents:",
            "  counter:",
            f"    command: {json.dumps(sys.executable)}",
            f"    args: {json.dumps(args)}",
            f"    writable: [{json.dumps(str(self.calls))}]",  # it counts its calls outside the workspace
            *(["    reuse: true"] if reuse else []),
            "defaultAgent: counter",
            *([prices] if prices else []),
        ]
        (root_dir / "config.yaml").write_text("\n".join(config) + "\n")
        ok(uwf("workflow", "put", str(workflow)))

    def start(self, *extra: str) -> str:
        return ok(self.uwf("thread", "start", "count-up", "-p", "count to ten", *extra)).json()["thread"]

    def run(self, thread: str, *extra: str):
        return self.uwf("thread", "run", thread, *extra)

    def steps(self, thread: str) -> list[dict]:
        return ok(self.uwf("thread", "steps", thread)).json()

    def call_count(self) -> int:
        return len(self.calls.read_text().splitlines())

    def fork(self, step: str, edit: dict | None = None, tmp: Path | None = None) -> str:
        if edit is None:
            return ok(self.uwf("thread", "fork", step)).json()["thread"]
        path = tmp / "edit.json"
        path.write_text(json.dumps(edit))
        return ok(self.uwf("thread", "fork", step, "--edit-output", str(path))).json()["thread"]


@pytest.fixture
def count_up(uwf, root_dir, tmp_path):
    return CountUp(uwf, root_dir, tmp_path)


def ten_steps(setup: CountUp) -> tuple[str, list[dict]]:
    thread = setup.start()
    final = ok(setup.run(thread)).json()
    assert final["done"] is True
    steps = setup.steps(thread)
    assert [step["output"]["n"] for step in steps] == list(range(1, 11))
    return thread, steps


def details(uwf, step: str) -> dict:
    return ok(uwf("thread", "step-details", step)).json()


# -- uwf diff --------------------------------------------------------------------------------------


def test_diff_of_two_forks_names_their_common_ancestor_and_the_changed_output(count_up, tmp_path):
    uwf = count_up.uwf
    original, steps = ten_steps(count_up)
    edited = count_up.fork(steps[3]["hash"], {"n": 6}, tmp_path)  # step 4 overruled: a copy after step 3
    ok(count_up.run(edited))
    data = ok(uwf("diff", original, edited, "--json")).json()
    assert data["a"]["thread"] == original and data["b"]["thread"] == edited
    assert data["ancestor"] == {"hash": steps[2]["hash"], "role": "counter", "step": 3}
    assert data["sharedSteps"] == 3
    first = data["pairs"][0]
    assert first["number"] == 4
    assert first["a"]["hash"] == steps[3]["hash"]
    assert first["a"]["agent"] != first["b"]["agent"] == "human"
    assert first["output"] == [{"path": "n", "kind": "changed", "a": 4, "b": 6}]
    assert first["sameRole"] is True
    assert first["a"]["routing"]["to"] == "counter" and "condition 'more'" in first["a"]["routing"]["reason"]
    assert first["a"]["tokens"] == 150 and first["b"]["tokens"] == 0
    # The fork counts on from 6 (its agent answers by how often the role ran): 5, 6, ... — every pair differs.
    assert [pair["number"] for pair in data["pairs"]] == [4, 5, 6, 7, 8, 9, 10]
    assert all(pair["a"] and pair["b"] for pair in data["pairs"])
    # A step's time is its attempt's, from runs.jsonl, as the TUI and thread cost show it.
    took = {run["step"]: run["durationMs"] for run in ok(uwf("thread", "runs", original)).json() if run["status"] == "ok"}
    assert [pair["a"]["durationMs"] for pair in data["pairs"]] == [took[step["hash"]] for step in steps[3:]]
    text = ok(uwf("diff", original, edited)).out
    assert f"Common ancestor: step 3 (counter) {steps[2]['hash']}; steps 1–3 are the same on both sides." in text
    assert "~ n: 4 → 6" in text
    assert "\x1b[" not in text  # no colour on a pipe
    coloured = ok(uwf("diff", original, edited, "--color", "always")).out
    assert "\x1b[" in coloured


def test_diff_of_a_plain_fork_shows_the_same_outputs_and_a_step_hash_works_as_an_argument(count_up):
    uwf = count_up.uwf
    original, steps = ten_steps(count_up)
    fork = count_up.fork(steps[6]["hash"])
    ok(count_up.run(fork))
    data = ok(uwf("diff", original, fork, "--json")).json()
    assert data["ancestor"]["hash"] == steps[6]["hash"] and data["sharedSteps"] == 7
    assert [pair["number"] for pair in data["pairs"]] == [8, 9, 10]
    assert all(pair["output"] == [] and pair["body"] == [] for pair in data["pairs"])
    assert data["pairs"][-1]["a"]["routing"] == {"to": "$END", "reason": data["pairs"][-1]["a"]["routing"]["reason"], "endReason": "done", "error": None}
    # A step of the same chain: the other side simply goes further.
    partial = ok(uwf("diff", steps[4]["hash"], original, "--json")).json()
    assert partial["a"]["thread"] is None and partial["ancestor"]["hash"] == steps[4]["hash"]
    assert [(pair["a"], pair["b"]["number"]) for pair in partial["pairs"]] == [(None, n) for n in range(6, 11)]


def test_diff_of_unrelated_threads_compares_from_the_first_step(count_up):
    uwf = count_up.uwf
    first = count_up.start()
    second = ok(uwf("thread", "start", "count-up", "-p", "count to ten, slowly")).json()["thread"]
    ok(uwf("thread", "step", first))
    ok(uwf("thread", "step", second))
    data = ok(uwf("diff", first, second, "--json")).json()
    assert data["ancestor"] is None and data["sharedSteps"] == 0
    assert "+count to ten, slowly" in data["prompt"]
    assert len(data["pairs"]) == 1 and data["pairs"][0]["output"] == []
    assert "No common ancestor" in ok(uwf("diff", first, second)).out


def test_diff_refuses_what_is_neither_a_thread_nor_a_node(count_up):
    thread = count_up.start()
    assert "'nothing-here' is neither a thread nor a node" in one_error(count_up.uwf("diff", thread, "nothing-here"))


# -- uwf thread dry-run ----------------------------------------------------------------------------


def _immutable(root_dir: Path, sql: str) -> list[tuple]:
    """Read the node file without touching it (no lock, no WAL, no shared memory)."""
    path = root_dir / "cas" / "nodes.sqlite"
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def whole_root(root_dir: Path) -> dict:
    """Every file and directory of the root, byte for byte (locks and the node file's own bytes
    included), and what the node file holds: nodes and derived data."""
    state: dict = {"dirs": sorted(str(p.relative_to(root_dir)) for p in root_dir.rglob("*") if p.is_dir())}
    for path in sorted(root_dir.rglob("*")):
        if path.is_file():
            state[str(path.relative_to(root_dir))] = path.read_bytes()
    state["nodes"] = sorted(_immutable(root_dir, "select hash, type, data, touched from nodes"))
    state["derived"] = sorted(_immutable(root_dir, "select key, value from derived"))
    return state


def test_dry_run_says_what_the_next_step_would_do_and_writes_nothing(count_up):
    uwf, root_dir = count_up.uwf, count_up.root_dir
    thread = count_up.start()
    ok(uwf("thread", "step", thread))
    ok(uwf("thread", "step", thread))
    # Drop the derived data (chain records, running totals, the reuse index): a dry run must
    # compute what it needs without keeping any of it.
    conn = sqlite3.connect(root_dir / "cas" / "nodes.sqlite")
    conn.execute("delete from derived")
    conn.commit()
    conn.close()
    before = whole_root(root_dir)
    assert before["derived"] == []
    preview = ok(uwf("thread", "dry-run", thread)).json()
    assert whole_root(root_dir) == before
    assert preview["outcome"] == "step" and preview["role"] == "counter" and preview["steps"] == 2
    assert preview["routing"]["matched"] == "more"
    assert preview["routing"]["reason"] == "condition 'more' (steps[-1].output.n < 10) is true"
    assert preview["agent"]["label"] == "counter" and preview["agent"]["origin"] == "defaultAgent"
    assert preview["agent"]["source"] == "agent 'counter' (defaultAgent in config.yaml)"
    assert "## History" in preview["prompt"] and '"n": 2' in preview["prompt"]
    for extra in (["--role", "counter"], ["--reuse"], ["--agent", "uwf-script"], ["--prompt-only"]):
        ok(uwf("thread", "dry-run", thread, *extra))
        assert whole_root(root_dir) == before, extra
    assert ok(uwf("thread", "dry-run", thread, "--prompt-only")).out == preview["prompt"]
    assert count_up.call_count() == 2  # no agent ran


def test_dry_run_prompt_is_exactly_what_a_text_agent_receives(uwf, root_dir, tmp_path):
    received = tmp_path / "received.txt"
    script = f"cat > {received}; printf -- '---\\nn: 10\\n---\\nten\\n'"
    workflow = tmp_path / "count-up.yaml"
    workflow.write_text(COUNT_UP.format(budget=""))
    ok(uwf("workflow", "put", str(workflow)))
    (root_dir / "config.yaml").write_text(
        "agents:\n  texter:\n    command: sh\n    args: [\"-c\", " + json.dumps(script) + "]\n    protocol: text\n"
        f"    writable: [{json.dumps(str(tmp_path))}]\nagentOverrides:\n  count-up: {{counter: texter}}\n"
    )
    thread = ok(uwf("thread", "start", "count-up", "-p", "count to ten")).json()["thread"]
    preview = ok(uwf("thread", "dry-run", thread)).json()
    assert preview["agent"]["origin"] == "agentOverrides"
    assert preview["agent"]["source"] == "agent 'texter' (agentOverrides.count-up.counter in config.yaml)"
    assert preview["agent"]["protocol"] == "text"
    ok(uwf("thread", "step", thread))
    assert received.read_text() == preview["prompt"]


def test_dry_run_names_each_rule_that_can_choose_the_agent(count_up):
    uwf = count_up.uwf
    bound = count_up.start("--agent", "counter=uwf-script")
    assert ok(uwf("thread", "dry-run", bound)).json()["agent"]["origin"] == "thread"
    plain = count_up.start()
    preview = ok(uwf("thread", "dry-run", plain, "--agent", "my-agent --flag")).json()
    over = preview["agent"]
    assert over["origin"] == "--agent" and over["argv"] == ["my-agent", "--flag"] and over["alias"] is False
    assert preview["agentError"] == "agent command 'my-agent' not found on PATH"  # what the step would fail on
    assert ok(uwf("thread", "dry-run", plain, "--agent", "uwf-script")).json()["agentError"] is None


def test_dry_run_of_a_finished_or_archived_thread(count_up):
    uwf = count_up.uwf
    thread, steps = ten_steps(count_up)
    assert "is archived (done)" in one_error(uwf("thread", "dry-run", thread))
    last = count_up.fork(steps[-1]["hash"])
    preview = ok(uwf("thread", "dry-run", last)).json()
    assert preview["outcome"] == "end" and preview["endReason"] == "done" and preview["prompt"] is None
    assert "the fallback transition from 'counter'" in preview["routing"]["reason"]
    assert "there is no prompt" in one_error(uwf("thread", "dry-run", last, "--prompt-only"))


def test_dry_run_with_a_role_the_graph_does_not_reach_says_so(count_up):
    thread = count_up.start()
    preview = ok(count_up.uwf("thread", "dry-run", thread, "--role", "counter")).json()
    assert preview["routing"]["forced"] is True
    assert "routes from '$START' to 'counter' on condition null" in preview["routing"]["reason"]
    assert "has no role 'nobody'" in one_error(count_up.uwf("thread", "dry-run", thread, "--role", "nobody"))


# -- memoized replay -------------------------------------------------------------------------------


def test_a_fork_run_with_reuse_runs_no_agent_for_steps_whose_inputs_are_unchanged(count_up):
    uwf = count_up.uwf
    original, steps = ten_steps(count_up)  # run without --reuse: its answers are indexed all the same
    assert count_up.call_count() == 10
    fork = count_up.fork(steps[6]["hash"])
    preview = ok(uwf("thread", "dry-run", fork, "--reuse")).json()
    assert preview["outcome"] == "reuse" and preview["reuseFrom"] == steps[7]["hash"]
    final = ok(count_up.run(fork, "--reuse"))
    assert count_up.call_count() == 10  # not one more call
    assert final.json()["done"] is True
    assert final.err.count("[reused ") == 3
    mine = count_up.steps(fork)
    assert [step["output"] for step in mine] == [step["output"] for step in steps]
    for own, theirs in zip(mine[7:], steps[7:]):
        detail = details(uwf, own["hash"])
        assert detail["detail"]["payload"]["protocol"] == "reuse"
        assert detail["detail"]["payload"]["reusedFrom"] == theirs["hash"]
        assert detail["detail"]["payload"]["usage"]["totalTokens"] == 0
        assert detail["prompt"] == details(uwf, theirs["hash"])["prompt"]
        assert own["agent"] == theirs["agent"]
    cost = ok(uwf("thread", "cost", fork, "--json")).json()
    assert cost["own"]["reusedSteps"] == 3 and cost["own"]["tokens"] == 0


def test_reuse_after_an_edited_step_runs_exactly_the_agents_whose_prompts_changed(count_up, tmp_path):
    uwf = count_up.uwf
    original, steps = ten_steps(count_up)
    edited = count_up.fork(steps[6]["hash"], {"n": 7}, tmp_path)  # the same number, but a person's step
    ok(count_up.run(edited, "--reuse"))
    mine = count_up.steps(edited)
    changed = [
        own["hash"] for own, theirs in zip(mine[7:], steps[7:])
        if details(uwf, own["hash"])["prompt"] != details(uwf, theirs["hash"])["prompt"]
    ]
    reused = [own["hash"] for own in mine[7:] if details(uwf, own["hash"])["detail"]["payload"].get("protocol") == "reuse"]
    assert len(changed) == 3 and reused == []  # every later prompt shows step 7 (now by agent human)
    assert count_up.call_count() == 10 + len(changed)


def test_without_reuse_every_agent_runs_and_an_entry_with_reuse_true_opts_in_alone(uwf, root_dir, tmp_path):
    plain = CountUp(uwf, root_dir, tmp_path)
    original, steps = ten_steps(plain)
    fork = plain.fork(steps[6]["hash"])
    ok(plain.run(fork))
    assert plain.call_count() == 13
    opted = CountUp(uwf, root_dir, tmp_path, reuse=True)  # the same agent entry, now with reuse: true
    again = opted.fork(steps[6]["hash"])
    assert ok(uwf("thread", "dry-run", again)).json()["agent"]["reuse"] is True
    ok(opted.run(again))
    assert opted.call_count() == 0  # its own call file, fresh: nothing ran


def test_reuse_never_hits_for_another_agent_entry(count_up, tmp_path):
    original, steps = ten_steps(count_up)
    fork = count_up.fork(steps[8]["hash"])
    args = [str(AGENT), "--answers", str(tmp_path / "answers.json"), "--calls", str(count_up.calls)]
    config = count_up.root_dir / "config.yaml"  # the same program, another entry
    entry = (f"  other:\n    command: {json.dumps(sys.executable)}\n    args: {json.dumps(args)}\n"
             f"    writable: [{json.dumps(str(count_up.calls))}]\n")
    config.write_text(config.read_text().replace("defaultAgent:", entry + "defaultAgent:"))
    ok(count_up.run(fork, "--reuse", "--agent", "other"))
    assert count_up.call_count() == 11


# -- cost and budgets ------------------------------------------------------------------------------

PRICES = "prices:\n  test-model: {input: 1000, output: 2000}"  # per million tokens: 100 + 50 tokens cost 0.2


def test_cost_per_step_thread_agent_and_model_and_the_fork_subtree(uwf, root_dir, tmp_path):
    setup = CountUp(uwf, root_dir, tmp_path, prices=PRICES)
    original, steps = ten_steps(setup)
    cost = ok(uwf("thread", "cost", original, "--json")).json()
    took = {run["step"]: run["durationMs"] for run in ok(uwf("thread", "runs", original)).json() if run["status"] == "ok"}
    assert [step["durationMs"] for step in cost["steps"]] == [took[step["hash"]] for step in steps]
    assert cost["total"]["tokens"] == 1500 and cost["total"]["promptTokens"] == 1000
    assert cost["total"]["cost"] == pytest.approx(2.0)
    assert cost["byModel"]["test-model"]["tokens"] == 1500
    assert cost["byAgent"]["counter"]["steps"] == 10
    assert cost["steps"][0]["cost"] == pytest.approx(0.2) and cost["steps"][0]["models"][0]["model"] == "test-model"
    assert cost["parent"] is None and cost["inheritedSteps"] == 0 and cost["budget"] is None
    fork = setup.fork(steps[4]["hash"])
    ok(setup.run(fork))  # 5 more steps of its own
    mine = ok(uwf("thread", "cost", fork, "--json")).json()
    assert mine["parent"] == original and mine["inheritedSteps"] == 5
    assert mine["own"]["tokens"] == 750 and mine["total"]["tokens"] == 1500
    tree = ok(uwf("thread", "cost", original, "--tree", "--json")).json()
    assert [item["thread"] for item in tree["threads"]] == [original, fork]
    assert tree["threads"][1]["forkAt"] == steps[4]["hash"] and tree["threads"][1]["ownSteps"] == 5
    assert tree["total"]["tokens"] == 2250 and tree["total"]["cost"] == pytest.approx(3.0)
    subtree = ok(uwf("thread", "cost", fork, "--tree", "--json")).json()
    assert subtree["total"]["tokens"] == 750 and subtree["inherited"]["tokens"] == 750
    text = ok(uwf("thread", "cost", fork)).out
    assert f"forked from {original}: its first 5 steps are shared history" in text
    assert "Total: 1,500 tokens (1,000 prompt, 500 completion), cost 2.0000" in text


def test_threads_started_alike_share_their_start_node_but_are_not_forks(count_up):
    """Same workflow and prompt: the same StartNode (nodes are content-addressed), yet neither was
    forked from the other, so neither is the other's parent or in its fork subtree."""
    first, second = count_up.start(), count_up.start()
    for thread in (first, second):
        ok(count_up.uwf("thread", "step", thread))
    cost = ok(count_up.uwf("thread", "cost", second, "--json")).json()
    assert cost["parent"] is None and cost["inheritedSteps"] == 0
    assert "forked from" not in ok(count_up.uwf("thread", "cost", second)).out
    tree = ok(count_up.uwf("thread", "cost", first, "--tree", "--json")).json()
    assert [item["thread"] for item in tree["threads"]] == [first]


def test_a_model_without_a_price_is_counted_in_tokens_only(count_up):
    thread = count_up.start()
    ok(count_up.uwf("thread", "step", thread))
    cost = ok(count_up.uwf("thread", "cost", thread, "--json")).json()
    assert cost["total"]["tokens"] == 150 and cost["total"]["cost"] is None
    assert cost["total"]["unpricedModels"] == ["test-model"] and cost["total"]["pricedCost"] == 0
    assert "have no price in config.yaml" in ok(count_up.uwf("thread", "cost", thread)).out


def test_a_workflow_token_budget_stops_the_thread_before_the_step_that_would_exceed_it(uwf, root_dir, tmp_path):
    setup = CountUp(uwf, root_dir, tmp_path, budget="maxTokens: 400\n")
    thread = setup.start()
    error = one_error(setup.run(thread), progress=True)
    assert "stopped before its next step: its steps used 450 tokens of its maxTokens 400" in error
    assert "archived with reason budget" in error
    assert setup.call_count() == 3  # 150, 300, then 450: the third step overshot by its own cost
    shown = ok(uwf("thread", "show", thread)).json()
    assert shown["done"] is True and shown["reason"] == "budget" and shown["steps"] == 3
    runs = ok(uwf("thread", "runs", thread)).json()
    assert runs[-1]["status"] == "budget" and "budget" in runs[-1]["error"]  # refused: no agent ran
    cost = ok(uwf("thread", "cost", thread, "--json")).json()
    assert cost["failedAttempts"] == 0  # a budget stop is no agent's failure
    assert "By role:" in ok(uwf("thread", "cost", thread)).out


def test_thread_start_budgets_override_the_workflow_and_cost_needs_prices(uwf, root_dir, tmp_path):
    setup = CountUp(uwf, root_dir, tmp_path, budget="maxTokens: 100000\n", prices=PRICES)
    thread = setup.start("--max-tokens", "200")
    assert "its steps used 300 tokens of its maxTokens 200" in one_error(setup.run(thread), progress=True)
    by_cost = setup.start("--max-cost", "0.5")
    assert "its steps cost 0.6000 of its maxCost 0.5" in one_error(setup.run(by_cost), progress=True)
    cost = ok(uwf("thread", "cost", by_cost, "--json")).json()
    assert cost["budget"]["maxCost"] == 0.5 and cost["budget"]["maxTokens"] == 100000 and cost["budget"]["source"] == "thread+workflow"
    assert "used up" in ok(uwf("thread", "cost", by_cost)).out


def test_a_cost_budget_with_unpriced_tokens_refuses_the_step_without_archiving(count_up):
    uwf = count_up.uwf
    thread = count_up.start("--max-cost", "1")
    error = one_error(count_up.run(thread), progress=True)
    assert "cannot take a step within its budget" in error and "test-model" in error
    assert ok(uwf("thread", "show", thread)).json()["done"] is False
    assert count_up.call_count() == 1
    preview = ok(uwf("thread", "dry-run", thread)).json()
    assert preview["note"].startswith("the step would fail: it has maxCost 1")


def test_a_stopped_thread_shows_as_stopping_in_dry_run_and_resume_starts_a_fresh_budget(uwf, root_dir, tmp_path):
    setup = CountUp(uwf, root_dir, tmp_path)
    thread = setup.start("--max-tokens", "150")
    one_error(setup.run(thread), progress=True)
    steps = setup.steps(thread)
    fork = setup.fork(steps[-1]["hash"])
    preview = ok(uwf("thread", "dry-run", fork)).json()
    assert preview["outcome"] == "stop" and preview["endReason"] == "budget"
    assert preview["budget"]["used"]["tokens"] == 150
    ok(uwf("thread", "resume", thread, "-p", "go on"))
    ok(uwf("thread", "step", thread))  # the budget counts from the new StartNode, like maxSteps


def test_budget_fields_are_linted_and_a_budget_free_workflow_keeps_its_hash(uwf, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(COUNT_UP.format(budget="maxTokens: -3\nmaxCost: lots\n"))
    lint = uwf("workflow", "lint", str(bad))
    assert lint.code == 1 and "maxTokens: must be a positive integer" in lint.out + lint.err
    assert "maxCost: must be a positive number" in lint.out + lint.err
    plain = tmp_path / "plain.yaml"
    plain.write_text(COUNT_UP.format(budget=""))
    budgeted = tmp_path / "budgeted.yaml"
    budgeted.write_text(COUNT_UP.format(budget="maxTokens: 1000\nmaxCost: 2.5\n"))
    first = ok(uwf("workflow", "put", str(plain))).json()["hash"]
    second = ok(uwf("workflow", "put", str(budgeted))).json()["hash"]
    assert first != second
    shown = ok(uwf("workflow", "show", second)).json()
    assert shown["maxTokens"] == 1000 and shown["maxCost"] == 2.5
    assert "maxTokens" not in ok(uwf("workflow", "show", first)).json()


# -- bundles ---------------------------------------------------------------------------------------


def snapshot(root_dir: Path) -> dict:
    from conftest import snapshot_tree

    return snapshot_tree(root_dir)


def test_bundle_round_trip_is_deterministic_verified_and_idempotent(count_up, tmp_path):
    uwf = count_up.uwf
    original, steps = ten_steps(count_up)
    fork = count_up.fork(steps[4]["hash"])
    ok(uwf("thread", "step", fork))
    bundle = tmp_path / "run.tar.gz"
    exported = ok(uwf("bundle", "export", original, fork, "-o", str(bundle))).json()
    assert exported["nodes"] > 20 and {item["state"] for item in exported["threads"]} == {"active", "archived"}
    again = tmp_path / "again.tar.gz"
    ok(uwf("bundle", "export", fork, original, "-o", str(again)))
    assert bundle.read_bytes() == again.read_bytes()
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile("uwf-bundle/manifest.json").read())
    assert names[0] == "uwf-bundle/manifest.json" and all(name.startswith("uwf-bundle/nodes/") for name in names[1:])
    assert manifest["format"] == "uwf-bundle" and manifest["version"] == 1 and manifest["createdBy"].startswith("uwf ")
    assert manifest["workflows"][0]["name"] == "count-up" and sorted(manifest["nodes"]) == manifest["nodes"]

    other = tmp_path / "other-root"
    other.mkdir()
    env = {"UWF_STORAGE_ROOT": str(other)}
    report = ok(uwf("bundle", "import", str(bundle), env=env)).json()
    assert report["written"] == report["nodes"] == exported["nodes"]
    assert {item["thread"]: (item["state"], item["status"]) for item in report["threads"]} == {
        original: ("archived", "added"), fork: ("active", "added"),
    }
    assert report["workflows"] == {"count-up": "registered"}
    nodes_only = lambda steps: [{key: step[key] for key in ("hash", "role", "agent", "output", "detail")} for step in steps]  # noqa: E731
    assert nodes_only(ok(uwf("thread", "steps", fork, env=env)).json()) == nodes_only(count_up.steps(fork))  # the runs log stays home
    assert ok(uwf("thread", "show", original, env=env)).json()["reason"] == "done"
    assert ok(uwf("cas", "fsck", env=env)).json()["ok"] is True
    assert "name: count-up" in ok(uwf("workflow", "show", "count-up", "--source", env=env)).out  # its source came along
    before = snapshot(other)
    second = ok(uwf("bundle", "import", str(bundle), env=env)).json()
    assert second["written"] == 0 and {item["status"] for item in second["threads"]} == {"present"}
    assert snapshot(other) == before


def _tampered(bundle: Path, target: Path) -> str:
    """A copy of the bundle with one answer's text changed (same length, still valid CBOR)."""
    with tarfile.open(bundle) as tar:
        entries = [(member, tar.extractfile(member).read()) for member in tar.getmembers()]
    victim = next(member.name for member, data in entries if b"Answer #3 of counter" in data)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for member, data in entries:
            if member.name == victim:
                data = data.replace(b"Answer #3", b"Answer #9")
            tar.addfile(member, io.BytesIO(data))
    target.write_bytes(out.getvalue())
    return victim.rsplit("/", 1)[1]


def test_a_tampered_bundle_is_refused_naming_the_node_and_nothing_is_written(count_up, tmp_path):
    uwf = count_up.uwf
    original, _ = ten_steps(count_up)
    bundle = tmp_path / "run.tar.gz"
    ok(uwf("bundle", "export", original, "-o", str(bundle)))
    bad = tmp_path / "bad.tar.gz"
    node = _tampered(bundle, bad)
    other = tmp_path / "other-root"
    other.mkdir()
    env = {"UWF_STORAGE_ROOT": str(other)}
    ok(uwf("workflow", "put", "examples/solve-issue.yaml", env=env))  # a root with something in it
    before = snapshot(other)
    error = one_error(uwf("bundle", "import", str(bad), env=env))
    assert f"node {node} is corrupt: its content hashes to" in error and "nothing was imported" in error
    assert snapshot(other) == before
    assert ok(uwf("thread", "list", "--all", env=env)).json() == []


def test_import_never_clobbers_a_thread_the_root_has(count_up, tmp_path):
    uwf = count_up.uwf
    original, steps = ten_steps(count_up)
    bundle = tmp_path / "run.tar.gz"
    ok(uwf("bundle", "export", original, "-o", str(bundle)))
    with tarfile.open(bundle) as tar:
        manifest = json.loads(tar.extractfile("uwf-bundle/manifest.json").read())
    manifest["threads"][0]["head"] = steps[2]["hash"]  # the same thread id, another head
    with tarfile.open(bundle) as tar:
        entries = [(member, tar.extractfile(member).read()) for member in tar.getmembers()]
    edited = tmp_path / "edited.tar.gz"
    with tarfile.open(edited, mode="w:gz") as tar:
        for member, data in entries:
            if member.name.endswith("manifest.json"):
                data = json.dumps(manifest).encode()
                member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    result = ok(uwf("bundle", "import", str(edited)))
    item = result.json()["threads"][0]
    assert item["status"] == "conflict" and item["existingHead"] == steps[-1]["hash"]
    assert "was kept" in result.err
    assert ok(uwf("thread", "show", original)).json()["head"] == steps[-1]["hash"]


def test_bundle_refusals_are_one_clear_line(count_up, tmp_path):
    uwf = count_up.uwf
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not a tarball")
    assert "is not a uwf bundle" in one_error(uwf("bundle", "import", str(junk)))
    assert "no such file" in one_error(uwf("bundle", "import", str(tmp_path / "missing.tar.gz")))
    assert "no thread" in one_error(uwf("bundle", "export", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "-o", str(tmp_path / "x.tar.gz")))
