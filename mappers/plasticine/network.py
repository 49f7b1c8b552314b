"""Plasticine network decisions (seed 004 §3.3, L255–449): place → split → route → vc, their problem
adapters and the seed-style baselines.

Flow (after ``merge``; ``ctx.state["merge"]`` holds the VB → PB assignment):

place   decision  PBs onto the typed sites of the array (PCU/PMU checkerboard, DAG columns on the two
                  sides, L251, L489) on the shared placement model (formulations/placement.py,
                  ``broadcast='tree'``): minimise Σ activation × tree length of the logical links (a
                  broadcast pays for its tree once, L320); baselines: greedy constructive, simulated annealing.
split   decision  hybrid split (formulations/link_split.py): which logical links ride the static network,
                  maximising activation × fanout carried statically within the tracks; baseline: the
                  seed's greedy rule (L320) and all-dynamic. On a static target every link must be static
                  (a routability check: S-x1 fails for some apps, L443); on a dynamic one nothing is.
route   decision  trees for every logical link (formulations/routing.py): static tracks exclusive (L302),
                  dynamic paths ≤ v# per link (L316); minimise activation-weighted hops (L447);
                  baselines: greedy Steiner (capacity-aware), XY trees.
vc      decision  VC allocation on the dynamic trees (formulations/vc_allocation.py): objective = VCs,
                  bound = largest number of distinct paths on a link; ``decisions.vc.mode`` per_hop
                  (default; the table gives the next VC, L324) | per_path; ``decisions.vc.joint`` lets it
                  pick among ``decisions.vc.candidates`` trees (L433); baseline: greedy colouring.

Terms: a *logical link* is one produced value and its consumers (a broadcast group) between PBs; links
inside one PB and links to the host are not routed (assumption NT11: the host link is off-array).
Activation = the producer's tokens / the cycles of the analytic estimate (L281: the compiler knows it
statically). The end-to-end validation couples the NoC simulator with the dataflow units
(:mod:`solvermap.hardware.plasticine.noc_sim`) and the network area / energy model (Eq 3.1/3.2).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from solvermap.errors import ConfigError, InfeasibleError
from solvermap.formulations.problems import link_split as split_problems
from solvermap.formulations.problems import placement as placement_problems
from solvermap.formulations.problems import routing as routing_problems
from solvermap.formulations.problems import vc_allocation as vc_problems
from solvermap.formulations.problems.link_split import Split, SplitProblem
from solvermap.formulations.problems.placement import Item, Net, Placement, PlacementProblem, Site
from solvermap.formulations.problems.routing import (
    DYNAMIC,
    STATIC,
    Link,
    Mesh,
    Node,
    RouteNet,
    Routes,
    RoutingProblem,
    assign_tracks,
    hop_weight,
    prune,
    xy_tree,
)
from solvermap.formulations.problems.vc_allocation import VcAssignment, VcPath, VcProblem, path_links
from solvermap.hardware.plasticine import PlasticineSpec
from solvermap.hardware.plasticine.dataflow_sim import SimGraph
from solvermap.mappers.decisions import PLACE, ROUTE, SPLIT, VC
from solvermap.mappers.pipeline import Context, decide, run_decision
from solvermap.results import DecisionRecord

# =========================================================================== the mapped app, PB level


@dataclass(frozen=True)
class LogicalLink:
    name: str  # the produced value
    src_unit: str
    dst_units: tuple[str, ...]
    src_pb: str
    sink_pbs: tuple[str, ...]  # distinct, without the source PB
    kind: str  # "vector" | "scalar" (tokens ride the scalar class)
    tokens: int
    activation: float

    @property
    def importance(self) -> float:
        """Activation × fanout (L320), with the routing floor so that no link has zero priority."""
        return hop_weight(self.activation) * len(self.sink_pbs)


@dataclass
class NetworkView:
    """The merged app as the network sees it: sim units, PBs and their types, logical links."""

    sim: SimGraph
    pb_of_unit: dict[str, str]
    pb_type: dict[str, str]
    links: list[LogicalLink]
    cycles_estimate: float
    backpressure: list[tuple[str, str, str]] = field(default_factory=list)  # (net in, net out, PB)
    stages: dict[str, float] = field(default_factory=dict)  # compute unit → instructions (stages)


def mesh_of(spec: PlasticineSpec) -> Mesh:
    """One switch/router per site; DAG columns on both sides (assumption NT1)."""
    return Mesh(spec.grid.rows, spec.grid.columns + 2)


def site_type(spec: PlasticineSpec, row: int, col: int) -> str:
    if col == 0 or col == spec.grid.columns + 1:
        return "dag"
    c = col - 1
    if spec.grid.pattern == "checkerboard":
        return "pcu" if (row + c) % 2 == 0 else "pmu"
    return "pcu" if (row + c) % 3 == 0 else "pmu"  # two PMUs per PCU (L251)


def sites_of(spec: PlasticineSpec) -> tuple[Site, ...]:
    mesh = mesh_of(spec)
    out = []
    for r in range(mesh.rows):
        for c in range(mesh.cols):
            kind = site_type(spec, r, c)
            out.append(Site(f"{kind}@{r},{c}", {"slot": 1.0}, (r, c), (kind,)))
    return tuple(out)


def node_of_site(name: str) -> Node:
    r, c = name.split("@")[1].split(",")
    return int(r), int(c)


def unit_ii(spec: PlasticineSpec, sim: SimGraph, pb_type: Mapping[str, str], stages: Mapping[str, float]) -> dict[str, int]:
    """Cycles between firings: 1 when pipelined; on a time-scheduled CGRA a PCU repeats its loop of
    (≤ ``schedule_instructions``) instructions, one per cycle (L259), so all units on it fire once per
    loop of the PB's total instructions."""
    net = spec.network
    out = {u.name: 1 for u in sim.units}
    if net.execution != "time_scheduled":
        return out
    per_pb: dict[str, float] = {}
    for u in sim.units:
        if pb_type.get(u.pb) == "pcu":
            per_pb[u.pb] = per_pb.get(u.pb, 0.0) + stages.get(u.name, 1.0)
    for u in sim.units:
        if pb_type.get(u.pb) == "pcu":
            out[u.name] = int(max(1, min(net.schedule_instructions, math.ceil(per_pb[u.pb]))))
    return out


def build_view(vbg, spec: PlasticineSpec, merge) -> NetworkView:
    from solvermap.mappers.plasticine import simulation

    sim = simulation.sim_graph(vbg, spec, merge)
    pbs = simulation.pb_of(vbg, merge)
    pb_type = {pb: kind for pb, kind in pbs.values()}
    pb_of_unit = {u.name: u.pb for u in sim.units}
    kind_of = {u.name: u.kind for u in sim.units}
    firings = {u.name: u.firings for u in sim.units}
    stages = {}
    for name, vb in vbg.vbs.items():
        if vb.kind in ("compute", "retime"):
            stages[name] = float(vb.demand.get("stages", 1.0))
    ii = unit_ii(spec, sim, pb_type, stages)
    estimate = max(simulation.predicted_cycles(vbg, spec), max((firings[u] * ii[u] for u in firings), default=1))
    groups: dict[str, list] = {}
    for ch in sim.channels:
        if kind_of[ch.src] == "host" or kind_of[ch.dst] == "host" or ch.src == ch.dst:
            continue
        groups.setdefault(ch.name, []).append(ch)
    links = []
    for value, chans in sorted(groups.items()):
        src = chans[0].src
        src_pb = pb_of_unit[src]
        sinks = tuple(sorted({pb_of_unit[c.dst] for c in chans} - {src_pb}))
        if not sinks:
            continue
        tokens = max(math.ceil(firings[src] / max(1, c.src_every)) for c in chans)
        kind = "vector" if chans[0].kind == "vector" else "scalar"
        links.append(LogicalLink(value, src, tuple(sorted({c.dst for c in chans})), src_pb, sinks, kind, tokens,
                                 min(1.0, tokens / max(1.0, estimate))))
    view = NetworkView(sim, pb_of_unit, pb_type, links, estimate, stages=stages)
    view.backpressure = _backpressure(view)
    return view


def _backpressure(view: NetworkView) -> list[tuple[str, str, str]]:
    """(net a, net b, PB): a enters a context whose firing — directly or through forward channels inside
    the PB — waits on room in net b (L314: PBs pass backpressure from outputs to inputs). Loop-carried
    inputs (pre-loaded tokens, L535) add no dependency."""
    routed = {ln.name for ln in view.links}
    out_nets: dict[str, set[str]] = {}
    local: dict[str, set[str]] = {}
    for ch in view.sim.channels:
        if ch.name in routed and view.pb_of_unit[ch.src] != view.pb_of_unit.get(ch.dst):
            out_nets.setdefault(ch.src, set()).add(ch.name)
        elif ch.init_tokens == 0 and ch.src != ch.dst and view.pb_of_unit[ch.src] == view.pb_of_unit.get(ch.dst):
            local.setdefault(ch.src, set()).add(ch.dst)
    inside = nx.DiGraph([(u, w) for u, ws in local.items() for w in ws])
    pairs = set()
    for ch in view.sim.channels:
        if ch.name not in routed or ch.init_tokens > 0 or view.pb_of_unit[ch.src] == view.pb_of_unit[ch.dst]:
            continue
        waits = {ch.dst} | (nx.descendants(inside, ch.dst) if ch.dst in inside else set())
        for u in waits:
            for b in out_nets.get(u, ()):
                if b != ch.name:
                    pairs.add((ch.name, b, view.pb_of_unit[ch.dst]))
    return sorted(pairs)


# =========================================================================== placement


def placement_problem(view: NetworkView, spec: PlasticineSpec, name: str = "place") -> PlacementProblem:
    items = tuple(Item(pb, {"slot": 1.0}, kind) for pb, kind in sorted(view.pb_type.items())
                  if pb in set(view.pb_of_unit.values()) and kind != "host")
    placed = {it.name for it in items}
    nets = tuple(Net(ln.src_pb, tuple(s for s in ln.sink_pbs if s in placed), hop_weight(ln.activation), ln.name)
                 for ln in view.links if ln.src_pb in placed)
    return PlacementProblem(items, sites_of(spec), nets, broadcast="tree", name=name)


def _net_index(problem: PlacementProblem) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {it.name: [] for it in problem.items}
    for k, net in enumerate(problem.nets):
        for m in dict.fromkeys((net.source, *net.sinks)):
            out[m].append(k)
    return out


def _hpwl(coords: list[tuple[int, int]]) -> int:
    if len(coords) < 2:
        return 0
    rows = [c[0] for c in coords]
    cols = [c[1] for c in coords]
    return max(rows) - min(rows) + max(cols) - min(cols)


def greedy_placement(problem: PlacementProblem) -> Placement | None:
    """Most-connected item first (breadth-first over the nets); each on the free compatible site that
    adds the least activation-weighted half-perimeter (ties: nearest the centre)."""
    coord = {s.name: s.coord for s in problem.sites}
    nets_of = _net_index(problem)
    degree = {it.name: sum(problem.nets[k].weight for k in nets_of[it.name]) for it in problem.items}
    items = {it.name: it for it in problem.items}
    graph = nx.Graph()
    graph.add_nodes_from(items)
    for net in problem.nets:
        graph.add_edges_from(itertools.combinations(dict.fromkeys((net.source, *net.sinks)), 2))
    rows = [s.coord[0] for s in problem.sites]
    cols = [s.coord[1] for s in problem.sites]
    centre = ((min(rows) + max(rows)) / 2, (min(cols) + max(cols)) / 2)

    def by_degree(names):
        return sorted(names, key=lambda n: (-degree[n], n))

    order: list[str] = []
    order_set: set[str] = set()
    for start in by_degree(items):  # breadth first from the most connected item of each component
        if start not in order_set:
            component = [start, *(b for _, b in nx.bfs_edges(graph, start, sort_neighbors=by_degree))]
            order += component
            order_set.update(component)
    free = {s.name for s in problem.sites}
    where: dict[str, str] = {}
    for name in order:
        best, best_cost = None, math.inf
        for site in problem.sites:
            if site.name not in free or not problem.compatible(items[name], site):
                continue
            cost = 0.0
            for k in nets_of[name]:
                net = problem.nets[k]
                placed = [coord[where[m]] for m in dict.fromkeys((net.source, *net.sinks)) if m in where]
                cost += net.weight * _hpwl(placed + [site.coord])
            cost += 1e-6 * (abs(site.coord[0] - centre[0]) + abs(site.coord[1] - centre[1]))
            if cost < best_cost - 1e-12:
                best, best_cost = site.name, cost
        if best is None:
            return None
        where[name] = best
        free.discard(best)
    return Placement(where)


def annealing_placement(problem: PlacementProblem, *, seed: int = 0, moves_per_item: int = 300,
                        start: Placement | None = None) -> Placement | None:
    """Simulated annealing from the greedy placement: move an item to a compatible site (swapping with
    its occupant when that one fits the vacated site); geometric cooling; the best placement seen."""
    start = start or greedy_placement(problem)
    if start is None:
        return None
    rng = random.Random(seed)
    coord = {s.name: s.coord for s in problem.sites}
    items = {it.name: it for it in problem.items}
    nets_of = _net_index(problem)
    where = dict(start.assignment)
    occupant = {s: i for i, s in where.items()}
    names = sorted(items)
    compatible = {n: [s.name for s in problem.sites if problem.compatible(items[n], s)] for n in names}
    members = [list(dict.fromkeys((net.source, *net.sinks))) for net in problem.nets]

    def net_cost(k: int) -> float:
        return problem.nets[k].weight * _hpwl([coord[where[m]] for m in members[k]])

    cost = sum(net_cost(k) for k in range(len(problem.nets)))
    best_cost, best = cost, dict(where)
    steps = moves_per_item * max(1, len(names))
    temperature = max(1e-3, 0.5 * cost / max(1, len(problem.nets)))
    cooling = (1e-3 / temperature) ** (1.0 / steps) if temperature > 1e-3 else 1.0
    for _ in range(steps):
        a = names[rng.randrange(len(names))]
        options = compatible[a]
        target = options[rng.randrange(len(options))]
        old = where[a]
        b = occupant.get(target)
        if target == old or (b is not None and old not in compatible[b]):
            temperature *= cooling
            continue
        touched = set(nets_of[a]) | (set(nets_of[b]) if b is not None else set())
        before = sum(net_cost(k) for k in touched)
        where[a] = target
        if b is not None:
            where[b] = old
        delta = sum(net_cost(k) for k in touched) - before
        if delta <= 0 or rng.random() < math.exp(-delta / temperature):
            occupant[target] = a
            if b is not None:
                occupant[old] = b
            else:
                occupant.pop(old, None)
            cost += delta
            if cost < best_cost - 1e-9:
                best_cost, best = cost, dict(where)
        else:
            where[a] = old
            if b is not None:
                where[b] = target
        temperature *= cooling
    return Placement(best)


# =========================================================================== routing problems


def route_nets(view: NetworkView, placement: Placement, split: Split | None, default: str) -> tuple[RouteNet, ...]:
    out = []
    for ln in view.links:
        src = node_of_site(placement.assignment[ln.src_pb])
        sinks = tuple(sorted({node_of_site(placement.assignment[p]) for p in ln.sink_pbs} - {src}))
        if not sinks:
            continue
        network = split.network_of(ln.name) if split is not None else default
        out.append(RouteNet(ln.name, src, sinks, ln.kind, hop_weight(ln.activation), network, ln.importance))
    return tuple(out)


def static_capacity(spec: PlasticineSpec) -> dict[str, int]:
    return {"vector": spec.network.static.vector_links, "scalar": spec.network.static.scalar_links}


def routing_problem(view: NetworkView, spec: PlasticineSpec, placement: Placement, split: Split | None,
                    *, margin: int = 2, name: str = "route") -> RoutingProblem:
    net = spec.network
    default = STATIC if net.type == "static" else DYNAMIC
    dynamic_cap = net.dynamic.vcs if net.has_dynamic else None
    return RoutingProblem(mesh_of(spec), route_nets(view, placement, split, default), static_capacity(spec),
                          dynamic_cap, margin, name)


def split_problem(view: NetworkView, spec: PlasticineSpec, placement: Placement, *, margin: int = 2,
                  name: str = "split") -> SplitProblem:
    mandatory = {"static": STATIC, "dynamic": DYNAMIC, "hybrid": None}[spec.network.type]
    routing = RoutingProblem(mesh_of(spec), route_nets(view, placement, None, STATIC), static_capacity(spec), None,
                             margin, name)
    return SplitProblem(routing, mandatory, name)


# =========================================================================== routing baselines


def _usable(problem: RoutingProblem, net: RouteNet, load: Mapping[tuple[str, Link], int]) -> Callable[[Link], bool]:
    """A link is usable by ``net`` when it lies in the net's region and has a free track / VC."""
    inside = problem.region(net)
    if net.network == STATIC:
        cap = problem.static_capacity.get(net.kind, 0)
        return lambda e: e[1] in inside and e[0] in inside and load.get((net.kind, e), 0) < cap
    cap = problem.dynamic_capacity
    return lambda e: e[1] in inside and e[0] in inside and (cap is None or load.get(("any", e), 0) < cap)


def greedy_tree(problem: RoutingProblem, net: RouteNet, usable: Callable[[Link], bool],
                penalty: Callable[[Link], float] | None = None) -> tuple[Link, ...] | None:
    """Takahashi–Matsuyama: repeatedly join the nearest unreached sink to the tree by a shortest usable
    path (breadth-first; with ``penalty``, Dijkstra on 1 + penalty per link)."""
    import heapq

    mesh = problem.mesh
    tree_nodes = {net.source}
    links: list[Link] = []
    remaining = set(net.sinks)
    while remaining:
        parent: dict[Node, Node | None] = {n: None for n in tree_nodes}
        dist = {n: 0.0 for n in tree_nodes}
        heap = [(0.0, n) for n in sorted(tree_nodes)]
        hit = None
        done: set[Node] = set()
        while heap:
            d, a = heapq.heappop(heap)
            if a in done:
                continue
            done.add(a)
            if a in remaining:
                hit = a
                break
            for b in mesh.neighbours(a):
                if b in done or not usable((a, b)):
                    continue
                nd = d + 1.0 + (penalty((a, b)) if penalty else 0.0)
                if nd < dist.get(b, math.inf) - 1e-12:
                    dist[b] = nd
                    parent[b] = a
                    heapq.heappush(heap, (nd, b))
        if hit is None:
            return None
        node = hit
        while parent[node] is not None:
            links.append((parent[node], node))
            tree_nodes.add(node)
            node = parent[node]
        tree_nodes.add(hit)
        remaining -= tree_nodes
    return prune(links, net.source, net.sinks)


def _commit(net: RouteNet, tree: tuple[Link, ...], load: dict[tuple[str, Link], int]) -> None:
    cls = net.kind if net.network == STATIC else "any"
    for e in tree:
        load[(cls, e)] = load.get((cls, e), 0) + 1


def greedy_routes(problem: RoutingProblem, fixed: Mapping[str, tuple[Link, ...]] | None = None) -> Routes | None:
    """Greedy Steiner router, heaviest logical link first, around the ``fixed`` trees; None when some link
    finds no tree."""
    load: dict[tuple[str, Link], int] = {}
    trees: dict[str, tuple[Link, ...]] = {}
    for name, tree in (fixed or {}).items():
        trees[name] = tuple(tree)
        _commit(problem.net(name), trees[name], load)
    for net in sorted(problem.nets, key=lambda n: (-n.weight * len(n.sinks), n.name)):
        if net.name in trees:
            continue
        tree = greedy_tree(problem, net, _usable(problem, net, load))
        if tree is None:
            return None
        trees[net.name] = tree
        _commit(net, tree, load)
    return Routes(trees, assign_tracks(problem, trees))


def xy_routes(problem: RoutingProblem) -> Routes:
    """Dimension-ordered XY trees for every logical link (capacity-blind)."""
    trees = {n.name: xy_tree(n) for n in problem.nets}
    return Routes(trees, assign_tracks(problem, trees))


def split_greedy_routes(problem: RoutingProblem, ctx: Context) -> Routes | None:
    """The split decision's static trees (``ctx.state["split"]``), the dynamic links by the greedy router
    around them."""
    static = ctx.state["split"].routes.trees
    return greedy_routes(problem, {n.name: static[n.name] for n in problem.nets
                                   if n.network == STATIC and n.name in static})


def greedy_split(problem: SplitProblem) -> Split | None:
    """Seed L320: by activation × fanout, highest first, onto the static network while a tree fits."""
    if problem.mandatory == DYNAMIC:
        return Split(frozenset(), Routes({}, {}))
    routing = problem.routing
    load: dict[tuple[str, Link], int] = {}
    trees: dict[str, tuple[Link, ...]] = {}
    for net in sorted(routing.nets, key=lambda n: (-n.importance, n.name)):
        tree = greedy_tree(routing, net, _usable(routing, net, load))
        if tree is None:
            if problem.mandatory == STATIC:
                return None
            continue
        trees[net.name] = tree
        _commit(net, tree, load)
    return Split(frozenset(trees), Routes(trees, assign_tracks(routing, trees)))


def all_dynamic_split(problem: SplitProblem) -> Split | None:
    """Everything on the routers (valid unless static is mandatory)."""
    return None if problem.mandatory == STATIC else Split(frozenset(), Routes({}, {}))


# =========================================================================== VC allocation


def candidate_trees(problem: RoutingProblem, routes: Routes, count: int) -> dict[str, tuple[tuple[Link, ...], ...]]:
    """Per dynamic link: the routed tree, the XY and YX trees, and greedy trees that avoid the links the
    other dynamic paths load most (up to ``count`` distinct trees)."""
    load: dict[Link, int] = {}
    dynamic = [n for n in problem.nets if n.network == DYNAMIC]
    for n in dynamic:
        for e in routes.trees.get(n.name, ()):
            load[e] = load.get(e, 0) + 1
    out = {}
    for n in dynamic:
        own = set(routes.trees.get(n.name, ()))
        options = [tuple(routes.trees[n.name]), xy_tree(n), xy_tree(n, column_first=True)]
        inside = problem.region(n)
        for scale in (1.0, 3.0):
            tree = greedy_tree(problem, n, lambda e, inside=inside: e[0] in inside and e[1] in inside,
                               penalty=lambda e, s=scale: s * (load.get(e, 0) - (1 if e in own else 0)))
            if tree is not None:
                options.append(tree)
        unique = list(dict.fromkeys(tuple(sorted(t)) for t in options))
        out[n.name] = tuple(unique[:max(1, count)])
    return out


def vc_problem(view: NetworkView, spec: PlasticineSpec, routing: RoutingProblem, routes: Routes, *,
               mode: str = "per_hop", joint: bool = False, candidates: int = 4, name: str = "vc") -> VcProblem:
    trees = candidate_trees(routing, routes, candidates if joint else 1)
    paths = tuple(VcPath(n.name, n.source, n.sinks, trees[n.name], n.weight)
                  for n in routing.nets if n.network == DYNAMIC)
    statics = tuple(VcPath(n.name, n.source, n.sinks, (tuple(routes.trees.get(n.name, ())),), n.weight)
                    for n in routing.nets if n.network == STATIC)
    routed = {n.name for n in routing.nets}
    node = {n.name: n for n in routing.nets}
    back = tuple((a, b, node[b].source) for a, b, _ in view.backpressure if a in routed and b in routed)
    return VcProblem(paths, spec.network.dynamic.vcs if spec.network.has_dynamic else 1, mode, joint, statics, back, name)


def greedy_colouring(problem: VcProblem) -> VcAssignment | None:
    """Largest conflict degree first, the smallest VC free on every link of the path (one VC per path);
    None when the router has too few VCs for it."""
    routes = {p.name: tuple(p.candidates[0]) for p in problem.paths}
    on_link: dict[Any, list[str]] = {}
    for p in problem.paths:
        for link in path_links(p, routes[p.name]):
            on_link.setdefault(link, []).append(p.name)
    neighbours: dict[str, set[str]] = {p.name: set() for p in problem.paths}
    for users in on_link.values():
        for a in users:
            neighbours[a].update(u for u in users if u != a)
    colour: dict[str, int] = {}
    for name in sorted(neighbours, key=lambda n: (-len(neighbours[n]), n)):
        taken = {colour[m] for m in neighbours[name] if m in colour}
        k = next(c for c in range(len(neighbours) + 1) if c not in taken)
        if k >= problem.max_vcs:
            return None
        colour[name] = k
    vcs = {p.name: {link: colour[p.name] for link in path_links(p, routes[p.name])} for p in problem.paths}
    return VcAssignment(routes, vcs)


# =========================================================================== simulation and cost


def noc_config(spec: PlasticineSpec, *, ideal: bool = False) -> Any:
    from solvermap.hardware.plasticine.noc_sim import NocConfig

    n = spec.network
    return NocConfig(mode="ideal" if ideal else "network", static_hop_cycles=n.static.hop_cycles,
                     flow_control=n.static.flow_control, skid_entries=n.static.skid_entries,
                     router_hop_cycles=n.dynamic.hop_cycles, flit_bits=n.dynamic.flit_bits,
                     buffers_per_vc=n.dynamic.buffers_per_vc, injection_buffer=n.dynamic.injection_buffer)


def routed_values(routing: RoutingProblem, routes: Routes, vc: VcAssignment | None) -> dict[str, Any]:
    """Each logical link's route for the simulator (dynamic trees from the VC decision when it re-routed)."""
    from solvermap.hardware.plasticine.noc_sim import RoutedValue

    out = {}
    for n in routing.nets:
        tree = tuple(routes.trees.get(n.name, ()))
        if n.network == DYNAMIC and vc is not None and n.name in vc.routes:
            tree = tuple(vc.routes[n.name])
        out[n.name] = RoutedValue(n.name, n.network, n.source, tree, n.kind)
    return out


def node_of_units(view: NetworkView, placement: Placement) -> dict[str, Node]:
    return {u: node_of_site(placement.assignment[pb]) for u, pb in view.pb_of_unit.items() if pb in placement.assignment}


def simulate_mapping(view: NetworkView, spec: PlasticineSpec, placement: Placement, routing: RoutingProblem,
                     routes: Routes, vc: VcAssignment | None, *, window: int = 2048,
                     ideal_runs: dict | None = None) -> dict[str, Any]:
    """Co-simulate the routed app on the network and on the ideal network; area, energy (Eq 3.2).

    ``ideal_runs``: a memo of the ideal network's runs for this one mapping (view, placement, routes and VCs),
    for a caller that simulates the mapping on several designs: designs that differ only in what an ideal run
    does not read (flit width, hop latencies: :func:`~solvermap.hardware.plasticine.noc_sim.ideal_key`) share
    one run. Pass a new dict per mapping."""
    from solvermap.hardware.plasticine import network_cost
    from solvermap.hardware.plasticine.noc_sim import ideal_key, simulate

    ii = unit_ii(spec, view.sim, view.pb_type, stages_of(view))
    nodes = node_of_units(view, placement)
    values = routed_values(routing, routes, vc)
    real = simulate(view.sim, nodes, values, noc_config(spec), ii=ii, window=window)
    key = (window, tuple(sorted(ii.items())), ideal_key(noc_config(spec, ideal=True)))
    ideal = ideal_runs.get(key) if ideal_runs is not None else None
    if ideal is None:
        ideal = simulate(view.sim, nodes, values, noc_config(spec, ideal=True), ii=ii, window=window)
        if ideal_runs is not None:
            ideal_runs[key] = ideal
    # one extrapolation for both runs: the ideal run's cycles are the real run's scaled by the ratio of
    # their simulated windows (both simulate the same scaled firings), so window-scaling noise cannot
    # put the ideal network above the real one
    ideal_cycles = ideal.cycles if real.scale == 1.0 else real.cycles * ideal.window_cycles / max(1, real.window_cycles)
    seconds = real.cycles / (spec.clock_ghz * 1e9)
    mesh = mesh_of(spec)
    design = spec.network
    allocated = {"vector_switch": len(_nodes_of(values, STATIC, "vector")),
                 "scalar_switch": len(_nodes_of(values, STATIC, "scalar")),
                 "router": len(_nodes_of(values, DYNAMIC, None))}
    area = network_cost.area_mm2(design, mesh.rows * mesh.cols)
    energy = network_cost.energy_j(design, seconds, allocated, real.static_switch_flits, real.router_flits)
    out = {
        "network": design.label(),
        "execution": design.execution,
        "cycles": real.cycles,
        "ideal_cycles": ideal_cycles,
        "network_overhead": (real.cycles - ideal_cycles) / ideal_cycles if ideal_cycles else None,
        "sim_window_cycles_ideal": ideal.window_cycles,
        "deadlock": real.deadlock,
        "ideal_deadlock": ideal.deadlock,
        "throughput": real.throughput,
        "latency_s": seconds,
        "network_area_mm2": area["total"],
        "network_area_breakdown": area,
        "network_energy_j": energy["total"],
        "network_energy_breakdown": energy,
        "network_power_w": energy["total"] / seconds if seconds > 0 else None,
        "static_hops": sum(real.static_hops.values()),
        "dynamic_hops": sum(real.dynamic_hops.values()),
        "hops": sum(real.static_hops.values()) + sum(real.dynamic_hops.values()),
        "allocated": allocated,
        "max_dynamic_link_utilization": real.max_link_utilization,
        "sim_window_cycles": real.window_cycles,
        "sim_scale": real.scale,
    }
    if real.deadlock:
        out["blocked"] = real.blocked[:5]
    return out


def stages_of(view: NetworkView) -> dict[str, float]:
    """Instructions of each compute unit (time-scheduled CGRAs), from its VB's stage demand."""
    return dict(view.stages)


def _nodes_of(values: Mapping[str, Any], network: str, kind: str | None) -> set[Node]:
    out: set[Node] = set()
    for v in values.values():
        if v.network != network or (kind is not None and v.kind != kind):
            continue
        out.add(v.source)
        for a, b in v.tree:
            out.update((a, b))
    return out


# =========================================================================== pipeline steps


NETWORK_DECISIONS = ("place", "split", "route", "vc")


def _skip(ctx: Context) -> bool:
    """True when the target models no network (the base preset): the pipeline ends after ``merge``.
    Asking for a network decision on such a target is a configuration error."""
    if ctx.target.network.modelled:
        return False
    if ctx.focus in NETWORK_DECISIONS:
        raise ConfigError(f"target {ctx.target.name!r} has no network design (network.type); use "
                          "plasticine-static, plasticine-hybrid or plasticine-dynamic, or --set target.network.type=static")
    return True


def _view(ctx: Context) -> NetworkView:
    view = ctx.state.get("network.view")
    if view is None:
        if "merge" not in ctx.state:
            raise InfeasibleError("place: needs the merged VB graph (run partition and merge first)")
        view = build_view(ctx.state["vbgraph"], ctx.target, ctx.state["merge"])
        ctx.state["network.view"] = view
    return view


def place_step(ctx: Context) -> DecisionRecord | None:
    if _skip(ctx):
        return None
    spec, view = ctx.target, _view(ctx)
    problem = placement_problem(view, spec, name=f"place:{ctx.workload.name}")

    def validate(p: PlacementProblem, d: Placement) -> dict[str, Any]:
        lengths = [placement_problems.tree_length(p, d, n) for n in p.nets if n.sinks]
        return {"weighted_tree_length": placement_problems.traffic(p, d),
                "tree_length": sum(lengths), "longest_tree": max(lengths, default=0.0)}

    _, record = run_decision(ctx, PLACE, problem, validate=validate)
    record.details.update({"pbs": len(problem.items), "logical_links": len(problem.nets),
                           "lower_bound": placement_problems.combinatorial_bound(problem)})
    return record


def split_step(ctx: Context) -> DecisionRecord | None:
    if _skip(ctx):
        return None
    spec, view = ctx.target, _view(ctx)
    problem = split_problem(view, spec, ctx.state["place"], margin=ctx.options_for(SPLIT).margin,
                            name=f"split:{ctx.workload.name}")

    def validate(p: SplitProblem, d: Split) -> dict[str, Any]:
        nets = [n for n in p.routing.nets if n.sinks]
        return {"static_links": len(d.static), "dynamic_links": len(nets) - len(d.static),
                "static_share_of_importance": (split_problems.objective(p, d) / split_problems.upper_bound(p)
                                               if split_problems.upper_bound(p) else None)}

    _, record = run_decision(ctx, SPLIT, problem, validate=validate)
    return record


def route_step(ctx: Context) -> DecisionRecord | None:
    if _skip(ctx):
        return None
    spec, view = ctx.target, _view(ctx)
    problem = routing_problem(view, spec, ctx.state["place"], ctx.state["split"], margin=ctx.options_for(ROUTE).margin,
                              name=f"route:{ctx.workload.name}")

    def validate(p: RoutingProblem, d: Routes) -> dict[str, Any]:
        stat = sum(len(d.trees.get(n.name, ())) for n in p.nets if n.network == STATIC)
        dyn = sum(len(d.trees.get(n.name, ())) for n in p.nets if n.network == DYNAMIC)
        return {"static_tree_links": stat, "dynamic_tree_links": dyn,
                "max_dynamic_paths_per_link": routing_problems.max_dynamic_load(p, d),
                "mesh_lower_bound": routing_problems.lower_bound(p)}

    _, record = run_decision(ctx, ROUTE, problem, validate=validate)
    return record


def vc_step(ctx: Context) -> DecisionRecord | None:
    if _skip(ctx):
        return None
    spec, view = ctx.target, _view(ctx)
    routing = ctx.state["route.problem"]
    options = ctx.options_for(VC)
    problem = vc_problem(view, spec, routing, ctx.state["route"], mode=options.mode, joint=options.joint,
                         candidates=options.candidates, name=f"vc:{ctx.workload.name}")
    window = options.sim_window

    def validate(p: VcProblem, d: VcAssignment) -> dict[str, Any]:
        sim = simulate_mapping(view, spec, ctx.state["place"], routing, ctx.state["route"], d, window=window)
        ctx.state["network.sim"] = sim
        return sim

    _, record = run_decision(ctx, VC, problem, validate=validate)
    bound, link = vc_problems.lower_bound(problem)
    record.details.update({"lower_bound": bound, "lower_bound_link": repr(link), "router_vcs": problem.max_vcs,
                           "dynamic_paths": len(problem.paths)})
    return record


def validation(ctx: Context) -> dict[str, Any]:
    """The network part of the end-to-end validation (reuses the ``vc`` step's simulation)."""
    sim = ctx.state.get("network.sim")
    if sim is None:
        spec, view = ctx.target, _view(ctx)
        sim = simulate_mapping(view, spec, ctx.state["place"], ctx.state["route.problem"], ctx.state["route"],
                               ctx.state.get("vc"))
        ctx.state["network.sim"] = sim
    return sim


def end_to_end(ctx: Context, base: Mapping[str, Any]) -> dict[str, Any]:
    """The pipeline's end-to-end metrics once the app is routed: the NoC co-simulation replaces the
    dataflow simulator's fixed-hop estimate; energy, power and area add the network (Eq 3.2)."""
    sim = validation(ctx)
    seconds = sim["latency_s"]
    pb_power = float(base.get("power_w") or 0.0)
    pb_area = float(base.get("area_mm2") or 0.0)
    energy = pb_power * seconds + sim["network_energy_j"]
    predicted = base.get("predicted_cycles")
    out = {key: value for key, value in sim.items() if key not in ("cycles", "throughput", "latency_s", "deadlock")}
    out.update({
        "dataflow_cycles": base.get("cycles"),
        "cycles": sim["cycles"],
        "simulated_cycles": sim["cycles"],
        "cycles_rel_diff": (sim["cycles"] - predicted) / predicted if predicted else None,
        "throughput": sim["throughput"],
        "latency_s": seconds,
        "deadlock": sim["deadlock"],
        "pb_area_mm2": pb_area,
        "area_mm2": pb_area + sim["network_area_mm2"],
        "pb_energy_j": pb_power * seconds,
        "energy_j": energy,
        "power_w": energy / seconds if seconds > 0 else None,
    })
    return out


def size_estimate(spec: PlasticineSpec, workload: Any) -> list[tuple[str, str, float]]:
    """Memory the network steps need at least: the placement model's site-to-site distance table (one
    Python float and its list slot, 32 bytes, per pair of sites; formulations/placement.py)."""
    if not spec.network.modelled:
        return []
    sites = spec.grid.rows * (spec.grid.columns + 2)
    return [("place", f"target.grid.rows x columns = {spec.grid.rows} x {spec.grid.columns}: a distance table of "
                      f"{sites:,} sites squared", 32.0 * sites * sites)]


NETWORK_STEPS = (
    decide(PLACE, place_step, needs=("vbgraph", "merge"), provides=("network.view",)),
    decide(SPLIT, split_step, needs=("network.view", "place")),
    decide(ROUTE, route_step, needs=("network.view", "place", "split")),
    decide(VC, vc_step, needs=("network.view", "place", "route", "route.problem"), provides=("network.sim",)),
)
