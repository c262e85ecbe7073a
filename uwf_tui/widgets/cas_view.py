"""The CAS browser: a tree that starts at thread heads, workflows or any hash,
and expands `cas_ref` references lazily (children fetched in a worker, added
in batches); the selected node in full, as highlighted JSON."""

from __future__ import annotations

import json

from rich.syntax import Syntax
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Input, Static, Tree
from textual.widgets.tree import TreeNode

from uwf_core.api import Repo, UwfError, list_threads, list_workflows

from .panes import PANE_KEYS, focus_now
from .text_fields import BurstInput, BurstTree

BATCH = 200
MAX_THREADS = 100
LOADING = "loading…"


class CasView(Horizontal):
    # Shown in the footer only here; the app's `g` works in every view.
    BINDINGS = [Binding("g", "app.goto_hash", "Go to hash"), *PANE_KEYS]

    def __init__(self, repo: Repo, **kwargs) -> None:
        super().__init__(**kwargs)
        self.repo = repo
        self.store = repo.nodes
        self.titles: dict[str, str] = {}
        self.shown: str | None = None
        self.filter_text = ""

    def compose(self) -> ComposeResult:
        tree: Tree[str] = BurstTree("CAS", id="cas-tree")
        tree.show_root = False
        with Vertical(id="cas-tree-pane"):
            yield BurstInput(placeholder="filter the threads and workflows (id, name, hash)", id="cas-filter", classes="hidden")
            yield tree
        with VerticalScroll(id="cas-node-scroll"):
            yield Static("Select a node; enter opens it. g goes to a hash.", id="cas-node")

    def on_mount(self) -> None:
        self.reload()
        self.call_after_refresh(self._first_cursor)

    def _first_cursor(self) -> None:
        """The cursor on the first line (threads), so the first `j` moves to a thread rather than
        only showing where the cursor is."""
        tree = self.query_one("#cas-tree", Tree)
        if tree.cursor_line < 0:
            tree.cursor_line = 0

    def panes(self) -> list:
        return [self.query_one("#cas-tree", Tree), self.query_one("#cas-node-scroll", VerticalScroll)]

    def tabs(self) -> None:
        return None  # one node, no tabs

    def back(self) -> bool:
        panes = self.panes()
        box = self.query_one("#cas-filter", Input)
        if self.app.focused is panes[1]:
            focus_now(panes[0])
        elif self.filter_text or not box.has_class("hidden"):
            box.value = ""
            box.add_class("hidden")
            self.filter_text = ""
            self.refresh_roots()
            focus_now(panes[0])
        else:
            return False
        return True

    def toggle_filter(self) -> None:
        box = self.query_one("#cas-filter", Input)
        box.remove_class("hidden")
        focus_now(box)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "cas-filter":
            self.filter_text = event.value.strip()
            self.refresh_roots()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "cas-filter":
            if not event.value.strip():
                event.input.add_class("hidden")
            focus_now(self.query_one("#cas-tree", Tree))

    def reload(self) -> None:
        tree = self.query_one("#cas-tree", Tree)
        tree.clear()
        self.threads_branch = tree.root.add("threads", expand=True)
        self.workflows_branch = tree.root.add("workflows", expand=True)
        self.goto_branch = tree.root.add("opened", expand=True)
        self.fill_roots()

    def refresh_roots(self) -> None:
        """The root changed (a new thread, a head moved): rebuild the threads and workflows
        branches; what was opened with `g` stays."""
        self.threads_branch.remove_children()
        self.workflows_branch.remove_children()
        self.fill_roots()

    def fill_roots(self) -> None:
        threads, workflows = self.threads_branch, self.workflows_branch
        needle = self.filter_text.lower()
        try:
            for info in list_threads(self.repo, include_archived=True)[:MAX_THREADS]:
                if needle not in f"{info.thread} {info.head}".lower():
                    continue
                state = "" if info.active else f" ({info.reason})"
                self._add_ref(threads, info.head, prefix=f"{info.thread[:10]}{state} → ")
        except UwfError as exc:
            threads.add_leaf(Text(exc.message, style="red"))
            self.app.show_damage(exc.message)
        try:
            for entry in list_workflows(self.repo):
                if needle in f"{entry.name} {entry.hash}".lower():
                    self._add_ref(workflows, entry.hash, prefix=f"{entry.name} → ")
        except UwfError as exc:
            workflows.add_leaf(Text(exc.message, style="red"))
            self.app.show_damage(exc.message)

    def _title(self, type_hash: str) -> str:
        if type_hash not in self.titles:
            try:
                self.titles[type_hash] = self.store.title_of(type_hash) or type_hash
            except UwfError:
                self.titles[type_hash] = type_hash
        return self.titles[type_hash]

    def _label(self, hash_: str, prefix: str = "") -> Text:
        try:
            node = self.store.get(hash_)
        except UwfError as exc:
            return Text.assemble(prefix, (hash_, "bold red"), f"  {exc.message}")
        title = "meta-schema" if node.type == hash_ else self._title(node.type)
        preview = json.dumps(node.payload, ensure_ascii=False)
        preview = " ".join(preview.split())[:70]
        return Text.assemble(prefix, (hash_, "bold"), "  ", (title, "cyan"), "  ", (preview, "dim"))

    def _add_ref(self, parent: TreeNode, hash_: str, prefix: str = "") -> TreeNode:
        node = parent.add(self._label(hash_, prefix), data=hash_)
        node.add_leaf(LOADING)
        return node

    def open_hash(self, text: str) -> None:
        try:
            hash_ = self.store.resolve(text)
        except UwfError as exc:
            self.app.notify(exc.message, severity="error")
            return
        node = self._add_ref(self.goto_branch, hash_)
        tree = self.query_one("#cas-tree", Tree)
        self.show_node(hash_)
        # The new node gets its line on the next refresh: move the cursor there after it.
        tree.call_after_refresh(lambda: (tree.move_cursor(node), tree.scroll_to_node(node)))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded) -> None:
        node = event.node
        if node.data and node.children and str(node.children[0].label) == LOADING:
            self.load_children(node)

    @work(thread=True, group="cas", exit_on_error=False, description="load_children")
    def load_children(self, node: TreeNode) -> None:
        try:
            refs = self.store.refs(node.data)
            labels = [(ref, self._label(ref)) for ref in refs]
        except UwfError as exc:
            self.app.call_from_thread(self._fill, node, [], exc.message)
            return
        self.app.call_from_thread(self._fill, node, labels, None)

    def _fill(self, node: TreeNode, labels: list[tuple[str, Text]], error: str | None) -> None:
        node.remove_children()
        if error:
            node.add_leaf(Text(error, style="red"))
            return
        if not labels:
            node.add_leaf(Text("no references", style="dim"))
        for start in range(0, len(labels), BATCH):
            for ref, label in labels[start : start + BATCH]:
                child = node.add(label, data=ref)
                child.add_leaf(LOADING)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        if event.node.data:
            self.show_node(event.node.data)

    def show_node(self, hash_: str) -> None:
        self.shown = hash_
        try:
            node = self.store.get(hash_)
        except UwfError as exc:
            self.query_one("#cas-node", Static).update(Text(exc.message, style="red"))
            return
        header = Text.assemble((hash_, "bold"), "  type ", (node.type, "cyan"), f" ({'meta-schema' if node.type == hash_ else self._title(node.type)})\n")
        body = Syntax(json.dumps(node.envelope(), indent=2, ensure_ascii=False), "json", word_wrap=True)
        from rich.console import Group

        self.query_one("#cas-node", Static).update(Group(header, body))
