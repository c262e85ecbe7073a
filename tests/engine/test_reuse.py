"""engine/reuse/replay.py: the key of a step's inputs, the prompt hash computed without writing, and an
index that never hands back a step that is not there whole."""

from __future__ import annotations

from uwf_core.config.env import Secrets
from uwf_core.engine.record import store_prompt
from uwf_core.engine.resolve import ResolvedAgent
from uwf_core.engine.reuse.replay import prompt_node_hash
from uwf_core.engine.reuse.index import (
    KEY,
    agent_fingerprint,
    find_reusable,
    inputs_key,
    remember,
)
from uwf_core.workflow.model import Role

ROLE = Role("writer", "Writes", "Write.", (), "Write it.", "Text.", "0" * 13)


def test_the_prompt_hash_is_the_one_store_prompt_writes(root):
    from conftest import EXAMPLES

    from uwf_core.engine.prompt import build_prompt_parts
    from uwf_core.thread.context import context_of
    from uwf_core.thread.ops import start_thread
    from uwf_core.thread.write import write_step
    from uwf_core.workflow.ops import load_workflow, put_workflow

    put_workflow(root, str(EXAMPLES / "solve-issue.yaml"))
    workflow = load_workflow(root, "solve-issue")
    info = start_thread(root, "solve-issue", "fix it, sk-secret-value")
    store = root.nodes
    planner = workflow.roles["planner"]
    head = write_step(store, start=info.head, prev=None, role="planner", meta=planner.meta, output={"plan": "p", "steps": ["s"]}, agent="x", detail={})
    context = context_of(root, head)
    developer = workflow.roles["developer"]
    parts = build_prompt_parts(workflow, developer, store.schema(developer.meta), context, None)
    secrets = Secrets({"OPENAI_API_KEY": "sk-secret-value"})
    computed = prompt_node_hash(store, parts, secrets, context)
    assert not store.has(computed)
    assert store_prompt(store, parts, secrets, context) == computed
    assert "sk-secret-value" not in str(store.payload(store.payload(computed)["before"]))
    assert store.payload(computed)["entries"] == 1


def test_the_key_names_role_agent_and_prompt_and_nothing_else():
    agent = agent_fingerprint(ResolvedAgent("a", ("cmd", "--x")))
    key = inputs_key(ROLE, agent, "P" * 13)
    assert key == inputs_key(Role("writer", "Writes", "Write.", (), "Write it.", "Text.", "0" * 13), agent, "P" * 13)
    assert key != inputs_key(ROLE, agent, "Q" * 13)
    assert key != inputs_key(ROLE, agent_fingerprint(ResolvedAgent("a", ("cmd", "--y"))), "P" * 13)
    assert key != inputs_key(Role("writer", "Writes", "Write better.", (), "Write it.", "Text.", "0" * 13), agent, "P" * 13)
    # The timeout, the secrets an entry names and where the choice came from are not inputs.
    assert agent == agent_fingerprint(ResolvedAgent("a", ("cmd", "--x"), timeout=5, secrets=("K",), origin="defaultAgent"))
    assert agent != agent_fingerprint(ResolvedAgent("a", ("cmd", "--x"), env={"MODEL": "other"}))


def test_an_index_entry_for_a_missing_or_wrong_step_is_ignored(store):
    store.ensure_builtins()
    remember(store, "K" * 13, "0123456789ABC")  # no such node
    assert find_reusable(store, "K" * 13, "writer") is None
    store.nodes.put_derived(KEY + "G" * 13, b"\xff\xfe not a hash")
    assert find_reusable(store, "G" * 13, "writer") is None
    content = store.put(store.ensure_builtins()["content"], "not a step")
    remember(store, "H" * 13, content)
    assert find_reusable(store, "H" * 13, "writer") is None
    assert find_reusable(store, "N" * 13, "writer") is None
