"""The Workflows view: registered workflows, the selected one's graph, its
roles (goal, procedure, output schema) and its YAML source, highlighted."""

from __future__ import annotations

import json

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, ScrollableContainer, Vertical, VerticalScroll
from textual.widgets import DataTable, Input, Static, TabbedContent, TabPane

from uwf_core.api import (
    Repo,
    UwfError,
    Workflow,
    field_order,
    list_workflows,
    workflow_of,
    workflow_source,
)

from ..formatting import short
from .graph_layout import render_graph_rich
from .panes import PANE_KEYS, RowTable, active_scroll, focus_now
from .text_fields import BurstInput
from .timeline import row_at_cursor


class WorkflowsView(Horizontal):
    BINDINGS = PANE_KEYS

    def __init__(self, repo: Repo, **kwargs) -> None:
        super().__init__(**kwargs)
        self.repo = repo
        self.store = repo.nodes
        self.selected: str | None = None
        self.workflow: Workflow | None = None
        self.filter_text = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="workflow-list-pane"):
            yield BurstInput(placeholder="filter workflows (name, hash)", id="workflow-filter", classes="hidden")
            yield RowTable(id="workflows", cursor_type="row", zebra_stripes=True)
        with TabbedContent(id="workflow-tabs"):
            with TabPane("Graph", id="tab-graph"):
                yield ScrollableContainer(Static("", id="graph"), id="graph-scroll")  # scrolls sideways too: never clipped
            with TabPane("Roles", id="tab-roles"):
                yield VerticalScroll(Static("", id="roles"))
            with TabPane("YAML", id="tab-yaml"):
                yield VerticalScroll(Static("", id="yaml"))

    def on_mount(self) -> None:
        table = self.query_one("#workflows", DataTable)
        for label, width in (("workflow", 16), ("hash", 13), ("roles", 5), ("versions", 8)):
            table.add_column(label, width=width)
        self.reload()

    def panes(self) -> list:
        return [self.query_one("#workflows", DataTable), active_scroll(self.tabs())]

    def tabs(self) -> TabbedContent:
        return self.query_one("#workflow-tabs", TabbedContent)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """A click on the cursor's row: what Enter does (Enter itself calls enter_row() at once)."""
        self.enter_row(event.data_table)

    def enter_row(self, table: DataTable) -> None:
        """Enter on a workflow: into its graph (or whichever tab is open), to scroll it. The
        workflow under the cursor is shown first: its highlight event may still be queued."""
        if table.id == "workflows":
            name = row_at_cursor(table)
            if name and name != self.selected:
                self.show(name)
            focus_now(self.panes()[1])

    def back(self) -> bool:
        panes = self.panes()
        box = self.query_one("#workflow-filter", Input)
        if self.app.focused is not None and self.app.focused not in (panes[0], box):
            focus_now(panes[0])
        elif self.filter_text or not box.has_class("hidden"):
            box.value = ""
            box.add_class("hidden")
            self.filter_text = ""
            self.reload()
            focus_now(panes[0])
        else:
            return False
        return True

    def toggle_filter(self) -> None:
        box = self.query_one("#workflow-filter", Input)
        box.remove_class("hidden")
        focus_now(box)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "workflow-filter":
            self.filter_text = event.value.strip()
            self.reload()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "workflow-filter":
            if not event.value.strip():
                event.input.add_class("hidden")
            focus_now(self.query_one("#workflows", DataTable))

    def names(self) -> list[str]:
        try:
            return [entry.name for entry in list_workflows(self.repo)]
        except UwfError as exc:
            self.app.show_damage(exc.message)
            return []

    def reload(self) -> None:
        table = self.query_one("#workflows", DataTable)
        try:
            entries = list_workflows(self.repo)
        except UwfError as exc:
            table.clear()
            self.app.show_damage(exc.message)
            return
        keep = self.selected
        table.clear()
        needle = self.filter_text.lower()
        entries = [entry for entry in entries if needle in f"{entry.name} {entry.hash}".lower()]
        for entry in entries:
            try:
                roles = str(len(workflow_of(self.repo, entry.hash).roles))
            except UwfError:
                roles = "?"
            table.add_row(Text(entry.name, style="bold"), short(entry.hash, 13), roles, str(1 + len(entry.history)), key=entry.name)
        if not entries:
            empty = f"No workflow matches '{self.filter_text}' (esc clears the filter)." if needle else (
                "No workflows yet: `uwf workflow put FILE`, or start with `uwf-tui --demo`."
            )
            self.query_one("#graph", Static).update(empty)
            return
        target = keep if keep in table.rows else entries[0].name
        table.move_cursor(row=table.get_row_index(target))
        self.show(target)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "workflows" and event.row_key is not None and event.row_key.value != self.selected:
            self.show(event.row_key.value)

    def show(self, name: str) -> None:
        try:
            entry = next((e for e in list_workflows(self.repo) if e.name == name), None)
        except UwfError as exc:
            self.app.show_damage(exc.message)
            return
        if entry is None:
            return
        self.selected = name
        try:
            workflow = workflow_of(self.repo, entry.hash)
            source = workflow_source(self.repo, entry.hash)
        except UwfError as exc:
            self.app.notify(exc.message, severity="error")
            return
        self.workflow = workflow
        graph = Text.assemble((workflow.name, "bold"), " — ", workflow.description, "\n", (f"{entry.hash} · maxSteps {workflow.max_steps}\n\n", "dim"))
        graph.append_text(render_graph_rich(workflow))
        if workflow.conditions:
            graph.append("\n\nconditions\n", style="bold")
            for condition in workflow.conditions.values():
                graph.append(f"  {condition.name}", style="yellow")
                graph.append(f"  {condition.expression}\n", style="dim")
        self.query_one("#graph", Static).update(graph)
        self.query_one("#roles", Static).update(self._roles_text(workflow))
        self.query_one("#yaml", Static).update(Syntax(source, "yaml", line_numbers=True, word_wrap=True))

    def _roles_text(self, workflow: Workflow) -> Text:
        text = Text()
        for role in workflow.roles.values():
            text.append(f"{role.name}", style="bold cyan")
            text.append(f"  {role.description}\n", style="italic")
            for label, value in (("goal", role.goal), ("procedure", role.procedure), ("output", role.output)):
                text.append(f"  {label}: ", style="bold")
                text.append(" ".join(value.split()) + "\n")
            if role.capabilities:
                text.append("  capabilities: ", style="bold")
                text.append(", ".join(role.capabilities) + "\n")
            try:
                schema = self.store.schema(role.meta)
            except UwfError:
                schema = {}
            required = set(schema.get("required") or [])
            text.append(f"  output schema {role.meta}:\n", style="bold")
            for name in field_order(schema):
                sub = schema["properties"][name]
                text.append(f"    {name}", style="green" if name in required else "")
                text.append(f"  {json.dumps(sub, ensure_ascii=False)}\n", style="dim")
            text.append("\n")
        return text
