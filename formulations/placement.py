"""Placement on a grid of typed sites (shared model: PUMA tiles/cores, Plasticine PBs, CGRA PEs).

Problem and decision types, distances and the scalar objective: :mod:`solvermap.formulations.problems.placement`.

Sets      I items, S sites, N nets (source item, sink items, weight w_n), L directed grid links,
          T_n = sites some sink of n may occupy; per_sink broadcast splits each net into one net per sink
Params    demand d[i,r], capacity C[s,r], work a_i, coordinates (r_s, c_s), hop offset o,
          distance D[s,t] (table, or o + Manhattan, or o alone), M = max D, weights λ (balance), μ (links)
Vars      x[i,s] ∈ {0,1}   item i on site s (only type-compatible pairs; fixed items only their site)
          z[n,t] ∈ [0,1]   net n has a sink on site t (= x[j,t] itself when n has one sink j)
          h[n,t] ≥ 0       distance paid by the message of net n to site t
          W ≥ 0            largest site work;  u[n,t,e] ≥ 0 message (n,t) crosses link e;  Λ ≥ 0 largest link load
Minimise  Σ_n w_n Σ_t h[n,t] + λ·W + μ·Λ
s.t.      assignment   Σ_s x[i,s] = 1                                            ∀ i
          capacity     Σ_i d[i,r] x[i,s] ≤ C[s,r]                                ∀ s, r
          reach        z[n,t] ≥ x[j,t]                                           ∀ n, sinks j, t
          distance     grid:  h[n,t] ≥ ±(row_src − r_t) ± (col_src − c_t) + o(1 − x[src,t]) − M(1 − z[n,t])
                              (4 sign combinations; row_src = Σ_s r_s x[src,s], col_src likewise)
                       table: h[n,t] ≥ Σ_s D[s,t] x[src,s] − M(1 − z[n,t])
                       (uniform distance, no coordinates: h[n,t] ≥ o(z[n,t] − x[src,t]) — the (λ−1) cut)
          balance      W ≥ Σ_i a_i x[i,s]                                        ∀ s          (λ > 0)
          links        XY route of (n,t) from the variable source to the fixed site t:
                       row links  u ≥ z + [row_src = r] + [col_src ≤ c] − 2 (east; west with ≥),
                       column c_t u ≥ z + [row_src ≤ r] − 1 (south; north with ≥);
                       Λ ≥ Σ_{n,t} w_n u[n,t,e]                                   ∀ e          (μ > 0)
          symmetry     interchangeable sites: the k-th free item uses one of the first k+1 free sites
          tree         broadcast='tree' replaces reach/distance: per net the bounding box of its terminals,
                       R⁺_n ≥ row(j), R⁻_n ≤ row(j), C⁺_n ≥ col(j), C⁻_n ≤ col(j) for every terminal j
                       (row(j) = Σ_s r_s x[j,s]); the net pays w_n (R⁺ − R⁻ + C⁺ − C⁻), the half-perimeter
                       (= the rectilinear Steiner tree for ≤ 3 sites, a lower bound beyond; seed 004 L312)

Because every item sits on exactly one site, Σ_s D[s,t] x[src,s] is exactly the distance from the
source's site to t, so the big-M rows are tight whenever z[n,t] = 1 and vacuous otherwise. With
per_site broadcast a value crosses to a site once however many sinks it has there (PUMA: one
send/receive per destination tile, seed 003 L183; the quadratic-assignment view of tile placement is
the seed's L187 "NP-complete" problem, digest §3.3 Models A/B).

Builds: a native CP-SAT model (``backend: cpsat``; ``OnlyEnforceIf`` replaces the big-M terms,
distances and works are integer-scaled, the objective keeps float coefficients) and the MILP above
through :class:`~solvermap.formulations.solver.ModelBuilder` (``highs``, ``scip``, ``cbc``,
``gurobi``). Both are warm-started from ``hint`` (every variable's value is derived from the hinted
placement). ``details`` reports ``combinatorial_bound`` (see the problems module), which also raises
the solver's bound when it is stronger.

:func:`improve` is a large-neighbourhood search over the same model for instances too large to close:
each round re-solves the items of a few sites with all other items fixed (:func:`neighbourhood_problem`,
an instance of this model with the full traffic objective restricted to the nets that can change).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from solvermap.formulations.decision import CpSatModel, Solved, solve_model
from solvermap.limits import check_estimate
from solvermap.formulations.problems.placement import (
    Placement,
    PlacementProblem,
    combinatorial_bound,
    distance,
    messages,
    objective,
    xy_route,
)
from solvermap.formulations.solver import (
    ModelBuilder,
    SolveResult,
    SolverConfig,
    Status,
    WorkClock,
    explain_infeasible,
    linear_sum,
    relative_gap,
)

NAME = "placement"
KIND = "milp"  # runs on every MILP backend; backend "cpsat" uses the native CP-SAT build


# --------------------------------------------------------------------------- shared preparation


@dataclass
class _Prep:
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


def _prepare(problem: PlacementProblem) -> _Prep:
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
    prep = _Prep(items, sites, pairs, nets, [], dist, big_m, problem.has_grid())
    if prep.grid:
        prep.rows = sorted({s.coord[0] for s in problem.sites})
        prep.cols = sorted({s.coord[1] for s in problem.sites})
    if problem.symmetric_sites and not problem.fixed:
        free_items = [k for k, it in enumerate(problem.items) if it.type == ""]
        free_sites = [s for s, site in enumerate(problem.sites) if not site.types]
        for rank, k in enumerate(free_items):
            prep.symmetry[k] = free_sites[: rank + 1]
    prep.targets = [sorted({t for j in sinks for t in _allowed(prep, j)}) for _, sinks, _ in nets]
    return prep


def _allowed(prep: _Prep, i: int) -> list[int]:
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


def _hint_values(problem: PlacementProblem, prep: _Prep, hint: Placement | None):
    """Site of every item and the (net, site) messages implied by the hint, or None."""
    if hint is None:
        return None
    index = problem.site_index()
    try:
        where = [index[hint.assignment[name]] for name in prep.items]
    except KeyError:
        return None
    if any(where[i] not in _allowed(prep, i) for i in range(len(where))):
        return None
    return where


# --------------------------------------------------------------------------- MILP build


@dataclass
class MilpPlacementModel:
    builder: ModelBuilder
    x: dict[tuple[int, int], Any]
    prep: _Prep


def build_milp(problem: PlacementProblem, config: SolverConfig, hint: Placement | None = None) -> MilpPlacementModel:
    prep = _prepare(problem)
    m = ModelBuilder(name=problem.name)
    x = {(i, s): m.binary(f"x[{prep.items[i]},{prep.sites[s]}]") for i in range(len(prep.items)) for s in _allowed(prep, i)}
    on = lambda i, s: x.get((i, s), 0.0)  # noqa: E731 - missing pair = fixed 0

    # assignment
    for i, name in enumerate(prep.items):
        m.add(linear_sum(x[i, s] for s in _allowed(prep, i)) == 1, group="assignment", name=name)
    # capacity
    for r in problem.resources():
        for s, site in enumerate(problem.sites):
            terms = [problem.items[i].demand.get(r, 0.0) * x[i, s] for i in range(len(prep.items))
                     if (i, s) in x and problem.items[i].demand.get(r, 0.0)]
            if terms:
                m.add(linear_sum(terms) <= site.capacity.get(r, 0.0), group="capacity", name=f"{site.name}.{r}")

    coord = [s.coord for s in problem.sites]
    objective_terms = []
    z: dict[tuple[int, int], Any] = {}
    h: dict[tuple[int, int], Any] = {}
    boxes: dict[int, tuple[Any, Any, Any, Any]] = {}
    if problem.broadcast == "tree":
        objective_terms = _tree_milp(problem, prep, m, x, boxes)
    for n, (src, sinks, weight) in enumerate(prep.nets if problem.broadcast != "tree" else ()):
        for t in prep.targets[n]:
            # reach
            if len(sinks) == 1:
                zt = on(sinks[0], t)
            else:
                zt = m.continuous(0.0, 1.0, name=f"z[{n},{t}]")
                for j in sinks:
                    if (j, t) in x:
                        m.add(zt >= x[j, t], group="reach", name=f"{n},{t},{prep.items[j]}")
            z[n, t] = zt
            # distance
            ht = m.continuous(0.0, prep.big_m, name=f"h[{n},{t}]")
            h[n, t] = ht
            if prep.grid:
                row_src = linear_sum(coord[s][0] * x[src, s] for s in _allowed(prep, src))
                col_src = linear_sum(coord[s][1] * x[src, s] for s in _allowed(prep, src))
                base = problem.hop_offset * (1 - on(src, t)) - prep.big_m * (1 - zt)
                for sr in (1, -1):
                    for sc in (1, -1):
                        m.add(ht >= sr * (row_src - coord[t][0]) + sc * (col_src - coord[t][1]) + base,
                              group="distance", name=f"{n},{t},{sr},{sc}")
            else:
                reach_dist = linear_sum(prep.dist[s][t] * x[src, s] for s in _allowed(prep, src) if prep.dist[s][t])
                m.add(ht >= reach_dist - prep.big_m * (1 - zt), group="distance", name=f"{n},{t}")
            objective_terms.append(weight * ht)

    total = linear_sum(objective_terms) if objective_terms else 0.0
    work_var = None
    if problem.balance_weight:
        work_var = m.continuous(0.0, name="W")
        for s, site in enumerate(problem.sites):
            terms = [problem.items[i].work * x[i, s] for i in range(len(prep.items)) if (i, s) in x and problem.items[i].work]
            if terms:
                m.add(work_var >= linear_sum(terms), group="balance", name=site.name)
        total = total + problem.balance_weight * work_var
    link_var = None
    if problem.link_weight and prep.grid and problem.broadcast != "tree":
        link_var = m.continuous(0.0, name="Lambda")
        loads = _link_usage_milp(problem, prep, m, x, z)
        for link, terms in loads.items():
            m.add(link_var >= linear_sum(terms), group="links", name=f"{link}")
        total = total + problem.link_weight * link_var
    m.minimize(total)

    where = _hint_values(problem, prep, canonical_hint(problem, hint))
    if where is not None:
        for (i, s), var in x.items():
            m.hint(var, 1.0 if where[i] == s else 0.0)
        for n, box in boxes.items():
            for var, value in zip(box, _box_of(prep, coord, n, where)):
                m.hint(var, value)
        for (n, t), var in h.items():
            src, sinks, _ = prep.nets[n]
            reached = any(where[j] == t for j in sinks)
            if not isinstance(z[n, t], (int, float)) and len(sinks) > 1:
                m.hint(z[n, t], 1.0 if reached else 0.0)
            m.hint(var, prep.dist[where[src]][t] if reached else 0.0)
    return MilpPlacementModel(m, x, prep)


def _terminals(prep: _Prep, n: int) -> list[int]:
    src, sinks, _ = prep.nets[n]
    return list(dict.fromkeys((src, *sinks)))


def _box_of(prep: _Prep, coord, n: int, where: list[int]) -> tuple[float, float, float, float]:
    """(R⁺, R⁻, C⁺, C⁻) of net n's terminals under a placement given as item → site index."""
    rows = [coord[where[j]][0] for j in _terminals(prep, n)]
    cols = [coord[where[j]][1] for j in _terminals(prep, n)]
    return max(rows), min(rows), max(cols), min(cols)


def _tree_milp(problem: PlacementProblem, prep: _Prep, m: ModelBuilder, x, boxes) -> list[Any]:
    """Bounding-box (half-perimeter) rows of ``broadcast='tree'``; returns the objective terms."""
    coord = [s.coord for s in problem.sites]
    lo_r, hi_r = min(c[0] for c in coord), max(c[0] for c in coord)
    lo_c, hi_c = min(c[1] for c in coord), max(c[1] for c in coord)
    terms = []
    for n, (_, _, weight) in enumerate(prep.nets):
        terminals = _terminals(prep, n)
        if len(terminals) < 2:
            continue
        r_hi, r_lo = m.continuous(lo_r, hi_r, name=f"Rmax[{n}]"), m.continuous(lo_r, hi_r, name=f"Rmin[{n}]")
        c_hi, c_lo = m.continuous(lo_c, hi_c, name=f"Cmax[{n}]"), m.continuous(lo_c, hi_c, name=f"Cmin[{n}]")
        boxes[n] = (r_hi, r_lo, c_hi, c_lo)
        for j in terminals:
            row = linear_sum(coord[s][0] * x[j, s] for s in _allowed(prep, j))
            col = linear_sum(coord[s][1] * x[j, s] for s in _allowed(prep, j))
            m.add(r_hi >= row, group="tree", name=f"{n},{prep.items[j]},r+")
            m.add(r_lo <= row, group="tree", name=f"{n},{prep.items[j]},r-")
            m.add(c_hi >= col, group="tree", name=f"{n},{prep.items[j]},c+")
            m.add(c_lo <= col, group="tree", name=f"{n},{prep.items[j]},c-")
        terms.append(weight * (r_hi - r_lo + c_hi - c_lo))
    return terms


def _tree_cpsat(problem: PlacementProblem, prep: _Prep, model, x, boxes) -> list[tuple[float, Any]]:
    """CP-SAT version of the bounding-box rows (integer coordinates); returns (coefficient, var) terms."""
    coord = [s.coord for s in problem.sites]
    lo_r, hi_r = min(c[0] for c in coord), max(c[0] for c in coord)
    lo_c, hi_c = min(c[1] for c in coord), max(c[1] for c in coord)
    terms = []
    for n, (_, _, weight) in enumerate(prep.nets):
        terminals = _terminals(prep, n)
        if len(terminals) < 2:
            continue
        r_hi, r_lo = model.NewIntVar(lo_r, hi_r, f"Rmax[{n}]"), model.NewIntVar(lo_r, hi_r, f"Rmin[{n}]")
        c_hi, c_lo = model.NewIntVar(lo_c, hi_c, f"Cmax[{n}]"), model.NewIntVar(lo_c, hi_c, f"Cmin[{n}]")
        boxes[n] = (r_hi, r_lo, c_hi, c_lo)
        for j in terminals:
            row = sum(coord[s][0] * x[j, s] for s in _allowed(prep, j))
            col = sum(coord[s][1] * x[j, s] for s in _allowed(prep, j))
            model.Add(r_hi >= row)
            model.Add(r_lo <= row)
            model.Add(c_hi >= col)
            model.Add(c_lo <= col)
        terms += [(weight, r_hi), (-weight, r_lo), (weight, c_hi), (-weight, c_lo)]
    return terms


def _route_indicators(problem: PlacementProblem, prep: _Prep, src: int, t: int, on):
    """For the message from (variable) ``src`` to fixed site ``t``: every link it may cross and the
    list of 0/1 expressions whose conjunction (with reach) means it does."""
    coord = [s.coord for s in problem.sites]
    allowed = _allowed(prep, src)
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


def _link_usage_milp(problem, prep, m, x, z):
    loads: dict[Any, list] = {}
    for n, (src, sinks, weight) in enumerate(prep.nets):
        for t in prep.targets[n]:
            for link, conds in _route_indicators(problem, prep, src, t, None):
                u = m.continuous(0.0, 1.0, name=f"u[{n},{t},{link}]")
                expr = z[n, t] + sum(linear_sum(x[src, s] for s in cond) for cond in conds) - len(conds)
                m.add(u >= expr, group="links", name=f"route{n},{t},{link}")
                loads.setdefault(link, []).append(weight * u)
    return loads


# --------------------------------------------------------------------------- native CP-SAT build


def _scale(values) -> int:
    """Smallest power of ten (≤ 10^6) making every value integral."""
    for power in range(7):
        factor = 10**power
        if all(abs(v * factor - round(v * factor)) < 1e-9 for v in values):
            return factor
    return 10**6


def build_cpsat(problem: PlacementProblem, config: SolverConfig, hint: Placement | None = None) -> CpSatModel:
    from ortools.sat.python import cp_model

    prep = _prepare(problem)
    model = cp_model.CpModel()
    x = {(i, s): model.NewBoolVar(f"x[{prep.items[i]},{prep.sites[s]}]") for i in range(len(prep.items)) for s in _allowed(prep, i)}
    for i in range(len(prep.items)):
        model.AddExactlyOne(x[i, s] for s in _allowed(prep, i))
    for r in problem.resources():
        dscale = _scale([it.demand.get(r, 0.0) for it in problem.items] + [s.capacity.get(r, 0.0) for s in problem.sites])
        for s, site in enumerate(problem.sites):
            terms = [(round(problem.items[i].demand.get(r, 0.0) * dscale), x[i, s]) for i in range(len(prep.items))
                     if (i, s) in x and problem.items[i].demand.get(r, 0.0)]
            if terms:
                model.Add(sum(c * v for c, v in terms) <= math.floor(site.capacity.get(r, 0.0) * dscale + 1e-9))

    dist_scale = _scale([d for row in prep.dist for d in row] + [problem.hop_offset])
    dist = [[round(d * dist_scale) for d in row] for row in prep.dist]
    big_m = max((max(row) for row in dist), default=0)
    offset = round(problem.hop_offset * dist_scale)
    coord = [s.coord for s in problem.sites]
    objective_terms = []
    z: dict[tuple[int, int], Any] = {}
    h: dict[tuple[int, int], Any] = {}
    boxes: dict[int, tuple[Any, Any, Any, Any]] = {}
    if problem.broadcast == "tree":
        objective_terms = _tree_cpsat(problem, prep, model, x, boxes)
    for n, (src, sinks, weight) in enumerate(prep.nets if problem.broadcast != "tree" else ()):
        for t in prep.targets[n]:
            if len(sinks) == 1:
                zt = x[sinks[0], t]
            else:
                zt = model.NewBoolVar(f"z[{n},{t}]")
                for j in sinks:
                    if (j, t) in x:
                        model.AddImplication(x[j, t], zt)
            z[n, t] = zt
            ht = model.NewIntVar(0, big_m, f"h[{n},{t}]")
            h[n, t] = ht
            src_here = x.get((src, t))
            if prep.grid:
                row_src = sum(coord[s][0] * dist_scale * x[src, s] for s in _allowed(prep, src))
                col_src = sum(coord[s][1] * dist_scale * x[src, s] for s in _allowed(prep, src))
                away = offset - offset * src_here if src_here is not None else offset
                for sr in (1, -1):
                    for sc in (1, -1):
                        model.Add(ht >= sr * (row_src - coord[t][0] * dist_scale) + sc * (col_src - coord[t][1] * dist_scale)
                                  + away).OnlyEnforceIf(zt)
            else:
                model.Add(ht >= sum(dist[s][t] * x[src, s] for s in _allowed(prep, src) if dist[s][t])).OnlyEnforceIf(zt)
            objective_terms.append((weight / dist_scale, ht))

    objective_expr = sum(c * v for c, v in objective_terms) if objective_terms else 0
    work_var = None
    if problem.balance_weight:
        wscale = _scale([it.work for it in problem.items])
        total_work = round(sum(it.work for it in problem.items) * wscale)
        work_var = model.NewIntVar(0, max(total_work, 0), "W")
        for s in range(len(prep.sites)):
            terms = [(round(problem.items[i].work * wscale), x[i, s]) for i in range(len(prep.items)) if (i, s) in x and problem.items[i].work]
            if terms:
                model.Add(work_var >= sum(c * v for c, v in terms))
        objective_expr = objective_expr + (problem.balance_weight / wscale) * work_var
    link_var = None
    u_vars: dict[tuple[int, int, Any], Any] = {}
    if problem.link_weight and prep.grid and problem.broadcast != "tree":
        lscale = _scale([w for _, _, w in prep.nets])
        total_weight = round(sum(w * len(prep.targets[n]) for n, (_, _, w) in enumerate(prep.nets)) * lscale)
        link_var = model.NewIntVar(0, max(total_weight, 0), "Lambda")
        loads: dict[Any, list] = {}
        for n, (src, sinks, weight) in enumerate(prep.nets):
            for t in prep.targets[n]:
                for link, conds in _route_indicators(problem, prep, src, t, None):
                    u = model.NewBoolVar(f"u[{n},{t},{link}]")
                    u_vars[n, t, link] = u
                    # u ≥ z ∧ every condition (a condition = the source lies in one of the listed sites)
                    lits = [z[n, t]]
                    for cond in conds:
                        c = model.NewBoolVar("")
                        model.Add(sum(x[src, s] for s in cond) >= 1).OnlyEnforceIf(c)
                        model.Add(sum(x[src, s] for s in cond) == 0).OnlyEnforceIf(c.Not())
                        lits.append(c)
                    model.AddBoolOr([lit.Not() for lit in lits] + [u])
                    loads.setdefault(link, []).append((round(weight * lscale), u))
        for link, terms in loads.items():
            model.Add(link_var >= sum(c * v for c, v in terms))
        objective_expr = objective_expr + (problem.link_weight / lscale) * link_var
    model.Minimize(objective_expr)

    where = _hint_values(problem, prep, canonical_hint(problem, hint))
    if where is not None:
        for (i, s), var in x.items():
            model.AddHint(var, where[i] == s)
        for n, box in boxes.items():
            for var, value in zip(box, _box_of(prep, coord, n, where)):
                model.AddHint(var, int(value))
        for (n, t), var in h.items():
            src, sinks, _ = prep.nets[n]
            reached = any(where[j] == t for j in sinks)
            if len(sinks) > 1:
                model.AddHint(z[n, t], reached)
            model.AddHint(var, dist[where[src]][t] if reached else 0)
    return CpSatModel(model, {"x": x, "prep": prep})


# --------------------------------------------------------------------------- solve / decode


def build(problem: PlacementProblem, config: SolverConfig, hint: Placement | None = None):
    if config.milp_backend() == "cpsat":
        return build_cpsat(problem, config, hint)
    return build_milp(problem, config, hint)


def decode(problem: PlacementProblem, built: Any, solution: Any) -> Placement:
    if isinstance(built, CpSatModel):
        x, prep = built.vars["x"], built.vars["prep"]
        chosen = {i: s for (i, s), var in x.items() if solution.BooleanValue(var)}
    else:
        x, prep = built.x, built.prep
        chosen = {i: s for (i, s), var in x.items() if solution.is_one(var)}
    return Placement({prep.items[i]: prep.sites[chosen[i]] for i in range(len(prep.items))})


def diagnose(problem: PlacementProblem) -> str | None:
    """Name the item, site or resource that makes the problem infeasible, before any model is built."""
    names = {s.name for s in problem.sites}
    if problem.broadcast == "tree" and not problem.has_grid():
        return "broadcast='tree' needs grid coordinates on every site (and no distance table)"
    for item, site in problem.fixed.items():
        if site not in names:
            return f"item {item!r} is fixed to unknown site {site!r}"
    for it in problem.items:
        sites = [s for s in problem.sites if problem.compatible(it, s)]
        if not sites:
            return f"item {it.name!r} (type {it.type!r}) has no compatible site"
        for r, amount in it.demand.items():
            if amount > max(s.capacity.get(r, 0.0) for s in sites) + 1e-9:
                return f"item {it.name!r} needs {amount:g} {r}; no compatible site has that much"
    for r in problem.resources():
        need = sum(it.demand.get(r, 0.0) for it in problem.items)
        have = sum(s.capacity.get(r, 0.0) for s in problem.sites)
        if need > have + 1e-9:
            return f"items need {need:g} {r} in total; the sites offer {have:g}"
    return None


def solve(problem: PlacementProblem, config: SolverConfig, hint: Placement | None = None) -> Solved[Placement]:
    """Build (CP-SAT or MILP by backend), solve, decode; the bound is raised to the combinatorial bound."""
    start = time.perf_counter()
    built = build(problem, config, hint)
    result, solution = solve_model(built, config)
    decision = decode(problem, built, solution) if result.status.has_solution else None
    explanation: list[str] = []
    if result.status == Status.INFEASIBLE and isinstance(built, MilpPlacementModel):
        explanation = explain_infeasible(built.builder, config)
    elif result.status == Status.INFEASIBLE:
        reason = diagnose(problem)
        explanation = [reason] if reason else ["assignment", "capacity"]
    comb = combinatorial_bound(problem)
    details: dict[str, Any] = {"combinatorial_bound": comb, "build_seconds": time.perf_counter() - start - result.solve_seconds,
                               "work": work_spent(built, solution, result, config)}
    if isinstance(built, MilpPlacementModel):
        details["model_size"] = built.builder.size()
    if decision is not None:
        value = objective(problem, decision)
        details["objective_recomputed"] = value
        bound = result.bound if result.bound is not None else 0.0
        bound = max(bound, comb) if bound is not None else comb
        bound = min(bound, value)
        status = Status.OPTIMAL if value - bound <= 1e-6 * max(1.0, abs(value)) else result.status
        if status == Status.OPTIMAL and result.status != Status.OPTIMAL:
            status = Status.OPTIMAL
        result = SolveResult(status, value, bound, relative_gap(value, bound), result.build_seconds, result.solve_seconds,
                             result.backend, result.solver_version, result.limit_reached, result.message)
    return Solved(result, decision, explanation, details)


MIN_SOLVE_WORK = 0.05  # work charged for any solve at least: the order of building and loading a small model


def work_spent(built: Any, solution: Any, result: SolveResult, config: SolverConfig) -> float:
    """Budget one solve used, in the units of ``config.time_limit_s``: CP-SAT's deterministic time
    (native build; at least ``MIN_SOLVE_WORK``, so that a run of many tiny solves still ends near its
    budget), the whole work budget on other backends (deterministic, conservative), and wall seconds
    when ``config.deterministic`` is off. Summed by callers that split one budget over many
    solves (:func:`improve`, the PUMA stages), so that same config means same answer."""
    if not config.deterministic:
        return result.solve_seconds
    if isinstance(built, CpSatModel):
        work = getattr(solution, "deterministic_time", None)  # a property of CpSolver (OR-Tools ≥ 9.10)
        if work is not None:
            return max(MIN_SOLVE_WORK, float(work() if callable(work) else work))
    budget = config.work_budget()
    return float(budget) if budget is not None else result.solve_seconds


# --------------------------------------------------------------------------- large-neighbourhood search


def neighbourhood_problem(problem: PlacementProblem, current: Placement, free_sites: list[str],
                          free_items: list[str] | None = None) -> tuple[PlacementProblem, float]:
    """The sub-problem of moving ``free_items`` (default: every movable item on ``free_sites``) among
    ``free_sites`` with every other item fixed where ``current`` puts it.

    Items sharing a net with a free item stay as fixed *context* items (no demand) on *context* sites
    (their own sites, typed so that no free item may enter); nets without a free member are dropped —
    their cost does not change. The sub-problem's traffic + the dropped nets' traffic = the traffic of
    the whole placement, so improving the sub-problem improves the whole. Balance and link terms are
    global maxima and are left out (the caller compares full objectives). Returns the sub-problem and
    the dropped nets' traffic (a constant)."""
    from solvermap.formulations.problems.placement import Item, Site

    index = problem.site_index()
    chosen = set(free_sites)
    if free_items is None:
        free_items = [it.name for it in problem.items
                      if current.assignment[it.name] in chosen and it.name not in problem.fixed
                      and sum(1 for s in free_sites if problem.compatible(it, problem.sites[index[s]])) > 1]
    free = set(free_items)
    items = {it.name: it for it in problem.items}
    nets, constant = [], 0.0
    context: dict[str, str] = {}
    for net in problem.nets:
        members = (net.source, *net.sinks)
        if any(m in free for m in members):
            nets.append(net)
            context.update({m: current.assignment[m] for m in members if m not in free})
        else:
            constant += _net_traffic(problem, current, net)
    # non-free items on the free sites keep their demand there (fixed); other context items need nothing
    for it in problem.items:
        if it.name not in free and current.assignment[it.name] in chosen:
            context[it.name] = current.assignment[it.name]
    sub_items = [items[n] for n in free_items]
    for name, site in context.items():
        it = items[name]
        sub_items.append(it if site in chosen else Item(it.name, {}, "__context__", 0.0))
    sites = []
    used = sorted(set(context.values()) | chosen, key=index.get)
    for name in used:
        site = problem.sites[index[name]]
        sites.append(site if name in chosen else Site(site.name, {}, site.coord, ("__context__",)))
    distances = None
    if problem.distances is not None or problem.broadcast != "tree":  # a table: one distance row per message
        distances = tuple(tuple(distance(problem, index[a], index[b]) for b in used) for a in used)
    sub = PlacementProblem(tuple(sub_items), tuple(sites), tuple(nets), problem.hop_offset, distances, problem.broadcast,
                           fixed=context, name=f"{problem.name}-neighbourhood")
    return sub, constant


def _net_traffic(problem: PlacementProblem, placement: Placement, net) -> float:
    one = PlacementProblem(problem.items, problem.sites, (net,), problem.hop_offset, problem.distances, problem.broadcast)
    return objective(one, placement)


def improve(problem: PlacementProblem, config: SolverConfig, start: Placement, *, sites_per_round: int = 3,
            max_free_items: int = 160, max_sites_used: int | None = None, rounds: int | None = None,
            neighbourhoods=None, sub_time_limit_s: float = 5.0) -> Solved[Placement]:
    """Large-neighbourhood search over this model with the full objective (LNS, warm-started).

    Each round frees the items of a few sites — a seed site drawn with probability ∝ the traffic it
    shares with other sites, then sites drawn ∝ the weight of the nets they share with the chosen ones
    (one time in five uniformly among the sites in use), up to
    ``sites_per_round`` sites or ``max_free_items`` items; after as many fruitless rounds as sites in
    use, neighbourhoods grow by one site, up to three more, with proportionally more items and time) — and re-solves their placement among those
    sites with every other item fixed (:func:`neighbourhood_problem`), warm-started from the current
    placement (``sub_time_limit_s`` each); a strictly better whole placement replaces the current one.
    ``neighbourhoods`` (an
    iterator of site-name lists) replaces the built-in choice. Empty sites join a neighbourhood only
    while fewer than ``max_sites_used`` sites are in use (None: no limit). Stops when
    ``config.time_limit_s`` is spent (:class:`WorkClock`: with ``config.deterministic``, the sum of the
    sub-solves' deterministic work, so the same config and seed give the same answer on any machine
    load), after ``rounds`` rounds, or when a full sweep of seed sites finds nothing. The result has no
    dual bound of its own (``bound`` = the combinatorial bound); ``details`` has the trajectory (budget
    spent, objective) and ``work`` (budget spent)."""
    import random

    rng = random.Random(config.seed)
    t0 = time.perf_counter()
    clock = WorkClock(config)
    limit = config.time_limit_s
    current = start
    value = objective(problem, current)
    trajectory = [(0.0, value)]
    index = problem.site_index()
    movable = [it for it in problem.items if it.name not in problem.fixed
               and sum(1 for s in problem.sites if problem.compatible(it, s)) > 1]
    solves = 0
    stale = 0
    records: list[SolveResult] = []

    def site_traffic() -> dict[tuple[str, str], float]:
        """Weight of the nets two sites take part in together (source–destination and sibling
        destinations alike: moving items between siblings can merge or split a broadcast)."""
        pairs: dict[tuple[str, str], float] = {}
        for net in problem.nets:
            names = sorted({current.assignment[m] for m in (net.source, *net.sinks)})
            if len(names) > 12:  # a very wide net relates everything a little; skip it
                continue
            for i, a in enumerate(names):
                for b in names[i + 1:]:
                    pairs[a, b] = pairs.get((a, b), 0.0) + net.weight
        return pairs

    def default_neighbourhoods():
        while True:
            pairs = site_traffic()
            used = sorted({current.assignment[it.name] for it in movable}, key=index.get)
            outward = {s: 0.0 for s in used}
            for (a, b), w in pairs.items():
                for s in (a, b):
                    if s in outward:
                        outward[s] += w
            seeds = [s for s in used if outward[s] > 0] or used
            rng.shuffle(seeds)
            seeds.sort(key=lambda s: -outward[s] * rng.random())
            for seed_site in seeds:
                chosen = [seed_site]
                while len(chosen) < size[0]:
                    links = {}
                    for (a, b), w in pairs.items():
                        for x, y in ((a, b), (b, a)):
                            if x in chosen and y not in chosen and y in outward:
                                links[y] = links.get(y, 0.0) + w
                    candidates = list(links) if links and rng.random() < 0.8 else [s for s in used if s not in chosen]
                    if not candidates:
                        break
                    weights = [links.get(c, 0.0) + 1e-9 for c in candidates]
                    chosen.append(rng.choices(candidates, weights)[0])
                if max_sites_used is None or len(used) < max_sites_used:
                    empty = [s.name for s in problem.sites if s.name not in used and not s.types]
                    if empty:
                        chosen.append(rng.choice(empty[: max(1, sites_per_round)]))
                yield chosen

    size = [sites_per_round]  # grows while rounds find nothing (up to sites_per_round + 3), back after a success
    source = iter(neighbourhoods) if neighbourhoods is not None else default_neighbourhoods()
    last_improvement_round = 0
    round_no = 0
    for free_sites in source:
        left = clock.left()
        if (left is not None and left < 0.2) or (rounds is not None and round_no >= rounds):
            break
        round_no += 1
        growth = size[0] / max(1, sites_per_round)
        free = [it.name for it in movable if current.assignment[it.name] in set(free_sites)]
        if len(free) > max_free_items * growth:
            free = rng.sample(free, int(max_free_items * growth))
        if not free:
            continue
        sub, _ = neighbourhood_problem(problem, current, list(free_sites), free)
        remaining = sub_time_limit_s * growth
        remaining = remaining if left is None else max(0.2, min(left, remaining))
        solved = solve(sub, config.with_(time_limit_s=remaining), current)
        clock.charge(solved.details["work"])
        solves += 1
        records.append(solved.result)
        if solved.decision is None:
            continue
        candidate = Placement({**current.assignment, **{n: solved.decision.assignment[n] for n in free}})
        new_value = objective(problem, candidate)
        if new_value < value - 1e-9 * max(1.0, abs(value)):
            current, value = candidate, new_value
            trajectory.append((clock.elapsed(), value))
            last_improvement_round = round_no
            stale = 0
            size[0] = sites_per_round
        else:
            stale += 1
        if neighbourhoods is None:
            used_count = len({current.assignment[it.name] for it in movable})
            if stale >= max(4, used_count):
                if size[0] >= min(used_count, sites_per_round + 3):
                    break
                size[0] += 1
                stale = 0
    comb = combinatorial_bound(problem)
    bound = min(comb, value)
    status = Status.OPTIMAL if value - bound <= 1e-6 * max(1.0, abs(value)) else Status.FEASIBLE
    solve_seconds = sum(r.solve_seconds for r in records)
    result = SolveResult(status, value, bound, relative_gap(value, bound), time.perf_counter() - t0 - solve_seconds,
                         solve_seconds, records[-1].backend if records else config.milp_backend(),
                         records[-1].solver_version if records else "", limit is not None, "lns")
    details = {"rounds": round_no, "solves": solves, "trajectory": trajectory, "last_improvement_round": last_improvement_round,
               "combinatorial_bound": comb, "work": clock.spent if clock.deterministic else clock.elapsed()}
    return Solved(result, current, [], details)


def message_count(problem: PlacementProblem, placement: Placement) -> int:
    """Number of messages (net, destination site) the placement implies (reporting helper)."""
    return len(messages(problem, placement))


__all__ = ["NAME", "KIND", "build", "build_cpsat", "build_milp", "decode", "diagnose", "solve", "improve", "neighbourhood_problem",
           "xy_route", "message_count"]
