"""A text agent's prompt is stored exactly as sent, with what repeats between steps stored once:
the text before the history and each history block are nodes every later prompt shares."""

from __future__ import annotations

import json

from conftest import EXAMPLES

from uwf_core.store.builtin_schemas import BUILTIN_HASHES, PROMPT_HASH


def _recording_agent(root_dir, tmp_path) -> None:
    """A text agent that keeps each prompt it gets (prompt-1.txt, prompt-2.txt...) and answers
    solve-issue's roles, the reviewer never approving."""
    answers = {
        "planner": {"plan": "p", "steps": ["s"]},
        "developer": {"filesChanged": ["a.py"], "summary": "one"},
        "reviewer": {"approved": False, "comments": "no"},
    }
    script = tmp_path / "agent.sh"
    lines = ['n=$(($(ls "$DIR" | grep -c prompt) + 1))', 'cat > "$DIR/prompt-$(printf %03d $n).txt"']
    lines += [f"[ \"$UWF_ROLE\" = {role} ] && echo '{json.dumps(answer)}'" for role, answer in answers.items()]
    script.write_text("\n".join(lines) + "\ntrue\n")
    (root_dir / "config.yaml").write_text(
        f"agents:\n  rec:\n    command: sh\n    args: [{json.dumps(str(script))}]\n    protocol: text\n    env: {{DIR: {json.dumps(str(tmp_path / 'seen'))}}}\n"
        f"    writable: [{json.dumps(str(tmp_path / 'seen'))}]\ndefaultAgent: rec\n"
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
        sent = (tmp_path / "seen" / f"prompt-{number:03d}.txt").read_text()
        assert details["prompt"] == sent  # byte for byte
        detail = uwf("cas", "get", step["detail"], "--payload").json()
        node = uwf("cas", "get", detail["prompt"]).json()
        assert node["type"] == PROMPT_HASH
        prompts.append(node["payload"])
    assert prompts[0]["history"] is None and prompts[0]["entries"] == 0 and "no steps yet" in prompts[0]["lead"]
    # the history is one reference to the newest entry shown: each step's entry is shared by
    # every later prompt, and points at the one before it
    assert [p["entries"] for p in prompts] == [0, 1, 2, 3]
    entry = uwf("cas", "get", prompts[3]["history"], "--payload").json()
    assert entry["prev"] == prompts[2]["history"] and uwf("cas", "get", entry["prev"], "--payload").json()["prev"] == prompts[1]["history"]
    assert uwf("cas", "get", entry["block"], "--payload").json().startswith("### Step 3: reviewer")
    # the developer's second task carries the reviewer's edge prompt: another `before`, its history shared
    assert prompts[1]["before"] != prompts[3]["before"]
    assert uwf("cas", "get", prompts[3]["before"]).json()["type"] == BUILTIN_HASHES["content"]
    assert len(uwf("cas", "get", steps[3]["detail"]).out) < 2000  # a prompt node, not the prompt
    assert uwf("cas", "fsck").code == 0


def test_prompts_read_back_exactly_across_forks_resumes_and_kit_agents(uwf, root_dir, tmp_path):
    """Long chains, a fork, a resume, a step-protocol agent on the kit: every stored prompt reads
    back as the prompt that agent got, byte for byte."""
    from uwf_core.api import Repo, fork_thread, resume_thread, step_details

    _recording_agent(root_dir, tmp_path)
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    thread = uwf("thread", "start", "solve-issue", "-p", "Fix it").json()["thread"]
    assert uwf("thread", "run", thread, "--max", "3").code == 0
    kit = f"uwf-script --script {EXAMPLES / 'solve-issue.script.yaml'}"
    assert uwf("thread", "step", thread, "--agent", kit).code == 0  # the kit stores its own prompt
    repo = Repo.open(str(root_dir))
    steps = uwf("thread", "steps", thread).json()
    fork = fork_thread(repo, steps[1]["hash"]).thread
    assert uwf("thread", "step", fork, "--agent", kit).code == 0
    assert uwf("thread", "kill", thread).code == 0
    resumed = resume_thread(repo, thread, "and now the docs").thread
    assert uwf("thread", "step", resumed).code == 0  # the recording agent, after a resume
    assert uwf("thread", "step", resumed).code == 0
    for each in (thread, fork):
        for step in uwf("thread", "steps", each).json():
            details = step_details(Repo.open(str(root_dir)), step["hash"])
            assert details.prompt and "## History" in details.prompt
            stored = uwf("cas", "get", uwf("cas", "get", step["detail"], "--payload").json()["prompt"]).json()
            assert stored["type"] == PROMPT_HASH, step  # never the whole text: its history is always named
            if step["agent"] == "rec":
                sent = [p.read_text() for p in sorted((tmp_path / "seen").glob("prompt-*.txt"))]
                assert details.prompt in sent  # one of the prompts the recording agent got, whole
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
