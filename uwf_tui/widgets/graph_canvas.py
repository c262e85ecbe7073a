"""A layered workflow graph drawn on a character canvas (graph_layout.py chooses the layers and
the order of each): the boxes, the forward pieces through the channels between layers, the loops
in their lanes on the right, and each edge's label beside one of its own lines. Pure: text in,
text out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from uwf_core.api import END, START

N, S, E, W = 1, 2, 4, 8
LINE_CHARS = {
    N | S: "│", E | W: "─", S | E: "┌", S | W: "┐", N | E: "└", N | W: "┘",
    N | S | E: "├", N | S | W: "┤", E | W | S: "┬", E | W | N: "┴", N | S | E | W: "┼",
    N: "│", S: "│", E: "─", W: "─",
}
BOX_HEIGHT = 3
GAP = 4
LANE_GAP = 6


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


@dataclass
class Graph:
    layers: list[list[str]]
    layer_of: dict[str, int]
    pieces: list[Piece]
    back: list[Edge]
    edges: list[Edge]
    widths: dict[str, int]
    beside: dict[str, Edge] = field(default_factory=dict)  # dummy -> the labelled edge whose label sits beside it


def is_dummy(name: str) -> bool:
    return name.startswith("\0")


def draw(graph: Graph, layers: list[list[str]]) -> Canvas:
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


def far_labels(canvas: Canvas) -> int:
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
