"""extract (fast path) and prompt building (design §10)."""

from __future__ import annotations

import json

import pytest

from uwf_core.engine.extraction.extract import ExtractError, extract_fast, parse_answer, split_frontmatter
from uwf_core.engine.prompt import SCOPE_LINE, build_prompt, history_section, output_format_instruction
from uwf_core.thread.model import StartNode, StepContext, ThreadContext
from uwf_core.workflow.model import END, START, Role, Workflow, routes_from_payload

SCHEMA = {
    "type": "object",
    "properties": {
        "plan": {"type": "string", "description": "one-line summary"},
        "steps": {"type": "array", "items": {"type": "string"}},
        "risk": {"type": "string", "enum": ["low", "high"]},
        "ok": {"type": "boolean"},
    },
    "required": ["plan", "steps"],
    "additionalProperties": False,
}

# -- parse_answer / extract_fast -----------------------------------------------------------------


def test_frontmatter_after_blank_lines_is_read():
    text = "\n\n---\nplan: Do it\nsteps:\n  - one\n  - two\n---\n## Body\n\nDetails here.\n"
    output, body, method = parse_answer(text)
    assert output == {"plan": "Do it", "steps": ["one", "two"]}
    assert body == "## Body\n\nDetails here."
    assert method == "frontmatter"


@pytest.mark.parametrize(
    "text",
    [
        "Sure, here is my plan.\n\n---\nplan: Do it\nsteps: [one]\n---\nbody\n",  # prose first
        "An example of the format:\n\n```yaml\n---\nplan: Example\nsteps: [x]\n---\n```\n",  # a fenced example
        "```\n---\nplan: Example\nsteps: [x]\n---\n```\n",  # fenced from the first line
    ],
)
def test_frontmatter_only_at_the_start_of_the_answer(text):
    """As the reference: a block after prose or inside a code fence is an agent quoting an
    example; it goes to the fallback extractor, never taken as the answer."""
    with pytest.raises(ExtractError, match="no frontmatter block"):
        parse_answer(text)


def test_frontmatter_extracted_and_validated():
    text = "---\nplan: P\nsteps: [a]\nrisk: low\nok: true\n---\nbody text"
    extracted = extract_fast(text, SCHEMA)
    assert extracted.output == {"plan": "P", "steps": ["a"], "risk": "low", "ok": True}
    assert extracted.body == "body text"
    assert extracted.method == "frontmatter"


def test_frontmatter_without_body():
    output, body, method = parse_answer("---\nplan: P\nsteps: []\n---\n")
    assert output == {"plan": "P", "steps": []}
    assert body == ""
    assert method == "frontmatter"


def test_frontmatter_keeps_json_types_only():
    output, _, _ = parse_answer("---\nwhen: 2024-01-02\nn: 3\nx: 1.5\nnothing: null\n---\n")
    assert output == {"when": "2024-01-02", "n": 3, "x": 1.5, "nothing": None}
    json.dumps(output)


def test_single_json_object_is_the_output():
    text = '  {"plan": "P", "steps": ["a", "b"]}\n'
    output, body, method = parse_answer(text)
    assert output == {"plan": "P", "steps": ["a", "b"]}
    assert body == ""
    assert method == "json"
    extracted = extract_fast(text, SCHEMA)
    assert extracted.method == "json"
    assert extracted.output == {"plan": "P", "steps": ["a", "b"]}


def test_json_array_is_not_an_output():
    with pytest.raises(ExtractError):
        parse_answer('[{"plan": "P"}]')


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\n"])
def test_empty_answer(text):
    with pytest.raises(ExtractError, match="empty"):
        parse_answer(text)


def test_no_frontmatter():
    with pytest.raises(ExtractError) as info:
        parse_answer("I did the work, it is all fine.\nplan: P\n")
    assert "no frontmatter" in info.value.message
    assert "JSON object" in info.value.message


def test_unclosed_frontmatter_is_no_frontmatter():
    with pytest.raises(ExtractError, match="no frontmatter"):
        parse_answer("---\nplan: P\nsteps: []\n")


def test_invalid_yaml_in_frontmatter():
    with pytest.raises(ExtractError) as info:
        parse_answer("---\nplan: [unclosed\nsteps: x\n---\nbody")
    message = info.value.message
    assert "not valid YAML" in message
    assert "frontmatter line" in message


@pytest.mark.parametrize("block", ["- a\n- b", "just a string", "42"])
def test_frontmatter_not_a_mapping(block):
    with pytest.raises(ExtractError, match="not a mapping"):
        parse_answer(f"---\n{block}\n---\nbody")


def test_schema_mismatch_lists_the_errors():
    text = "---\nplan: 3\nrisk: medium\nextra: x\n---\n"
    with pytest.raises(ExtractError) as info:
        extract_fast(text, SCHEMA)
    exc = info.value
    assert len(exc.errors) == 4, exc.errors
    joined = "\n".join(exc.errors)
    assert "'steps' is a required property" in joined
    assert "at $.plan" in joined
    assert "at $.risk" in joined
    assert "extra" in joined
    assert "does not match the role's schema" in exc.message
    assert "(and 3 more)" in exc.message
    assert exc.message.count("\n") == 0


def test_schema_mismatch_of_json_answer_says_json():
    with pytest.raises(ExtractError) as info:
        extract_fast('{"plan": "P"}', SCHEMA)
    assert info.value.message.startswith("the json output does not match")
    assert info.value.errors == ["at $: 'steps' is a required property"]


def test_split_frontmatter_accepts_dots_terminator_and_bom():
    assert split_frontmatter("\ufeff---\na: 1\n...\nrest") == ("a: 1", "rest")
    assert split_frontmatter("no block") is None


# -- prompt --------------------------------------------------------------------------------------------

ROLE = Role(
    name="planner",
    description="Creates plans",
    goal="You are a planning agent.",
    capabilities=("issue-analysis", "planning"),
    procedure="Analyze the issue and plan.",
    output="Output the plan.",
    meta="0" * 13,
)
WORKFLOW = Workflow(
    name="solve-issue",
    description="End-to-end issue resolution",
    max_steps=30,
    roles={"planner": ROLE},
    conditions={},
    graph={START: routes_from_payload([{"role": "planner", "condition": None}]), "planner": routes_from_payload([{"role": END, "condition": None}])},
)


def make_context(*steps: tuple[str, object], prompt: str = "Fix the <login> form") -> ThreadContext:
    start = StartNode("1" * 13, prompt, None, None, None)
    contexts = [
        StepContext(f"S{i:012d}", role, f"O{i:012d}", f"D{i:012d}", f"agent-{i}", "2" * 13, load_output=lambda _h, out=output: out)
        for i, (role, output) in enumerate(steps)
    ]
    head = contexts[-1].hash if contexts else "2" * 13
    return ThreadContext(head, "2" * 13, start, contexts, len(contexts))


def test_output_format_instruction_lists_fields():
    text = output_format_instruction(SCHEMA)
    assert "YAML frontmatter" in text
    assert "- `plan` (string, required): one-line summary" in text
    assert "- `steps` (array of string, required)" in text
    assert '- `risk` (one of "low", "high", optional)' in text
    assert "- `ok` (boolean, optional)" in text
    assert "- no other fields" in text
    example = text.split("Example:", 1)[1]
    assert "plan:" in example and "steps:" in example
    assert "risk:" not in example  # only the required fields in the example


def test_build_prompt_sections_in_order():
    context = make_context(("planner", {"plan": "first plan", "steps": ["s1"]}), ("planner", {"plan": "second <plan>", "steps": []}))
    prompt = build_prompt(WORKFLOW, ROLE, SCHEMA, context, "Address the <reviewer>'s comments & retry")
    assert prompt.startswith("Workflow: solve-issue — End-to-end issue resolution\n")
    headings = ["# Deliverable format", "# Role: planner", "## Goal", "## Capabilities", "## Procedure", "## Output", "## Task", "## History"]
    positions = [prompt.index(h) for h in headings]
    assert positions == sorted(positions)
    assert "- `plan` (string, required)" in prompt
    assert "- `steps` (array of string, required)" in prompt
    assert "## Goal\n\nYou are a planning agent." in prompt
    assert "## Capabilities\n\n- issue-analysis\n- planning" in prompt
    assert "## Procedure\n\nAnalyze the issue and plan." in prompt
    assert "## Output\n\nOutput the plan." in prompt
    assert "## Task\n\nFix the <login> form\n\nAddress the <reviewer>'s comments & retry" in prompt
    history = prompt.split("## History", 1)[1]
    assert "### Step 1: planner (agent: agent-0)" in history
    assert "### Step 2: planner (agent: agent-1)" in history
    assert '"plan": "first plan"' in history
    assert '"plan": "second <plan>"' in history
    assert prompt.rstrip().endswith(SCOPE_LINE.format(role="planner"))
    assert "YOUR role's deliverable (planner)" in prompt


def test_build_prompt_without_instruction_or_history():
    prompt = build_prompt(WORKFLOW, ROLE, SCHEMA, make_context(prompt="Only the task"), None)
    assert "## Task\n\nOnly the task\n\n## History" in prompt
    assert "(no steps yet: you are the first)" in prompt


def test_history_quota_keeps_the_newest_and_counts_the_omitted():
    steps = [("planner", {"n": i, "pad": "x" * 200}) for i in range(10)]
    context = make_context(*steps)
    full = history_section(context, quota=10**6)
    assert "omitted" not in full
    assert all(f"### Step {i}:" in full for i in range(1, 11))
    one_block = len(history_section(make_context(steps[0]), quota=10**6))
    text = history_section(context, quota=one_block * 3 + 10)
    assert text.startswith("(7 earlier steps omitted; `uwf thread read` shows them)")
    kept = [i for i in range(1, 11) if f"### Step {i}:" in text]
    assert kept == [8, 9, 10]


def test_history_quota_keeps_at_least_the_newest_step():
    context = make_context(("planner", {"big": "y" * 500}), ("planner", {"big": "z" * 500}))
    text = history_section(context, quota=10)
    assert text.startswith("(1 earlier step omitted;")
    assert "### Step 2:" in text and "### Step 1:" not in text


def test_prompt_history_respects_the_default_quota():
    steps = [("planner", {"pad": "w" * 3000}) for _ in range(12)]
    prompt = build_prompt(WORKFLOW, ROLE, SCHEMA, make_context(*steps), None)
    assert "earlier steps omitted" in prompt
    assert "### Step 12: planner" in prompt
    assert "### Step 1: planner" not in prompt


def test_the_prompts_yaml_reads_back_as_written_and_matches_pyyaml_for_plain_values():
    """The frontmatter example is written without PyYAML (kept off the step's start-up)."""
    import yaml
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from uwf_core.encoding.simple_yaml import dump_block

    scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=12)
    values = st.dictionaries(st.text(min_size=1, max_size=8), st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(min_size=1, max_size=5), inner, max_size=3), max_leaves=6), min_size=1, max_size=4)

    @settings(max_examples=400, deadline=None)
    @given(values)
    def round_trip(value):
        assert yaml.safe_load(dump_block(value)) == value

    round_trip()
    plain = {"plan": "...", "steps": ["..."], "$status": "done", "risk": "low", "ok": True, "n": 0, "none": None, "nested": {"a": [1, 2]}}
    assert dump_block(plain) == yaml.safe_dump(plain, sort_keys=False, allow_unicode=True)
