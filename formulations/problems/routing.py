"""Routing of logical links on the Plasticine mesh: problem, decision, tree utilities and objective.

Terms (seed 004 §3.3.2, L300–320)

mesh            one switch (static network) and one router (dynamic network) per end-point site, on a
                ``rows × cols`` 2-D mesh; a *link* is a directed pair of adjacent nodes ``((r, c), (r', c'))``.
logical link    one produced value and all its consumers (a broadcast group, ``ir/graph.py``): a *net*
                here, with a source node, its distinct sink nodes (≠ source) and a class (``vector`` 512-bit
                or ``scalar`` 32-bit; 1-bit tokens travel as scalars).
route           a tree of links from the source to every sink (a broadcast is one tree; on the dynamic
                network a packet is duplicated where the tree branches, L312).
static network  circuit-switched: each of the ``static_capacity[class]`` tracks of a link carries one
                logical link for the whole program (L302); ``tracks`` names the track a net uses.
dynamic network routers shared by many logical links; ``dynamic_capacity`` caps the number of logical paths
                on one link (each needs its own VC there, L316), None = unlimited.

Objective (shared by the formulation, the baselines and the checker): Σ_n weight_n × |tree_n|, the
activation-weighted hop count of L447 (weights carry a small floor so idle links still take short
routes).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

Node = tuple[int, int]
Link = tuple[Node, Node]

STATIC, DYNAMIC = "static", "dynamic"


@dataclass(frozen=True)
class Mesh:
    rows: int
    cols: int

    def contains(self, node: Node) -> bool:
        return 0 <= node[0] < self.rows and 0 <= node[1] < self.cols

    def nodes(self) -> list[Node]:
        return [(r, c) for r in range(self.rows) for c in range(self.cols)]

    def neighbours(self, node: Node) -> list[Node]:
        r, c = node
        out = [(r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)]
        return [n for n in out if self.contains(n)]

    def links(self) -> list[Link]:
        return [(a, b) for a in self.nodes() for b in self.neighbours(a)]

    def is_link(self, link: Link) -> bool:
        a, b = link
        return self.contains(a) and self.contains(b) and abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1


@dataclass(frozen=True)
class RouteNet:
    name: str
    source: Node
    sinks: tuple[Node, ...]  # distinct, none equal to the source
    kind: str = "vector"  # "vector" | "scalar"
    weight: float = 1.0  # cost per hop (activation + floor)
    network: str = STATIC  # "static" | "dynamic"
    importance: float = 0.0  # activation × fanout (the hybrid split's priority, L320)

    def terminals(self) -> tuple[Node, ...]:
        return (self.source, *self.sinks)


@dataclass(frozen=True)
class RoutingProblem:
    mesh: Mesh
    nets: tuple[RouteNet, ...]
    static_capacity: Mapping[str, int] = field(default_factory=lambda: {"vector": 1, "scalar": 4})
    dynamic_capacity: int | None = None
    margin: int = 2  # the model routes each net inside its terminals' bounding box grown by ``margin``
    name: str = "routing"

    def net(self, name: str) -> RouteNet:
        return next(n for n in self.nets if n.name == name)

    def region(self, net: RouteNet, margin: int | None = None) -> set[Node]:
        return region(self.mesh, net, self.margin if margin is None else margin)


@dataclass(frozen=True)
class Routes:
    """The decision: every net's tree (directed links) and, for static nets, the track of each link."""

    trees: Mapping[str, tuple[Link, ...]]
    tracks: Mapping[tuple[str, Link], int] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"trees": {n: [list(map(list, link)) for link in t] for n, t in sorted(self.trees.items())},
                "tracks": {f"{n}|{a[0]},{a[1]}>{b[0]},{b[1]}": k for (n, (a, b)), k in sorted(self.tracks.items())}}


# --------------------------------------------------------------------------- trees


def region(mesh: Mesh, net: RouteNet, margin: int) -> set[Node]:
    rows = [t[0] for t in net.terminals()]
    cols = [t[1] for t in net.terminals()]
    r0, r1 = max(0, min(rows) - margin), min(mesh.rows - 1, max(rows) + margin)
    c0, c1 = max(0, min(cols) - margin), min(mesh.cols - 1, max(cols) + margin)
    return {(r, c) for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)}


def children(tree: Iterable[Link]) -> dict[Node, list[Node]]:
    out: dict[Node, list[Node]] = {}
    for a, b in tree:
        out.setdefault(a, []).append(b)
    return out


def sink_depths(tree: Iterable[Link], source: Node) -> dict[Node, int]:
    """Hops from the source to every node the tree reaches (BFS over the tree's links)."""
    kids = children(tree)
    depth = {source: 0}
    queue = deque([source])
    while queue:
        a = queue.popleft()
        for b in kids.get(a, []):
            if b not in depth:
                depth[b] = depth[a] + 1
                queue.append(b)
    return depth


def prune(tree: Iterable[Link], source: Node, sinks: Iterable[Node]) -> tuple[Link, ...]:
    """The arborescence of links reached from the source (first parent wins) with non-sink leaves cut."""
    kids = children(sorted(set(tree)))
    parent: dict[Node, Node] = {}
    seen = {source}
    queue = deque([source])
    order = []
    while queue:
        a = queue.popleft()
        order.append(a)
        for b in kids.get(a, []):
            if b not in seen:
                seen.add(b)
                parent[b] = a
                queue.append(b)
    keep: set[Node] = set()
    for s in sinks:
        node = s
        while node in parent and node not in keep:
            keep.add(node)
            node = parent[node]
    return tuple(sorted((parent[b], b) for b in keep))


def path_links(path: list[Node]) -> list[Link]:
    return [(path[k], path[k + 1]) for k in range(len(path) - 1)]


def xy_path(a: Node, b: Node, *, column_first: bool = False) -> list[Node]:
    """Dimension-ordered path: along the row first (XY), or along the column first (YX)."""
    path = [a]
    r, c = a
    order = ("col", "row") if not column_first else ("row", "col")
    for axis in order:
        if axis == "col":
            while c != b[1]:
                c += 1 if b[1] > c else -1
                path.append((r, c))
        else:
            while r != b[0]:
                r += 1 if b[0] > r else -1
                path.append((r, c))
    return path


def xy_tree(net: RouteNet, *, column_first: bool = False) -> tuple[Link, ...]:
    """Union of the dimension-ordered paths to every sink (a tree: XY paths from one source never
    rejoin after splitting)."""
    links: set[Link] = set()
    for s in net.sinks:
        links.update(path_links(xy_path(net.source, s, column_first=column_first)))
    return prune(links, net.source, net.sinks)


def steiner_lower_bound(net: RouteNet) -> int:
    """Half-perimeter of the terminals' bounding box: no tree reaching every sink is shorter."""
    rows = [t[0] for t in net.terminals()]
    cols = [t[1] for t in net.terminals()]
    return max(rows) - min(rows) + max(cols) - min(cols)


# --------------------------------------------------------------------------- scoring


def hops(routes: Routes, name: str) -> int:
    return len(routes.trees.get(name, ()))


def objective(problem: RoutingProblem, routes: Routes) -> float:
    return float(sum(n.weight * hops(routes, n.name) for n in problem.nets))


def lower_bound(problem: RoutingProblem) -> float:
    """Σ weight × half-perimeter: valid for any route on the whole mesh (not only the model's region)."""
    return float(sum(n.weight * steiner_lower_bound(n) for n in problem.nets))


def link_use(problem: RoutingProblem, routes: Routes, network: str) -> dict[tuple[str, Link], list[str]]:
    """(class, link) → nets using it on ``network`` (class ``any`` for the dynamic network)."""
    out: dict[tuple[str, Link], list[str]] = {}
    for n in problem.nets:
        if n.network != network:
            continue
        cls = n.kind if network == STATIC else "any"
        for link in routes.trees.get(n.name, ()):
            out.setdefault((cls, link), []).append(n.name)
    return out


def max_dynamic_load(problem: RoutingProblem, routes: Routes) -> int:
    return max((len(v) for v in link_use(problem, routes, DYNAMIC).values()), default=0)


def assign_tracks(problem: RoutingProblem, trees: Mapping[str, tuple[Link, ...]]) -> dict[tuple[str, Link], int]:
    """First-fit track per (static net, link): tracks of a link are interchangeable (full crossbar)."""
    used: dict[tuple[str, Link], int] = {}
    tracks: dict[tuple[str, Link], int] = {}
    for n in problem.nets:
        if n.network != STATIC:
            continue
        for link in trees.get(n.name, ()):
            k = used.get((n.kind, link), 0)
            used[(n.kind, link)] = k + 1
            tracks[(n.name, link)] = k
    return tracks


def hop_weight(activation: float, floor: float = 0.01) -> float:
    """Routing weight of a logical link: its activation plus a floor (documented in the module)."""
    return round(max(0.0, activation) + floor, 6)

