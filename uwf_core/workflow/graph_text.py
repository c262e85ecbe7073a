"""A workflow's graph as plain text or Mermaid: roles and labelled transitions."""

from __future__ import annotations

from .model import END, START, Workflow

FALLBACK_LABEL = "otherwise"


def edges(workflow: Workflow) -> list[tuple[str, str, str]]:
    """(source, target, label) in graph order; the label is the condition or status."""
    result = []
    for source, routes in workflow.graph.items():
        if routes.statuses is not None:
            for status, target in routes.statuses.items():
                result.append((source, target.role, f"$status={status}"))
        else:
            transitions = routes.transitions or ()
            for transition in transitions:
                label = transition.condition or (FALLBACK_LABEL if len(transitions) > 1 else "")
                result.append((source, transition.role, label))
    return result


def render_text(workflow: Workflow) -> str:
    lines = [f"{workflow.name}: {workflow.description}".rstrip(": ") if workflow.description else workflow.name]
    lines.append(f"roles: {', '.join(workflow.roles)}   maxSteps: {workflow.max_steps}")
    lines.append("")
    width = max(len(source) for source in workflow.graph) if workflow.graph else 0
    previous = None
    for source, target, label in edges(workflow):
        shown = source if source != previous else ""
        lines.append(f"  {shown:<{width}}  --> {target}" + (f"  [{label}]" if label else ""))
        previous = source
    maps = [role for role in workflow.roles.values() if role.map is not None]
    if maps:
        lines.append("")
        lines.append("maps:")
        for role in maps:
            assert role.map is not None  # so chosen above
            limit = f", {role.map.max_parallel} at a time" if role.map.max_parallel else ""
            lines.append(f"  {role.name}: a '{role.map.workflow}' thread per item of {role.map.over}{limit}, onFailure {role.map.on_failure}")
    if workflow.conditions:
        lines.append("")
        lines.append("conditions:")
        for name, condition in workflow.conditions.items():
            lines.append(f"  {name}: {condition.expression}")
    return "\n".join(lines) + "\n"


def _mermaid_id(name: str) -> str:
    if name == START:
        return "START"
    if name == END:
        return "END"
    return "r_" + "".join(char if char.isalnum() else "_" for char in name)


def _mermaid_label(text: str) -> str:
    return text.replace('"', "#quot;")


def render_mermaid(workflow: Workflow) -> str:
    lines = ["flowchart TD", f'  START(("{START}"))', f'  END(("{END}"))']
    for name, role in workflow.roles.items():
        label = f"{name} ⑂ {role.map.workflow}" if role.map is not None else name
        lines.append(f'  {_mermaid_id(name)}["{_mermaid_label(label)}"]')
    for source, target, label in edges(workflow):
        arrow = f'-->|"{_mermaid_label(label)}"|' if label else "-->"
        lines.append(f"  {_mermaid_id(source)} {arrow} {_mermaid_id(target)}")
    return "\n".join(lines) + "\n"
