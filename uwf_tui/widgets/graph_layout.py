"""Draw a workflow graph in the terminal: a layered layout, top to bottom.

Roles are boxes in layers (longest path from $START over forward edges);
edges between adjacent layers run through a channel below each layer, one
row per edge; loops (edges back up, like reviewer → developer) and edges
that skip layers run in lanes on the right. Every edge carries its label
(condition name, `otherwise`, or `$status=...`). Pure: text in, text out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from uwf_core.api import END, START, Workflow, workflow_edges

N, S, E, W = 1, 2, 4, 8
LINE_CHARS = {
    N | S: "│", E | W: "─", S | E: "┌", S | W: "┐", N | E: "└", N | W: "┘",
    N | S | E: "├", N | S | W: "┤", E | W | S: "┬", E | W | N: "┴", N | S | E | W: "┼",
    N: "│", S: "│", E: "─", W: "─",
}
BOX_HEIGHT = 3
GAP = 4
EDGE_COLOURS = ["yellow", "green", "bright_blue", "magenta", "dark_orange", "bright_cyan", "orchid", "chartreuse3"]


@dataclass
class Edge:
    source: str
    target: str
    label: str
    back: bool = False


@dataclass
class Canvas:
    width: int
    height: int
    lines: dict[tuple[int, int], int] = field(default_factory=dict)
    text: dict[tuple[int, int], str] = field(default_factory=dict)
    kinds: dict[tuple[int, int], str] = field(default_factory=dict)  # for colouring: box, label, arrow
    owners: dict[tuple[int, int], int] = field(default_factory=dict)  # line or label cell -> its edge's number
    pen: int | None = None  # the edge being drawn: its lines, label and arrow share a colour

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

    def put_free(self, spots: list[tuple[int, int]], value: str, kind: str = "label") -> None:
        """Write a label at the first spot where it covers no line, box or other label."""
        for x, y in spots:
            if self.free(x - 1, y, len(value) + 2):
                self.put(x, y, value, kind)
                return
        x, y = spots[0]
        self.put(x, y, value, kind)

    def link(self, x: int, y: int, bits: int) -> None:
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


def _order(layers: list[list[str]], edges: list[Edge]) -> None:
    """One barycenter pass downwards: place nodes under their parents."""
    for index in range(1, len(layers)):
        above = {name: position for position, name in enumerate(layers[index - 1])}

        def center(name: str) -> float:
            parents = [above[e.source] for e in edges if e.target == name and e.source in above and not e.back]
            return sum(parents) / len(parents) if parents else len(above)

        layers[index].sort(key=center)


def layout(workflow: Workflow) -> Canvas:
    edges = _edges(workflow)
    layer_of = assign_layers(workflow, edges)
    count = max(layer_of.values()) + 1
    layers: list[list[str]] = [[] for _ in range(count)]
    for name in [START, *workflow.roles, END]:
        if name in layer_of:
            layers[layer_of[name]].append(name)
    _order(layers, edges)
    adjacent = [e for e in edges if not e.back and layer_of[e.target] == layer_of[e.source] + 1]
    laned = [e for e in edges if e not in adjacent]
    # The channel below layer i holds, one row each: its adjacent edges, the lanes
    # leaving it, the lanes entering layer i + 1; then the arrow row.
    rows_out = [[e for e in adjacent if layer_of[e.source] == i] + [e for e in laned if layer_of[e.source] == i] for i in range(count)]
    rows_in = [[e for e in laned if layer_of[e.target] == i + 1] for i in range(count)]
    margin = min(24, max([len(e.label) + 3 for e in adjacent if e.label] or [0]))  # room for labels on the left
    boxes, channel_top, total, height = _place(layers, margin, [len(rows_out[i]) + len(rows_in[i]) for i in range(count)])
    canvas = Canvas(total, height)
    turn_row = _turn_rows(channel_top, rows_out, rows_in)
    labelled = _draw_edges(canvas, edges, adjacent, boxes, turn_row, lane_x=total + 2)
    _place_labels(canvas, edges, labelled)
    canvas.pen = None
    for name, (x, y, width) in boxes.items():
        _draw_box(canvas, name, x, y, width)
    return canvas


def _place(layers: list[list[str]], margin: int, channel_rows: list[int]):
    """Boxes centred in their layer's row, each layer followed by its edge channel: the boxes
    (x, y, width), the top row of each channel, the canvas width and height."""
    widths = {name: len(name) + 4 for layer in layers for name in layer}
    row_widths = [sum(widths[n] for n in layer) + GAP * (len(layer) - 1) for layer in layers]
    total = (max(row_widths) if row_widths else 0) + margin
    boxes: dict[str, tuple[int, int, int]] = {}
    channel_top: list[int] = []
    y = 0
    for index, layer in enumerate(layers):
        x = margin + (total - margin - row_widths[index]) // 2
        for name in layer:
            boxes[name] = (x, y, widths[name])
            x += widths[name] + GAP
        channel_top.append(y + BOX_HEIGHT)
        y += BOX_HEIGHT + max(1, channel_rows[index]) + 2
    return boxes, channel_top, total, y


def _turn_rows(channel_top: list[int], rows_out: list[list[Edge]], rows_in: list[list[Edge]]) -> dict[tuple[int, str], int]:
    """The channel row where each edge turns: ("out", …) below its source, ("in", …) above its
    target for a lane; keyed by (id(edge), way)."""
    rows: dict[tuple[int, str], int] = {}
    for index, top in enumerate(channel_top):
        turn = top + 1
        for way, edges in (("out", rows_out[index]), ("in", rows_in[index])):
            for edge in edges:
                rows[(id(edge), way)] = turn
                turn += 1
    return rows


def _draw_edges(canvas: Canvas, edges: list[Edge], adjacent: list[Edge], boxes, turn_row, lane_x: int) -> list[tuple]:
    """Adjacent edges go straight through their channel; the others take a lane on the right.
    Each labelled edge has a pen (colour) of its own; returns the adjacent ones still to label."""
    out_ports, in_ports = _assign_ports(edges, boxes, adjacent)
    labelled: list[tuple[Edge, int, int, int, int]] = []
    for number, edge in enumerate(edges):
        canvas.pen = number if edge.label else None
        sx, turn = out_ports[id(edge)], turn_row[(id(edge), "out")]
        tx, target_y = in_ports[id(edge)], boxes[edge.target][1]
        canvas.vline(sx, boxes[edge.source][1] + BOX_HEIGHT, turn)
        if edge in adjacent:
            canvas.hline(turn, sx, tx)
            canvas.vline(tx, turn, target_y - 1)
            if edge.label:
                labelled.append((edge, sx, tx, turn, target_y))
        else:
            entry = turn_row[(id(edge), "in")]
            canvas.hline(turn, sx, lane_x)
            canvas.vline(lane_x, turn, entry)
            canvas.hline(entry, tx, lane_x)
            canvas.vline(tx, entry, target_y - 1)
            if edge.label:
                canvas.put(lane_x + 2, (turn + entry) // 2, edge.label, "label")
            lane_x += max(6, len(edge.label) + 4)
        canvas.put(tx, target_y - 1, "▼", "arrow")
    return labelled


def _place_labels(canvas: Canvas, edges: list[Edge], labelled: list[tuple]) -> None:
    """Beside the segment into the target, else beside the one out of the source, else further right."""
    for edge, sx, tx, turn, target_y in labelled:
        canvas.pen = edges.index(edge)
        rows = list(range(turn, target_y - 1)) + [turn - 1]
        spots = [(tx + 2, row) for row in rows] + [(tx - len(edge.label) - 1, row) for row in rows]
        spots += [(sx + 2, row) for row in rows] + [(sx - len(edge.label) - 1, row) for row in rows]
        spots += [(x, row) for row in rows for x in range(max(sx, tx) + 3, canvas.width + 2)]
        canvas.put_free(spots, edge.label)


def _assign_ports(edges: list[Edge], boxes, adjacent: list[Edge]) -> tuple[dict[int, int], dict[int, int]]:
    """x of each edge's exit (box bottom) and entry (box top); lanes take the right-most ports,
    and a lone edge between two boxes goes straight down when both boxes allow it."""
    outgoing: dict[str, list[Edge]] = {}
    incoming: dict[str, list[Edge]] = {}
    for edge in edges:
        outgoing.setdefault(edge.source, []).append(edge)
        incoming.setdefault(edge.target, []).append(edge)
    key = lambda e, end: (e not in adjacent, boxes[end][0])  # noqa: E731
    out_ports, in_ports = {}, {}
    for name, items in outgoing.items():
        items.sort(key=lambda e: key(e, e.target))
        x, _, width = boxes[name]
        for edge, port in zip(items, _ports(x, width, len(items))):
            out_ports[id(edge)] = port
    for name, items in incoming.items():
        items.sort(key=lambda e: key(e, e.source))
        x, _, width = boxes[name]
        for edge, port in zip(items, _ports(x, width, len(items))):
            in_ports[id(edge)] = port
    for edge in adjacent:
        if len(outgoing[edge.source]) == 1 and len(incoming[edge.target]) == 1:
            tx, _, tw = boxes[edge.target]
            if tx < out_ports[id(edge)] < tx + tw - 1:
                in_ports[id(edge)] = out_ports[id(edge)]
    return out_ports, in_ports


def _ports(x: int, width: int, count: int) -> list[int]:
    return [x + (width * (i + 1)) // (count + 1) for i in range(count)]


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
    rows = layout(workflow).cells()
    while rows and all(char == " " for char, _, _ in rows[-1]):
        rows.pop()
    for index, row in enumerate(rows):
        if index:
            text.append("\n")
        while row and row[-1][0] == " ":
            row.pop()
        for char, kind, owner in row:
            if owner is not None and kind in ("line", "label", "arrow"):
                colour = EDGE_COLOURS[owner % len(EDGE_COLOURS)]
                text.append(char, f"bold {colour}" if kind != "line" else colour)
            else:
                text.append(char, styles.get(kind, ""))
    return text
