"""Placement on a grid of typed sites: problem, decision and the scalar objective (shared by every target).

Items (typed, with a resource demand vector and a work amount) go onto sites (typed, with a capacity
vector and optional grid coordinates). Nets carry traffic from one source item to one or more sink
items. The cost of a placement is traffic × distance, plus optional load-balance and link-load terms:

``distance(s, t)``
    0 when ``s == t``; otherwise ``distances[s][t]`` when an explicit table is given, else
    ``hop_offset + |row_s − row_t| + |col_s − col_t|`` (Manhattan hops on the grid; ``hop_offset``
    counts e.g. the router of a concentrated mesh that two tiles on the same router still cross),
    else ``hop_offset`` alone when sites have no coordinates (uniform distance: the model becomes
    capacity-limited min-cut partitioning).

``broadcast``
    ``per_site`` (default): one message per *distinct* destination site of a net — a value sent to a
    site is shared by all sinks there (PUMA: one send/receive per destination tile, seed 003 L183).
    With uniform distance this is the (λ−1) connectivity metric of hypergraph partitioning.
    ``per_sink``: one message per sink.
    ``tree``: a net is one broadcast tree; its length is the half-perimeter of the bounding box of its
    terminals' sites (HPWL), the length of the minimum rectilinear Steiner tree for up to three distinct
    sites and a lower bound on it beyond (Plasticine's routed broadcast trees, seed 004 L312, L320).
    Needs grid coordinates; ``hop_offset`` and the link-load term do not apply.

``objective = traffic + balance_weight · max_site_work + link_weight · max_link_load``
    ``traffic`` = Σ_nets weight × Σ_messages distance (hop-weighted bytes when weights are bytes);
    ``max_site_work`` = max over sites of Σ work of its items; ``max_link_load`` = max over directed
    grid links of the weight routed over it with dimension-ordered XY routing (first along the row to
    the destination column, then along the column).

The checker (:mod:`solvermap.hardware.checks.placement`) and the baselines score decisions with
:func:`objective`; the formulation (:mod:`solvermap.formulations.placement`) builds the model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Item:
    name: str
    demand: Mapping[str, float] = field(default_factory=dict)  # resource → amount used
    type: str = ""  # must be accepted by the site ("" = any site that accepts any type)
    work: float = 0.0  # load counted by the balance term


@dataclass(frozen=True)
class Site:
    name: str
    capacity: Mapping[str, float] = field(default_factory=dict)  # resource → limit (missing = 0)
    coord: tuple[int, int] | None = None  # (row, col) on the grid
    types: tuple[str, ...] = ()  # item types accepted; () accepts items of type "" only


@dataclass(frozen=True)
class Net:
    source: str
    sinks: tuple[str, ...]
    weight: float  # traffic per use (bytes per inference for PUMA)
    name: str = ""


@dataclass(frozen=True)
class PlacementProblem:
    items: tuple[Item, ...]
    sites: tuple[Site, ...]
    nets: tuple[Net, ...]
    hop_offset: float = 0.0
    distances: tuple[tuple[float, ...], ...] | None = None  # explicit site × site table (overrides coords)
    broadcast: str = "per_site"  # "per_site" | "per_sink" | "tree"
    balance_weight: float = 0.0
    link_weight: float = 0.0
    fixed: Mapping[str, str] = field(default_factory=dict)  # item → site
    symmetric_sites: bool = False  # sites interchangeable: the model may break the symmetry
    name: str = "placement"

    def site_index(self) -> dict[str, int]:
        return {s.name: k for k, s in enumerate(self.sites)}

    def item_index(self) -> dict[str, int]:
        return {it.name: k for k, it in enumerate(self.items)}

    def resources(self) -> list[str]:
        names: set[str] = set()
        for it in self.items:
            names.update(r for r, v in it.demand.items() if v)
        return sorted(names)

    def compatible(self, item: Item, site: Site) -> bool:
        if item.name in self.fixed:
            return self.fixed[item.name] == site.name
        return (item.type in site.types) if site.types else item.type == ""

    def has_grid(self) -> bool:
        return self.distances is None and all(s.coord is not None for s in self.sites)


@dataclass(frozen=True)
class Placement:
    """The decision: every item's site."""

    assignment: Mapping[str, str]

    def to_json(self) -> dict[str, str]:
        return dict(sorted(self.assignment.items()))


# --------------------------------------------------------------------------- scoring


def distance(problem: PlacementProblem, s: int, t: int) -> float:
    """Distance between sites by index (see module docstring)."""
    if s == t:
        return 0.0
    if problem.distances is not None:
        return float(problem.distances[s][t])
    a, b = problem.sites[s].coord, problem.sites[t].coord
    if a is None or b is None:
        return float(problem.hop_offset)
    return float(problem.hop_offset + abs(a[0] - b[0]) + abs(a[1] - b[1]))


def messages(problem: PlacementProblem, placement: Placement) -> list[tuple[int, int, int]]:
    """(net index, source site, destination site) of every message, destination ≠ source site."""
    index = problem.site_index()
    out = []
    for n, net in enumerate(problem.nets):
        src = index[placement.assignment[net.source]]
        dests = [index[placement.assignment[j]] for j in net.sinks]
        if problem.broadcast == "per_site":
            dests = sorted(set(dests))
        out.extend((n, src, d) for d in dests if d != src)
    return out


def tree_length(problem: PlacementProblem, placement: Placement, net: Net) -> float:
    """Half-perimeter of the bounding box of the net's terminal sites (``broadcast='tree'``)."""
    index = problem.site_index()
    coords = [problem.sites[index[placement.assignment[m]]].coord for m in (net.source, *net.sinks)]
    rows = [c[0] for c in coords]
    cols = [c[1] for c in coords]
    return float(max(rows) - min(rows) + max(cols) - min(cols))


def traffic(problem: PlacementProblem, placement: Placement) -> float:
    if problem.broadcast == "tree":
        return sum(net.weight * tree_length(problem, placement, net) for net in problem.nets if net.sinks)
    return sum(problem.nets[n].weight * distance(problem, s, t) for n, s, t in messages(problem, placement))


def site_work(problem: PlacementProblem, placement: Placement) -> dict[str, float]:
    work = {s.name: 0.0 for s in problem.sites}
    for it in problem.items:
        work[placement.assignment[it.name]] += it.work
    return work


def xy_route(a: tuple[int, int], b: tuple[int, int]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Directed grid links of the XY route from ``a`` to ``b``: along the row first, then the column."""
    links = []
    row, col = a
    step = 1 if b[1] > col else -1
    while col != b[1]:
        links.append(((row, col), (row, col + step)))
        col += step
    step = 1 if b[0] > row else -1
    while row != b[0]:
        links.append(((row, col), (row + step, col)))
        row += step
    return links


def link_loads(problem: PlacementProblem, placement: Placement) -> dict[tuple[tuple[int, int], tuple[int, int]], float]:
    loads: dict[tuple[tuple[int, int], tuple[int, int]], float] = {}
    if not problem.has_grid():
        return loads
    for n, s, t in messages(problem, placement):
        for link in xy_route(problem.sites[s].coord, problem.sites[t].coord):
            loads[link] = loads.get(link, 0.0) + problem.nets[n].weight
    return loads


def max_link_load(problem: PlacementProblem, placement: Placement) -> float:
    return max(link_loads(problem, placement).values(), default=0.0)


def objective(problem: PlacementProblem, placement: Placement) -> float:
    value = traffic(problem, placement)
    if problem.balance_weight:
        value += problem.balance_weight * max(site_work(problem, placement).values(), default=0.0)
    if problem.link_weight and problem.broadcast != "tree":
        value += problem.link_weight * max_link_load(problem, placement)
    return value


def combinatorial_bound(problem: PlacementProblem) -> float:
    """A cheap valid lower bound on ``traffic``: a net whose items need more than one site's capacity
    reaches at least ⌈demand / largest capacity⌉ − 1 foreign sites, each at least the smallest
    positive distance away (per_site broadcast; per_sink counts the same sites at least once). For
    ``tree`` nets, k distinct sites on a grid with unit pitch span a box with (w+1)(h+1) ≥ k, so the
    half-perimeter w + h ≥ ⌈2√k⌉ − 2."""
    if not problem.sites or not problem.nets:
        return 0.0
    n_sites = len(problem.sites)
    dmin = min((distance(problem, s, t) for s in range(n_sites) for t in range(n_sites) if s != t), default=0.0)
    if dmin <= 0:
        return 0.0
    items = {it.name: it for it in problem.items}
    bound = 0.0
    for net in problem.nets:
        members = {net.source, *net.sinks}
        need = 1
        for r in problem.resources():
            cap = max((s.capacity.get(r, 0.0) for s in problem.sites), default=0.0)
            total = sum(items[m].demand.get(r, 0.0) for m in members)
            if cap > 0 and total > 0:
                need = max(need, math.ceil(total / cap - 1e-9))
        if problem.broadcast == "tree":
            bound += net.weight * max(0, math.ceil(2 * math.sqrt(need) - 1e-9) - 2)
        else:
            bound += net.weight * dmin * (need - 1)
    return bound
