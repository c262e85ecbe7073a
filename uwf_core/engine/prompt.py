"""The prompt every agent works from, built by the core so all agents share it:
output-format instruction (from the role's schema), the role, the task, the
history, and a scope line."""

from __future__ import annotations

import json

from ..encoding.simple_yaml import dump_block
from ..thread.model import ThreadContext
from ..workflow.model import Role, Workflow

HISTORY_QUOTA_CHARS = 20000
SCOPE_LINE = (
    "Focus exclusively on YOUR role's deliverable ({role}). Do not perform the work of other roles; "
    "they run after you, with your output in their history."
)


def describe_type(schema: dict) -> str:
    if "const" in schema:
        return f"exactly {json.dumps(schema['const'])}"
    if isinstance(schema.get("enum"), list):
        return "one of " + ", ".join(json.dumps(value) for value in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " or ".join(describe_type(sub) for sub in schema[key])
    kind = schema.get("type", "any value")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"array of {describe_type(schema['items'])}"
    if kind == "string" and schema.get("format") == "cas_ref":
        return "string (a 13-character CAS hash)"
    return str(kind)


def _example(schema: dict) -> object:
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "array":
        return [_example(schema.get("items") or {"type": "string"})]
    if kind == "object":
        return {name: _example(sub) for name, sub in (schema.get("properties") or {}).items()}
    return {"string": "...", "number": 0, "integer": 0, "boolean": True, "null": None}.get(kind, "...")


def frontmatter_template(schema: dict) -> str:
    """A frontmatter block with an example value for every field, for a person to fill in."""
    from ..store.schemas import field_order

    example = {name: _example(schema["properties"][name]) for name in field_order(schema)}
    return "---\n" + dump_block(example) + "---\n\n"


def output_format_instruction(schema: dict) -> str:
    """Tell the agent exactly which frontmatter fields to produce."""
    from ..store.schemas import field_order

    properties = {name: schema["properties"][name] for name in field_order(schema)}
    required = set(schema.get("required") or [])
    lines = [
        "# Deliverable format",
        "",
        "Begin your answer with a YAML frontmatter block (between two `---` lines) holding these fields,",
        "then write your work as a markdown body below it.",
        "",
    ]
    for name, sub in properties.items():
        flag = "required" if name in required else "optional"
        description = f": {sub['description']}" if isinstance(sub, dict) and sub.get("description") else ""
        lines.append(f"- `{name}` ({describe_type(sub)}, {flag}){description}")
    if schema.get("additionalProperties") is False:
        lines.append("- no other fields")
    example = {name: _example(sub) for name, sub in properties.items() if name in required or not required}
    lines += ["", "Example:", "", "---", dump_block(example).rstrip(), "---", "", "(your markdown body)"]
    return "\n".join(lines)


def history_section(context: ThreadContext, quota: int = HISTORY_QUOTA_CHARS) -> str:
    """Earlier steps, newest kept when the quota is reached."""
    kept: list[str] = []
    used = 0
    total = len(context.steps)
    for number, step in zip(range(total, 0, -1), reversed(context.steps)):  # newest first: reads no further back than kept
        output = json.dumps(step.output, indent=2, ensure_ascii=False)
        block = f"### Step {number}: {step.role} (agent: {step.agent})\n\n```json\n{output}\n```"
        if used + len(block) > quota and kept:
            break
        kept.append(block)
        used += len(block)
    kept.reverse()
    omitted = total - len(kept)
    if omitted:
        kept.insert(0, f"({omitted} earlier step{'s' if omitted > 1 else ''} omitted; `uwf thread read` shows them)")
    return "\n\n".join(kept) if kept else "(no steps yet: you are the first)"


def build_prompt(workflow: Workflow, role: Role, schema: dict, context: ThreadContext, instruction: str | None) -> str:
    sections = [output_format_instruction(schema), f"# Role: {role.name}", f"## Goal\n\n{role.goal.strip()}"]
    if role.capabilities:
        sections.append("## Capabilities\n\n" + "\n".join(f"- {c}" for c in role.capabilities))
    sections.append(f"## Procedure\n\n{role.procedure.strip()}")
    sections.append(f"## Output\n\n{role.output.strip()}")
    task = context.start.prompt.strip()
    if instruction:
        task += f"\n\n{instruction.strip()}"
    sections.append(f"## Task\n\n{task}")
    sections.append(f"## History\n\n{history_section(context)}")
    sections.append(SCOPE_LINE.format(role=role.name))
    return f"Workflow: {workflow.name}" + (f" — {workflow.description}" if workflow.description else "") + "\n\n" + "\n\n".join(sections) + "\n"
