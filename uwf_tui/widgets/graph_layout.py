"""Draw a workflow graph in the terminal: a layered layout, top to bottom.

Roles are boxes in layers (longest path from $START over forward edges). A forward edge that
skips layers is split into pieces through a thin slot in each layer it passes (a Sugiyama
"dummy"), so every forward piece runs between adjacent layers, through the channel below a
layer, one row per turn. Loops (edges back up, like reviewer → developer) run in lanes on the
right, nested so that they do not cross each other. The order of the boxes in each layer is the
one whose drawing has the fewest crossings (every order is tried when there are few), and the
rows of a channel are ordered so that no turn crosses a line it could avoid. Every edge carries
its label (condition name, `otherwise`, or a status) beside one of its own lines.
The drawing itself is graph_canvas.py. Pure: text in, text out.
"""

from __future__ import annotations

import math
from itertools import permutations, product

from uwf_core.api import END, START, Workflow, workflow_edges

from .graph_canvas import Canvas, Edge, Graph, Piece, draw, far_labels

MAX_ORDERS = 120  # drawings tried for the order of boxes with the fewest crossings (~1 ms each)
EDGE_COLOURS = ["yellow", "green", "bright_blue", "magenta", "dark_orange", "bright_cyan", "orchid", "chartreuse3"]


# -- the graph: edges, layers, dummies ---------------------------------------------------


def _edges(workflow: Workflow) -> list[Edge]:
    """One edge per (source, target); parallel edges (e.g. two statuses to one role) share it."""
    merged: dict[tuple[str, str], Edge] = {}
    for source, target, label in workflow_edges(workflow):
        label = label.removeprefix("$status=")
        edge = merged.get((source, target))
        if edge is None:
            merged[(source, target)] = Edge(source, target, label)
        elif label:
            edge.label = f"{edge.label} | {label}" if edge.label else label
    return list(merged.values())


def assign_layers(workflow: Workflow, edges: list[Edge]) -> dict[str, int]:
    """Longest path from $START over forward edges; edges closing a cycle are marked back."""
    outgoing: dict[str, list[Edge]] = {}
    for edge in edges:
        outgoing.setdefault(edge.source, []).append(edge)
    state: dict[str, int] = {}  # 1 = on stack, 2 = done
    order: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        for edge in outgoing.get(node, []):
            if state.get(edge.target) == 1:
                edge.back = True
            elif edge.target not in state:
                visit(edge.target)
        state[node] = 2
        order.append(node)

    visit(START)
    for name in workflow.roles:
        if name not in state:
            visit(name)
    layer = {START: 0}
    for node in reversed(order):
        for edge in outgoing.get(node, []):
            if not edge.back:
                layer[edge.target] = max(layer.get(edge.target, 0), layer.get(node, 0) + 1)
    for node in state:
        layer.setdefault(node, 0)
    if END in layer:  # $END always sits alone at the bottom
        layer[END] = max(value for node, value in layer.items() if node != END) + 1
    return layer


def _graph(workflow: Workflow) -> Graph:
    """Layers with a dummy slot wherever a forward edge passes a layer without stopping."""
    edges = _edges(workflow)
    layer_of = assign_layers(workflow, edges)
    layers: list[list[str]] = [[] for _ in range(max(layer_of.values()) + 1)]
    for name in [START, *workflow.roles, END]:
        if name in layer_of:
            layers[layer_of[name]].append(name)
    widths = {name: len(name) + 4 for layer in layers for name in layer}
    graph = Graph(layers, layer_of, [], [edge for edge in edges if edge.back], edges, widths)
    for number, edge in enumerate(e for e in edges if not e.back):
        previous = edge.source
        for layer in range(layer_of[edge.source] + 1, layer_of[edge.target]):
            dummy = f"\0{number}:{layer}"  # no role name starts with NUL
            layer_of[dummy] = layer
            layers[layer].append(dummy)
            labelled = edge.label and previous == edge.source  # the first slot carries the label beside it
            widths[dummy] = len(edge.label) + 3 if labelled else 1
            if labelled:
                graph.beside[dummy] = edge
            graph.pieces.append(Piece(edge, previous, dummy))
            previous = dummy
        graph.pieces.append(Piece(edge, previous, edge.target))
    return graph


# -- choosing the order of each layer -------------------------------------------------------


def _orders(graph: Graph) -> list[list[list[str]]] | None:
    """Every order of every layer, when there are few (None when there are too many)."""
    choices = [list(permutations(layer)) if len(layer) > 1 else [tuple(layer)] for layer in graph.layers]
    if math.prod(len(options) for options in choices) > MAX_ORDERS:
        return None
    return [[list(layer) for layer in combination] for combination in product(*choices)]


def _swapped(graph: Graph, start: list[list[str]]):
    """From a barycenter order, neighbours swapped one at a time while that draws better."""
    best = _scored(graph, start)
    tries = MAX_ORDERS
    improved = True
    while improved and tries > 0:
        improved = False
        for index, layer in enumerate(best[1]):
            for position in range(len(layer) - 1):
                order = [list(each) for each in best[1]]
                order[index][position], order[index][position + 1] = order[index][position + 1], order[index][position]
                tries -= 1
                candidate = _scored(graph, order)
                if candidate[0] < best[0]:
                    best, improved = candidate, True
    return best


def _scored(graph: Graph, order: list[list[str]]) -> tuple[tuple, list[list[str]], Canvas]:
    canvas = draw(graph, order)
    return (canvas.conflicts, far_labels(canvas), canvas.width, canvas.height), order, canvas


def _barycenter(graph: Graph) -> list[list[str]]:
    """Two sweeps down and up, each layer sorted by the mean position of its neighbours."""
    layers = [list(layer) for layer in graph.layers]
    for _ in range(2):
        for index in list(range(1, len(layers))) + list(range(len(layers) - 2, -1, -1)):
            neighbours = {name: pos for layer in (layers[index - 1] if index else [], layers[index + 1] if index + 1 < len(layers) else []) for pos, name in enumerate(layer)}

            def centre(name: str) -> float:
                linked = [neighbours[p.source] for p in graph.pieces if p.target == name and p.source in neighbours]
                linked += [neighbours[p.target] for p in graph.pieces if p.source == name and p.target in neighbours]
                return sum(linked) / len(linked) if linked else len(neighbours)

            layers[index].sort(key=centre)
    return layers


def layout(workflow: Workflow) -> Canvas:
    """The drawing with the fewest crossings, then labels away from their edge, then the narrowest.
    Cached by the workflow's hash: a workflow node never changes."""
    if workflow.hash is not None:
        return _layout_of_hash(workflow.hash, workflow)
    return _layout(workflow)


_LAYOUTS: dict[str, Canvas] = {}


def _layout_of_hash(hash_: str, workflow: Workflow) -> Canvas:
    if hash_ not in _LAYOUTS:
        _LAYOUTS[hash_] = _layout(workflow)
    return _LAYOUTS[hash_]


def _layout(workflow: Workflow) -> Canvas:
    graph = _graph(workflow)
    orders = _orders(graph)
    if orders is None:
        return _swapped(graph, _barycenter(graph))[2]
    return min((_scored(graph, order) for order in orders), key=lambda scored: scored[0])[2]


def render_graph(workflow: Workflow) -> str:
    return layout(workflow).render() + "\n"


def render_graph_rich(workflow: Workflow):
    """The same drawing as a Rich Text: boxes coloured by kind, and each labelled edge (its
    lines, its arrow and its label) in a colour of its own, so a label reads with its edge."""
    from rich.text import Text

    styles = {"box": "bold cyan", "terminal": "bold magenta", "label": "yellow", "arrow": "bold white", "line": "grey62"}
    text = Text()
    canvas = layout(workflow)
    rows = canvas.cells()
    while rows and all(char == " " for char, _, _ in rows[-1]):
        rows.pop()
    for index, row in enumerate(rows):
        if index:
            text.append("\n")
        while row and row[-1][0] == " ":
            row.pop()
        for char, kind, owner in row:
            if owner is not None and owner in canvas.coloured and kind in ("line", "label", "arrow"):
                colour = EDGE_COLOURS[owner % len(EDGE_COLOURS)]
                text.append(char, f"bold {colour}" if kind != "line" else colour)
            else:
                text.append(char, styles.get(kind, ""))
    return text
