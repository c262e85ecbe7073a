"""The prompt every agent works from, built by the core so all agents share it:
output-format instruction (from the role's schema), the role, the task, the
history, and a scope line."""

from __future__ import annotations

import json

from ..encoding.records import record
from ..encoding.simple_yaml import dump_block
from ..thread.history import block_text
from ..thread.model import ThreadContext
from ..workflow.model import Role, Workflow

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any

HISTORY_QUOTA_CHARS = 20000
HISTORY_STEPS = 40  # the newest steps a prompt shows at most (`uwf thread read` shows them all)
SCOPE_LINE = (
    "Focus exclusively on YOUR role's deliverable ({role}). Do not perform the work of other roles; "
    "they run after you, with your output in their history."
)


def describe_type(schema: dict[str, Any]) -> str:
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


def _example(schema: dict[str, Any]) -> object:
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind: Any = schema.get("type")  # a type's name, a list of them, or None
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "array":
        return [_example(schema.get("items") or {"type": "string"})]
    if kind == "object":
        return {name: _example(sub) for name, sub in (schema.get("properties") or {}).items()}
    return {"string": "...", "number": 0, "integer": 0, "boolean": True, "null": None}.get(kind, "...")


def frontmatter_template(schema: dict[str, Any]) -> str:
    """A frontmatter block with an example value for every field, for a person to fill in."""
    from ..store.schemas import field_order

    example = {name: _example(schema["properties"][name]) for name in field_order(schema)}
    return "---\n" + dump_block(example) + "---\n\n"


def output_format_instruction(schema: dict[str, Any]) -> str:
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


@record(frozen=True)
class Prompt:
    """The prompt an agent gets, in the parts it is stored by: `before` (format, role, task: the
    same for every step of a role with the same task), `lead` (the omitted-steps note, or the
    no-steps note), one block per earlier step shown (each the same in every later prompt), and
    `after` (the scope line)."""

    before: str
    lead: str
    blocks: tuple[str, ...]
    after: str

    @property
    def text(self) -> str:
        return self.before + self.lead + "\n\n".join(self.blocks) + self.after


def history_blocks(context: ThreadContext, quota: int = HISTORY_QUOTA_CHARS, limit: int = HISTORY_STEPS) -> tuple[str, list[str]]:
    """(lead, blocks): the newest steps that fit the quota and the step limit, oldest first, read
    newest first so no older step is read than is shown."""
    kept: list[str] = []
    used = 0
    total = len(context.steps)
    for number, step in zip(range(total, 0, -1), reversed(context.steps)):
        if len(kept) >= limit:
            break
        block = block_text(number, step.role, step.agent, step.output)
        if used + len(block) > quota and kept:
            break
        kept.append(block)
        used += len(block)
    kept.reverse()
    if not kept:
        return "(no steps yet: you are the first)", []
    omitted = total - len(kept)
    lead = f"({omitted} earlier step{'s' if omitted > 1 else ''} omitted; `uwf thread read` shows them)\n\n" if omitted else ""
    return lead, kept


def history_section(context: ThreadContext, quota: int = HISTORY_QUOTA_CHARS) -> str:
    """Earlier steps, newest kept when the quota or the step limit is reached."""
    lead, blocks = history_blocks(context, quota)
    return lead + "\n\n".join(blocks)


def build_prompt(workflow: Workflow, role: Role, schema: dict[str, Any], context: ThreadContext, instruction: str | None) -> str:
    return build_prompt_parts(workflow, role, schema, context, instruction).text


def build_prompt_parts(workflow: Workflow, role: Role, schema: dict[str, Any], context: ThreadContext, instruction: str | None) -> Prompt:
    sections = [output_format_instruction(schema), f"# Role: {role.name}", f"## Goal\n\n{role.goal.strip()}"]
    if role.capabilities:
        sections.append("## Capabilities\n\n" + "\n".join(f"- {c}" for c in role.capabilities))
    sections.append(f"## Procedure\n\n{role.procedure.strip()}")
    sections.append(f"## Output\n\n{role.output.strip()}")
    task = context.start.prompt.strip()
    if instruction:
        task += f"\n\n{instruction.strip()}"
    sections.append(f"## Task\n\n{task}")
    sections.append("## History\n\n")
    header = f"Workflow: {workflow.name}" + (f" — {workflow.description}" if workflow.description else "") + "\n\n"
    lead, blocks = history_blocks(context)
    return Prompt(header + "\n\n".join(sections), lead, tuple(blocks), "\n\n" + SCOPE_LINE.format(role=role.name) + "\n")
