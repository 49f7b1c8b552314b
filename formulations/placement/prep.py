"""Index sets and warm-start values both placement builds use (MILP and native CP-SAT)."""

from __future__ import annotations

from dataclasses import dataclass, field

from solvermap.formulations.problems.placement import Placement, PlacementProblem, distance


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

