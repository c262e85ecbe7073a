"""thread/spend.py, budget.py, ledger.py: pricing (never a made-up number), roll-ups, the running total behind budgets."""

from __future__ import annotations

import json

import pytest
from conftest import EXAMPLES

from uwf_core.config.model import parse_config
from uwf_core.config.values import ConfigError
from uwf_core.llm.usage import Usage
from uwf_core.thread.budget import BudgetStatus
from uwf_core.thread.spend import UNKNOWN_MODEL, Spend, detail_parts, priced, spend_of

CONFIG = parse_config(
    "models:\n  fast: {provider: p, name: vendor/fast-1}\nproviders:\n  p: {baseUrl: 'http://x'}\n"
    "prices:\n  vendor/fast-1: {input: 1, output: 4}\n  slow: {input: 10, output: 20}\n",
    "config.yaml",
)


def usage(prompt: int, completion: int) -> Usage:
    return Usage(prompt, completion, prompt + completion, 1)


def test_prices_are_per_million_tokens_by_alias_or_by_the_providers_name():
    assert priced(CONFIG, ("slow",), usage(1_000_000, 500_000)).cost == pytest.approx(20.0)
    assert priced(CONFIG, ("fast",), usage(1_000_000, 1_000_000)).cost == pytest.approx(5.0)  # alias -> vendor/fast-1
    assert priced(CONFIG, ("other", "vendor/fast-1"), usage(2_000_000, 0)).cost == pytest.approx(2.0)


def test_an_unknown_price_is_none_never_zero_unless_nothing_was_spent():
    assert priced(CONFIG, ("mystery",), usage(10, 5)).cost is None
    assert priced(CONFIG, (), usage(10, 5)).model == UNKNOWN_MODEL
    assert priced(CONFIG, ("mystery",), Usage()).cost == 0.0


def test_spend_keeps_the_priced_part_and_says_what_is_unpriced():
    parts = (priced(CONFIG, ("slow",), usage(100_000, 0)), priced(CONFIG, ("mystery",), usage(7, 3)))
    spend = spend_of(parts)
    assert spend.cost is None and spend.priced_cost == pytest.approx(1.0)
    assert spend.unpriced_tokens == 10 and spend.unpriced_models == ("mystery",)
    total = spend + spend_of((priced(CONFIG, ("slow",), usage(100_000, 0)),))
    assert total.steps == 2 and total.priced_cost == pytest.approx(2.0) and total.tokens == 200_010
    assert Spend().cost == 0.0


def test_detail_parts_read_the_agent_and_the_extractor_and_nothing_of_a_reused_step():
    detail = {
        "model": "fast", "modelName": "vendor/fast-1", "usage": usage(10, 2).to_json(),
        "extractModel": "slow", "extractUsage": usage(5, 1).to_json(),
    }
    assert detail_parts(detail) == ((("fast", "vendor/fast-1"), usage(10, 2)), (("slow",), usage(5, 1)))
    assert detail_parts({"protocol": "reuse", "usage": usage(10, 2).to_json()}) == ()
    assert detail_parts("a content node") == ()
    assert detail_parts({"usage": {"totalTokens": 12}}) == (((), Usage(0, 0, 12, 0)),)


def test_a_budget_is_used_up_at_its_limit_not_before():
    spend = spend_of((priced(CONFIG, ("slow",), usage(30, 10)),))
    assert BudgetStatus(41, None, "workflow", spend).exceeded is None
    assert "used 40 tokens of its maxTokens 40" in BudgetStatus(40, None, "workflow", spend).exceeded
    cheap = spend_of((priced(CONFIG, ("slow",), usage(100_000, 0)),))
    assert BudgetStatus(None, 1, "thread", cheap).exceeded.startswith("its steps cost 1.0000 of its maxCost 1")
    unknown = spend_of((priced(CONFIG, ("mystery",), usage(1, 1)),))
    status = BudgetStatus(None, 5, "thread", unknown)
    assert status.exceeded is None and "mystery" in status.unpriced
    assert BudgetStatus(100, None, "thread", unknown).unpriced is None  # tokens need no price


@pytest.mark.parametrize(
    "text, message",
    [
        ("prices:\n  m: {input: 1}\n", "must be a mapping {input: N, output: N}"),
        ("prices:\n  m: {input: x, output: 1}\n", "prices.m.input must be a number"),
        ("prices:\n  m: {input: -1, output: 1}\n", "prices.m.input must be zero or more"),
        ("agents:\n  a: {command: x, reuse: maybe}\n", "agents.a.reuse must be true or false"),
    ],
)
def test_config_refuses_bad_prices_and_reuse_flags(text, message):
    with pytest.raises(ConfigError, match=message.replace("{", r"\{").replace("}", r"\}")):
        parse_config(text, "config.yaml")


def test_prices_and_reuse_survive_a_rewrite_of_config_yaml():
    from uwf_core.config.model import dump_config

    config = parse_config("agents:\n  a: {command: x, reuse: true}\nprices:\n  m: {input: 2.5, output: 10}\n", "c")
    again = parse_config(dump_config(config), "c")
    assert again == config and again.agents["a"].reuse is True and again.prices["m"].input == 2.5


def test_the_running_total_is_kept_as_derived_data_only_when_asked(root, tmp_path):
    """Budgets read one step per check: the total behind a head is derived data, rebuilt if dropped."""
    from uwf_core.store.builtin_schemas import BUILTIN_HASHES
    from uwf_core.thread.budget import KEY, spend_since_start
    from uwf_core.thread.model import StartNode
    from uwf_core.thread.nodes import put_start
    from uwf_core.thread.write import write_step

    store = root.nodes
    store.ensure_builtins()
    meta = store.put_schema({"type": "object", "properties": {"n": {"type": "integer"}}})
    start = put_start(store, StartNode(BUILTIN_HASHES["workflow"], "p"))
    head, prev = start, None
    for n in range(3):
        detail = {"model": "slow", "usage": usage(100, 10 * n).to_json()}
        head = prev = write_step(store, start=start, prev=prev, role="r", meta=meta, output={"n": n}, agent="a", detail=detail)
    assert store.nodes.derived(KEY + head) is None
    spend = spend_since_start(root, head)
    assert spend.steps == 3 and spend.tokens == 330 and store.nodes.derived(KEY + head) is None
    again = spend_since_start(root, head, keep=True)
    assert again == spend and json.loads(store.nodes.derived(KEY + head))["steps"] == 3


def test_a_step_that_recorded_no_usage_makes_the_cost_unknown_but_a_person_or_a_reuse_spent_nothing():
    from uwf_core.thread.spend import usage_recorded

    assert usage_recorded({"usage": Usage().to_json()})
    assert usage_recorded({"protocol": "human"}) and usage_recorded({"protocol": "edit"}) and usage_recorded({"protocol": "reuse"})
    assert not usage_recorded({"protocol": "text", "extractUsage": usage(1, 1).to_json()})  # the agent's own is unknown
    assert not usage_recorded({"script": "x.yaml", "answer": 0}) and not usage_recorded("content")
    unknown = spend_of((), unrecorded=1)
    assert unknown.cost is None and unknown.tokens == 0 and unknown.to_json()["unrecordedSteps"] == 1
    assert (unknown + spend_of(())).unrecorded == 1
    status = BudgetStatus(10, None, "thread", unknown)
    assert status.exceeded is None and "recorded no token usage" in status.unrecorded


def test_a_ledger_read_ends_when_its_stop_says_so(root):
    """A 100,000-step ledger is seconds of reading that a step of the same thread makes stale:
    `stop` ends it (the workbench stops it when the thread steps); unasked, it reads to the end."""
    from uwf_core.api import StepOptions, perform_step, put_workflow, start_thread, thread_cost
    from uwf_core.thread.lineage import Stopped

    put_workflow(root, str(EXAMPLES / "solve-issue.yaml"))
    thread = start_thread(root, "solve-issue", "x").thread
    perform_step(root, thread, StepOptions(agent=f"uwf-script --script {EXAMPLES / 'solve-issue.script.yaml'}"))
    asked = []
    with pytest.raises(Stopped):
        thread_cost(root, thread, stop=lambda: asked.append(1) or True)
    assert asked
    assert thread_cost(root, thread, stop=lambda: False).total.steps == 1
