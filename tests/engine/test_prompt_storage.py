"""A text agent's prompt is stored exactly as sent, with what repeats between steps stored once:
the text before the history and each history block are nodes every later prompt shares."""

from __future__ import annotations

import json

from conftest import EXAMPLES

from uwf_core.store.builtin_schemas import BUILTIN_HASHES, PROMPT_HASH


def _recording_agent(root_dir, tmp_path) -> None:
    """A text agent that keeps each prompt it gets (prompt-1.txt, prompt-2.txt...) and answers
    solve-issue's roles in order, the reviewer never approving."""
    answers = [
        {"plan": "p", "steps": ["s"]},
        {"filesChanged": ["a.py"], "summary": "one"},
        {"approved": False, "comments": "no"},
        {"filesChanged": ["a.py"], "summary": "two"},
    ]
    script = tmp_path / "agent.sh"
    lines = ['n=$(($(ls "$DIR" | grep -c prompt) + 1))', 'cat > "$DIR/prompt-$n.txt"']
    lines += [f"[ $n = {i} ] && echo '{json.dumps(answer)}'" for i, answer in enumerate(answers, 1)]
    script.write_text("\n".join(lines) + "\ntrue\n")
    (root_dir / "config.yaml").write_text(
        f"agents:\n  rec:\n    command: sh\n    args: [{json.dumps(str(script))}]\n    protocol: text\n    env: {{DIR: {json.dumps(str(tmp_path / 'seen'))}}}\ndefaultAgent: rec\n"
    )
    (tmp_path / "seen").mkdir()


def test_the_stored_prompt_is_what_the_agent_got_and_history_is_stored_once(uwf, root_dir, tmp_path):
    _recording_agent(root_dir, tmp_path)
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "Fix the login bug").json()["thread"]
    for _ in range(4):
        assert uwf("thread", "step", thread).code == 0
    steps = uwf("thread", "steps", thread).json()
    prompts = []
    for number, step in enumerate(steps, 1):
        details = uwf("thread", "step-details", step["hash"]).json()
        sent = (tmp_path / "seen" / f"prompt-{number}.txt").read_text()
        assert details["prompt"] == sent  # byte for byte
        detail = uwf("cas", "get", step["detail"], "--payload").json()
        node = uwf("cas", "get", detail["prompt"]).json()
        assert node["type"] == PROMPT_HASH
        prompts.append(node["payload"])
    assert prompts[0]["blocks"] == [] and "no steps yet" in prompts[0]["lead"]
    # each earlier step's block is one node, named again by every later prompt
    assert prompts[3]["blocks"][:2] == prompts[2]["blocks"] == [*prompts[1]["blocks"], prompts[2]["blocks"][1]]
    # the developer's second task carries the reviewer's edge prompt: another `before`, its blocks shared
    assert prompts[1]["before"] != prompts[3]["before"]
    block = uwf("cas", "get", prompts[3]["blocks"][0], "--payload").json()
    assert block.startswith("### Step 1: planner")
    assert uwf("cas", "get", prompts[3]["before"]).json()["type"] == BUILTIN_HASHES["content"]
    assert uwf("cas", "fsck").code == 0


def test_history_shows_at_most_the_newest_forty_steps():
    from uwf_core.engine.prompt import HISTORY_STEPS, history_blocks
    from uwf_core.thread.model import StartNode, StepContext, ThreadContext

    steps = [StepContext(f"{i:013d}", "r", "o", "d", "a", "s", load_output=lambda _: {"n": 1}) for i in range(100)]
    context = ThreadContext(steps[-1].hash, "s" * 13, StartNode("w" * 13, "p"), steps, 100)
    lead, blocks = history_blocks(context)
    assert len(blocks) == HISTORY_STEPS == 40
    assert blocks[0].startswith("### Step 61: r") and blocks[-1].startswith("### Step 100: r")
    assert lead.startswith("(60 earlier steps omitted")
