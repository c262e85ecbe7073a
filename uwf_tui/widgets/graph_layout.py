"""Draw a workflow graph in the terminal: a layered layout, top to bottom.

Roles are boxes in layers (longest path from $START over forward edges). A forward edge that
skips layers is split into pieces through a thin slot in each layer it passes (a Sugiyama
"dummy"), so every forward piece runs between adjacent layers, through the channel below a
layer, one row per turn. Loops (edges back up, like reviewer → developer) run in lanes on the
right, nested so that they do not cross each other. The order of the boxes in each layer is the
one whose drawing has the fewest crossings (every order is tried when there are few), and the
rows of a channel are ordered so that no turn crosses a line it could avoid. Every edge carries
its label (condition name, `otherwise`, or a status) beside one of its own lines.
Pure: text in, text out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import permutations, product

from uwf_core.api import END, START, Workflow, workflow_edges

N, S, E, W = 1, 2, 4, 8
LINE_CHARS = {
    N | S: "│", E | W: "─", S | E: "┌", S | W: "┐", N | E: "└", N | W: "┘",
    N | S | E: "├", N | S | W: "┤", E | W | S: "┬", E | W | N: "┴", N | S | E | W: "┼",
    N: "│", S: "│", E: "─", W: "─",
}
BOX_HEIGHT = 3
GAP = 4
LANE_GAP = 6
MAX_ORDERS = 120  # drawings tried for the order of boxes with the fewest crossings (~1 ms each)
EDGE_COLOURS = ["yellow", "green", "bright_blue", "magenta", "dark_orange", "bright_cyan", "orchid", "chartreuse3"]


@dataclass(eq=False)
class Edge:
    source: str
    target: str
    label: str
    back: bool = False


@dataclass(eq=False)
class Piece:
    """One piece of a forward edge, between adjacent layers (from or to a dummy slot)."""

    edge: Edge
    source: str
    target: str


@dataclass(eq=False)
class Run:
    """A horizontal run in a channel and the verticals that meet it from above and below."""

    key: tuple
    left: int
    right: int
    up: tuple[int, ...]
    down: tuple[int, ...]


@dataclass
class Canvas:
    width: int
    height: int
    lines: dict[tuple[int, int], int] = field(default_factory=dict)
    text: dict[tuple[int, int], str] = field(default_factory=dict)
    kinds: dict[tuple[int, int], str] = field(default_factory=dict)  # for colouring: box, label, arrow
    owners: dict[tuple[int, int], int] = field(default_factory=dict)  # line or label cell -> its edge's number
    coloured: set[int] = field(default_factory=set)  # the edges drawn in a colour of their own (labelled)
    pen: int | None = None  # the edge being drawn: its lines, label and arrow share a colour
    conflicts: int = 0  # cells where a line met another edge's line (crossings, overlaps)

    def put(self, x: int, y: int, value: str, kind: str = "") -> None:
        for offset, char in enumerate(value):
            self.text[(x + offset, y)] = char
            if kind:
                self.kinds[(x + offset, y)] = kind
            if self.pen is not None and kind in ("label", "arrow"):
                self.owners[(x + offset, y)] = self.pen
        self.width = max(self.width, x + len(value))
        self.height = max(self.height, y + 1)

    def free(self, x: int, y: int, length: int) -> bool:
        return x >= 0 and all((x + i, y) not in self.text and (x + i, y) not in self.lines for i in range(length))

    def link(self, x: int, y: int, bits: int) -> None:
        owner = self.owners.get((x, y))
        if (x, y) in self.lines and owner is not None and owner != self.pen:
            self.conflicts += 1
        self.lines[(x, y)] = self.lines.get((x, y), 0) | bits
        if self.pen is not None:
            self.owners.setdefault((x, y), self.pen)  # at a crossing the first edge keeps its colour
        self.width = max(self.width, x + 1)
        self.height = max(self.height, y + 1)

    def vline(self, x: int, y1: int, y2: int) -> None:
        top, bottom = min(y1, y2), max(y1, y2)
        for y in range(top, bottom + 1):
            bits = (N if y > top else 0) | (S if y < bottom else 0)
            self.link(x, y, bits or N | S)

    def hline(self, y: int, x1: int, x2: int) -> None:
        if x1 == x2:
            return
        left, right = min(x1, x2), max(x1, x2)
        for x in range(left, right + 1):
            bits = (W if x > left else 0) | (E if x < right else 0)
            self.link(x, y, bits or E | W)

    def cells(self) -> list[list[tuple[str, str, int | None]]]:
        """Each cell as (character, kind, the number of the edge it belongs to or None)."""
        rows = []
        for y in range(self.height):
            row = []
            for x in range(self.width):
                owner = self.owners.get((x, y))
                if (x, y) in self.text:
                    row.append((self.text[(x, y)], self.kinds.get((x, y), ""), owner))
                elif (x, y) in self.lines:
                    row.append((LINE_CHARS.get(self.lines[(x, y)], "┼"), "line", owner))
                else:
                    row.append((" ", "", None))
            rows.append(row)
        return rows

    def render(self) -> str:
        return "\n".join("".join(char for char, _, _ in row).rstrip() for row in self.cells()).rstrip("\n")


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


@dataclass
class Graph:
    layers: list[list[str]]
    layer_of: dict[str, int]
    pieces: list[Piece]
    back: list[Edge]
    edges: list[Edge]
    widths: dict[str, int]
    beside: dict[str, Edge] = field(default_factory=dict)  # dummy -> the labelled edge whose label sits beside it


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


def is_dummy(name: str) -> bool:
    return name.startswith("\0")


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
    canvas = _draw(graph, order)
    return (canvas.conflicts, _far_labels(canvas), canvas.width, canvas.height), order, canvas


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


# -- drawing one order --------------------------------------------------------------------


def _draw(graph: Graph, layers: list[list[str]]) -> Canvas:
    margin = min(24, max([len(e.label) + 3 for e in graph.edges if e.label and not e.back] or [0]))  # labels on the left
    xs, total = _columns(layers, graph.widths, margin)
    lanes = _lanes(graph, xs, total + 2)
    out_ports, in_ports = _ports(graph, layers, xs, lanes)
    channels = _channels(graph, layers, out_ports, in_ports, lanes)
    tops = _tops(channels)
    canvas = Canvas(total, tops[-1] + BOX_HEIGHT)
    canvas.coloured = {number for number, edge in enumerate(graph.edges) if edge.label}
    rows = {run.key: tops[index] + BOX_HEIGHT + 1 + row for index, runs in enumerate(channels) for row, run in enumerate(runs)}
    _draw_pieces(canvas, graph, xs, tops, out_ports, in_ports, rows)
    _draw_back(canvas, graph, xs, tops, out_ports, in_ports, rows, lanes)
    _draw_labels(canvas, graph, xs, tops, out_ports, in_ports, rows, lanes)
    canvas.pen = None
    for name, x in xs.items():
        if not is_dummy(name):
            _draw_box(canvas, name, x, tops[graph.layer_of[name]], graph.widths[name])
    return canvas


def _columns(layers: list[list[str]], widths: dict[str, int], margin: int) -> tuple[dict[str, int], int]:
    """Each box's x, its layer centred; and the width of the widest layer."""
    row_widths = [sum(widths[n] for n in layer) + GAP * (len(layer) - 1) for layer in layers]
    total = max(row_widths) + margin
    xs: dict[str, int] = {}
    for layer, row_width in zip(layers, row_widths):
        x = margin + (total - margin - row_width) // 2
        for name in layer:
            xs[name] = x
            x += widths[name] + GAP
    return xs, total


def _lanes(graph: Graph, xs: dict[str, int], first: int) -> dict[int, int]:
    """x of each back edge's lane: the shorter the loop, the nearer, so loops nest and never cross."""
    def span(edge: Edge) -> tuple[int, int]:
        return graph.layer_of[edge.source] - graph.layer_of[edge.target], -xs[edge.source]

    lanes, x = {}, first
    for edge in sorted(graph.back, key=span):
        lanes[id(edge)] = x
        x += max(LANE_GAP, len(edge.label) + 4)
    return lanes


def _ports(graph: Graph, layers, xs, lanes) -> tuple[dict[int, int], dict[int, int]]:
    """x where each piece or back edge leaves its source's bottom and enters its target's top:
    pieces in the order of the other end; back edges on the right, outer lanes left of inner."""
    leaving: dict[str, list] = {}
    entering: dict[str, list] = {}
    for piece in graph.pieces:
        leaving.setdefault(piece.source, []).append((0, xs[piece.target], piece))
        entering.setdefault(piece.target, []).append((0, xs[piece.source], piece))
    for edge in graph.back:
        leaving.setdefault(edge.source, []).append((1, -lanes[id(edge)], edge))
        entering.setdefault(edge.target, []).append((1, -lanes[id(edge)], edge))
    out_ports = _spread(leaving, xs, graph.widths)
    in_ports = _spread(entering, xs, graph.widths)
    for piece in graph.pieces:  # a lone piece between two boxes goes straight down when both allow it
        sx, target = out_ports[id(piece)], piece.target
        alone = len(leaving[piece.source]) == 1 and len(entering[target]) == 1
        if alone and not is_dummy(target) and xs[target] < sx < xs[target] + graph.widths[target] - 1:
            in_ports[id(piece)] = sx
    return out_ports, in_ports


def _spread(ends: dict[str, list], xs: dict[str, int], widths: dict[str, int]) -> dict[int, int]:
    ports = {}
    for name, items in ends.items():
        items.sort(key=lambda item: item[:2])
        width = 1 if is_dummy(name) else widths[name]
        for index, (_, _, item) in enumerate(items):
            ports[id(item)] = xs[name] if is_dummy(name) else xs[name] + (width * (index + 1)) // (len(items) + 1)
    return ports


def _channels(graph: Graph, layers, out_ports, in_ports, lanes) -> list[list[Run]]:
    """The runs of each channel (below layer i), in the row order that avoids crossings."""
    channels: list[list[Run]] = [[] for _ in layers]
    for piece in graph.pieces:
        sx, tx = out_ports[id(piece)], in_ports[id(piece)]
        if sx != tx:
            channels[graph.layer_of[piece.source]].append(Run((id(piece), "piece"), min(sx, tx), max(sx, tx), (sx,), (tx,)))
    for edge in graph.back:
        lane, sx, tx = lanes[id(edge)], out_ports[id(edge)], in_ports[id(edge)]
        channels[graph.layer_of[edge.source]].append(Run((id(edge), "out"), sx, lane, (sx, lane), ()))
        channels[graph.layer_of[edge.target] - 1].append(Run((id(edge), "in"), tx, lane, (), (lane, tx)))
    return [_row_order(runs) for runs in channels]


def _row_order(runs: list[Run]) -> list[Run]:
    """A vertical that meets a run from above must turn above any run it would cross, one that
    meets it from below, below: a topological order of those constraints (a cycle, which no
    order can satisfy, is broken at the run with the fewest constraints against it)."""
    above: dict[int, set[int]] = {i: set() for i in range(len(runs))}  # i -> runs that must be above i
    for i, run in enumerate(runs):
        for j, other in enumerate(runs):
            if i != j:
                if any(other.left < x < other.right for x in run.up):
                    above[j].add(i)
                if any(other.left < x < other.right for x in run.down):
                    above[i].add(j)
    order: list[int] = []
    left = set(range(len(runs)))
    while left:
        ready = [i for i in sorted(left) if not (above[i] & left)] or [min(sorted(left), key=lambda i: len(above[i] & left))]
        order.append(ready[0])
        left.remove(ready[0])
    return [runs[i] for i in order]


def _tops(channels: list[list[Run]]) -> list[int]:
    """The top row of each layer: a box, then its channel (a row for each run), then the arrows."""
    tops, y = [], 0
    for runs in channels:
        tops.append(y)
        y += BOX_HEIGHT + max(1, len(runs)) + 2
    return tops


def _draw_pieces(canvas: Canvas, graph: Graph, xs, tops, out_ports, in_ports, rows) -> None:
    numbers = {id(edge): number for number, edge in enumerate(graph.edges)}
    for piece in graph.pieces:
        canvas.pen = numbers[id(piece.edge)]
        sx, tx = out_ports[id(piece)], in_ports[id(piece)]
        source_bottom = tops[graph.layer_of[piece.source]] + (BOX_HEIGHT - 1 if is_dummy(piece.source) else BOX_HEIGHT)
        target_top = tops[graph.layer_of[piece.target]]
        turn = rows.get((id(piece), "piece"), source_bottom + 1)
        canvas.vline(sx, source_bottom, turn)
        canvas.hline(turn, sx, tx)
        if is_dummy(piece.target):
            canvas.vline(tx, turn, target_top + BOX_HEIGHT - 1)  # straight through the slot
        else:
            canvas.vline(tx, turn, target_top - 1)
            canvas.put(tx, target_top - 1, "▼", "arrow")


def _draw_back(canvas: Canvas, graph: Graph, xs, tops, out_ports, in_ports, rows, lanes) -> None:
    numbers = {id(edge): number for number, edge in enumerate(graph.edges)}
    for edge in graph.back:
        canvas.pen = numbers[id(edge)]
        lane, sx, tx = lanes[id(edge)], out_ports[id(edge)], in_ports[id(edge)]
        exit_row, entry_row = rows[(id(edge), "out")], rows[(id(edge), "in")]
        target_top = tops[graph.layer_of[edge.target]]
        canvas.vline(sx, tops[graph.layer_of[edge.source]] + BOX_HEIGHT, exit_row)
        canvas.hline(exit_row, sx, lane)
        canvas.vline(lane, entry_row, exit_row)
        canvas.hline(entry_row, tx, lane)
        canvas.vline(tx, entry_row, target_top - 1)
        canvas.put(tx, target_top - 1, "▼", "arrow")


def _draw_labels(canvas: Canvas, graph: Graph, xs, tops, out_ports, in_ports, rows, lanes) -> None:
    """Each label beside one of its edge's own lines: beside its slot when it passes a layer,
    beside its lane when it loops, else beside the line out of its source or into its target."""
    for number, edge in enumerate(graph.edges):
        if not edge.label:
            continue
        canvas.pen = number
        slot = next((dummy for dummy, owner in graph.beside.items() if owner is edge), None)
        if slot is not None:
            canvas.put(xs[slot] + 2, tops[graph.layer_of[slot]] + 1, edge.label, "label")
            continue
        spots = _lane_spots(edge, lanes, rows) if edge.back else _piece_spots(graph, edge, tops, out_ports, in_ports, rows)
        _put_label(canvas, spots, edge.label, number)


def _lane_spots(edge: Edge, lanes, rows) -> list[tuple[int, int]]:
    lane, top, bottom = lanes[id(edge)], rows[(id(edge), "in")], rows[(id(edge), "out")]
    middle = (top + bottom) // 2
    return [(lane + 2, row) for row in sorted(range(top + 1, bottom), key=lambda row: abs(row - middle))]


def _piece_spots(graph: Graph, edge: Edge, tops, out_ports, in_ports, rows) -> list[tuple[int, int]]:
    """Beside the line into the target, then beside the line out of the source, then above or
    below the turn between them."""
    piece = next(p for p in graph.pieces if p.edge is edge and p.source == edge.source)
    sx, tx = out_ports[id(piece)], in_ports[id(piece)]
    bottom = tops[graph.layer_of[piece.source]] + BOX_HEIGHT
    turn = rows.get((id(piece), "piece"), bottom + 1)
    arrow = tops[graph.layer_of[piece.target]] - 1
    length = len(edge.label)
    spots = []
    for x, span in ((tx, range(turn, arrow)), (sx, range(bottom, turn + 1))):
        for row in span:
            spots += [(x + 2, row), (x - length - 1, row)]
    for row in (turn - 1, turn + 1):
        spots += [(x, row) for x in range(min(sx, tx) - length, max(sx, tx) + 2)]
    return spots


def _put_label(canvas: Canvas, spots: list[tuple[int, int]], label: str, number: int) -> None:
    """At the first spot clear of lines, boxes and labels (one column of air each side); with none
    clear, beside the nearest of the edge's own cells that has room."""
    for x, y in spots:
        if canvas.free(x - 1, y, len(label) + 2):
            canvas.put(x, y, label, "label")
            return
    own = sorted(cell for cell, owner in canvas.owners.items() if owner == number and cell in canvas.lines)
    for cx, cy in own:
        for x in (cx + 2, cx - len(label) - 1):
            if canvas.free(x - 1, cy, len(label) + 2):
                canvas.put(x, cy, label, "label")
                return
    x, y = spots[0] if spots else (canvas.width + 2, 0)
    canvas.put(x, y, label, "label")


def _far_labels(canvas: Canvas) -> int:
    """How many labels have no cell of their own edge's lines within two columns or one row."""
    far = 0
    for number in canvas.coloured:
        cells = [cell for cell, owner in canvas.owners.items() if owner == number and canvas.kinds.get(cell) == "label"]
        lines = {cell for cell, owner in canvas.owners.items() if owner == number and cell in canvas.lines}
        near = any((x + dx, y + dy) in lines for x, y in cells for dx in (-2, -1, 0, 1, 2) for dy in (-1, 0, 1))
        far += not near
    return far


def _draw_box(canvas: Canvas, name: str, x: int, y: int, width: int) -> None:
    kind = "terminal" if name in (START, END) else "box"
    bottom = "".join("┬" if canvas.lines.get((px, y + BOX_HEIGHT), 0) & S else "─" for px in range(x + 1, x + width - 1))
    canvas.put(x, y, "┌" + "─" * (width - 2) + "┐", kind)
    canvas.put(x, y + 1, "│ " + name + " │", kind)
    canvas.put(x, y + 2, "└" + bottom + "┘", kind)


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
