"""What both placement builds (MILP and native CP-SAT) share: index sets, the rows' terms in the order both
add them, and the warm start's value of every variable. A build only turns these into its backend's rows."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from solvermap.formulations.problems.placement import Placement, PlacementProblem, Site, distance
from solvermap.limits import check_estimate


@dataclass
class Prep:
    """Index sets both builds use."""

    items: list[str]
    sites: list[str]
    pairs: dict[int, list[int]]  # item → compatible sites
    nets: list[tuple[int, tuple[int, ...], float]]  # (source item, sink items, weight), per_site semantics
    targets: list[list[int]]  # net → candidate destination sites
    dist: list[list[float]]
    big_m: float
    grid: bool
    rows: list[int] = field(default_factory=list)
    cols: list[int] = field(default_factory=list)
    symmetry: dict[int, list[int]] = field(default_factory=dict)  # item → allowed sites after symmetry breaking


def prepare(problem: PlacementProblem) -> Prep:
    items = [it.name for it in problem.items]
    sites = [s.name for s in problem.sites]
    ii = {n: k for k, n in enumerate(items)}
    pairs = {k: [s for s, site in enumerate(problem.sites) if problem.compatible(it, site)]
             for k, it in enumerate(problem.items)}
    nets: list[tuple[int, tuple[int, ...], float]] = []
    for net in problem.nets:
        if net.weight == 0 or not net.sinks:
            continue
        sinks = tuple(ii[j] for j in net.sinks)
        if problem.broadcast == "per_sink":
            nets.extend((ii[net.source], (j,), net.weight) for j in sinks)
        else:
            nets.append((ii[net.source], tuple(dict.fromkeys(sinks)), net.weight))
    n_sites = len(sites)
    check_estimate(f"placement of {len(items):,} items on {n_sites:,} sites: a distance table of {n_sites:,} sites "
                   "squared", 32.0 * n_sites * n_sites, problem.name)  # a Python float and its list slot per pair
    dist = [[distance(problem, s, t) for t in range(n_sites)] for s in range(n_sites)]
    big_m = max((max(row) for row in dist), default=0.0)
    prep = Prep(items, sites, pairs, nets, [], dist, big_m, problem.has_grid())
    if prep.grid:
        prep.rows = sorted({s.coord[0] for s in problem.sites})
        prep.cols = sorted({s.coord[1] for s in problem.sites})
    if problem.symmetric_sites and not problem.fixed:
        free_items = [k for k, it in enumerate(problem.items) if it.type == ""]
        free_sites = [s for s, site in enumerate(problem.sites) if not site.types]
        for rank, k in enumerate(free_items):
            prep.symmetry[k] = free_sites[: rank + 1]
    prep.targets = [sorted({t for j in sinks for t in allowed_sites(prep, j)}) for _, sinks, _ in nets]
    return prep


def allowed_sites(prep: Prep, i: int) -> list[int]:
    if i in prep.symmetry:
        keep = set(prep.symmetry[i])
        return [s for s in prep.pairs[i] if s in keep]
    return prep.pairs[i]


def canonical_hint(problem: PlacementProblem, hint: Placement | None) -> Placement | None:
    """The hint relabelled to satisfy symmetry breaking (sites renamed by first use), when it applies."""
    if hint is None or not problem.symmetric_sites or problem.fixed:
        return hint
    free_sites = [s.name for s in problem.sites if not s.types]
    rename: dict[str, str] = {}
    for it in problem.items:
        if it.type != "":
            continue
        site = hint.assignment.get(it.name)
        if site in free_sites and site not in rename:
            rename[site] = free_sites[len(rename)]
    return Placement({k: rename.get(v, v) for k, v in hint.assignment.items()})


def hint_sites(problem: PlacementProblem, prep: Prep, hint: Placement | None):
    """Site of every item and the (net, site) messages implied by the hint, or None."""
    if hint is None:
        return None
    index = problem.site_index()
    try:
        where = [index[hint.assignment[name]] for name in prep.items]
    except KeyError:
        return None
    if any(where[i] not in allowed_sites(prep, i) for i in range(len(where))):
        return None
    return where



def net_terminals(prep: Prep, n: int) -> list[int]:
    src, sinks, _ = prep.nets[n]
    return list(dict.fromkeys((src, *sinks)))


def box_of(prep: Prep, coord, n: int, where: list[int]) -> tuple[float, float, float, float]:
    """(R⁺, R⁻, C⁺, C⁻) of net n's terminals under a placement given as item → site index."""
    rows = [coord[where[j]][0] for j in net_terminals(prep, n)]
    cols = [coord[where[j]][1] for j in net_terminals(prep, n)]
    return max(rows), min(rows), max(cols), min(cols)



def route_indicators(problem: PlacementProblem, prep: Prep, src: int, t: int, on):
    """For the message from (variable) ``src`` to fixed site ``t``: every link it may cross and the
    list of 0/1 expressions whose conjunction (with reach) means it does."""
    coord = [s.coord for s in problem.sites]
    allowed = allowed_sites(prep, src)
    rt, ct = coord[t]

    def ind(pred):
        return [s for s in allowed if pred(coord[s])]

    out = []
    for r in prep.rows:
        for c in prep.cols:
            if c + 1 <= ct and c + 1 in prep.cols:  # eastward (r,c)->(r,c+1): row_src = r, col_src ≤ c
                a, b = ind(lambda p: p[0] == r), ind(lambda p: p[1] <= c)
                if a and b:
                    out.append((((r, c), (r, c + 1)), [a, b]))
            if c - 1 >= ct and c - 1 in prep.cols:  # westward (r,c)->(r,c-1): row_src = r, col_src ≥ c
                a, b = ind(lambda p: p[0] == r), ind(lambda p: p[1] >= c)
                if a and b:
                    out.append((((r, c), (r, c - 1)), [a, b]))
    for r in prep.rows:
        if r + 1 <= rt and r + 1 in prep.rows:  # southward on column ct: row_src ≤ r
            a = ind(lambda p: p[0] <= r)
            if a:
                out.append((((r, ct), (r + 1, ct)), [a]))
        if r - 1 >= rt and r - 1 in prep.rows:  # northward: row_src ≥ r
            a = ind(lambda p: p[0] >= r)
            if a:
                out.append((((r, ct), (r - 1, ct)), [a]))
    return out



def capacity_terms(problem: PlacementProblem, prep: Prep, x: Mapping[tuple[int, int], Any]
                   ) -> Iterator[tuple[str, Site, list[tuple[float, Any]]]]:
    """capacity rows, per resource then site: (resource, site, [(demand, x[i,s])]) for sites some item needs."""
    for r in problem.resources():
        for s, site in enumerate(problem.sites):
            terms = [(problem.items[i].demand.get(r, 0.0), x[i, s]) for i in range(len(prep.items))
                     if (i, s) in x and problem.items[i].demand.get(r, 0.0)]
            if terms:
                yield r, site, terms


def work_terms(problem: PlacementProblem, prep: Prep, x: Mapping[tuple[int, int], Any]
               ) -> Iterator[tuple[Site, list[tuple[float, Any]]]]:
    """balance rows, per site: (site, [(work, x[i,s])]) for sites some item with work may take."""
    for s, site in enumerate(problem.sites):
        terms = [(problem.items[i].work, x[i, s]) for i in range(len(prep.items)) if (i, s) in x and problem.items[i].work]
        if terms:
            yield site, terms


def messages_of(problem: PlacementProblem, prep: Prep) -> Iterator[tuple[int, int, int, tuple[int, ...], float]]:
    """Every message a placement may pay for (not with ``broadcast='tree'``): (net, site, source, sinks, weight)."""
    if problem.broadcast == "tree":
        return
    for n, (src, sinks, weight) in enumerate(prep.nets):
        for t in prep.targets[n]:
            yield n, t, src, sinks, weight


def tree_nets(prep: Prep) -> Iterator[tuple[int, float, list[int]]]:
    """The nets a bounding box bounds (``broadcast='tree'``): (net, weight, terminals), ≥ 2 terminals each."""
    for n, (_, _, weight) in enumerate(prep.nets):
        terminals = net_terminals(prep, n)
        if len(terminals) >= 2:
            yield n, weight, terminals


def grid_ranges(problem: PlacementProblem) -> tuple[tuple[int, int], tuple[int, int]]:
    """(lowest, highest) row and column of the sites."""
    coord = [s.coord for s in problem.sites]
    return (min(c[0] for c in coord), max(c[0] for c in coord)), (min(c[1] for c in coord), max(c[1] for c in coord))


def coordinate_terms(problem: PlacementProblem, prep: Prep, x: Mapping[tuple[int, int], Any], j: int
                     ) -> tuple[list[tuple[float, Any]], list[tuple[float, Any]]]:
    """Item j's row and column as (coordinate, x[j,s]) terms: row(j) = Σ_s r_s x[j,s], likewise the column."""
    coord = [s.coord for s in problem.sites]
    sites = allowed_sites(prep, j)
    return [(coord[s][0], x[j, s]) for s in sites], [(coord[s][1], x[j, s]) for s in sites]


def warm_start(problem: PlacementProblem, prep: Prep, hint: Placement | None, x: Mapping[tuple[int, int], Any],
               boxes: Mapping[int, tuple[Any, ...]], z: Mapping[tuple[int, int], Any], h: Mapping[tuple[int, int], Any],
               message_distance: Callable[[int, int], float]) -> list[tuple[Any, float]]:
    """(variable, value) of every variable the hint determines (empty when it does not fit): x, the boxes, and
    per message z (nets with several sinks) then h, at ``message_distance(source site, t)`` when reached."""
    where = hint_sites(problem, prep, canonical_hint(problem, hint))
    if where is None:
        return []
    coord = [s.coord for s in problem.sites]
    pairs: list[tuple[Any, float]] = [(var, 1 if where[i] == s else 0) for (i, s), var in x.items()]
    for n, box in boxes.items():
        pairs += list(zip(box, box_of(prep, coord, n, where)))
    for (n, t), var in h.items():
        src, sinks, _ = prep.nets[n]
        reached = any(where[j] == t for j in sinks)
        if len(sinks) > 1:
            pairs.append((z[n, t], 1 if reached else 0))
        pairs.append((var, message_distance(where[src], t) if reached else 0))
    return pairs
