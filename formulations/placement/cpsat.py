"""The placement model as a native CP-SAT model (``backend: cpsat``): ``OnlyEnforceIf`` replaces the big-M
terms, distances and works are integer-scaled, the objective keeps float coefficients."""

from __future__ import annotations

import math
from typing import Any

from solvermap.formulations.decision import CpSatModel
from solvermap.formulations.placement.prep import Prep, allowed_sites, capacity_terms, coordinate_terms, grid_ranges
from solvermap.formulations.placement.prep import messages_of, prepare, route_indicators, tree_nets, warm_start, work_terms
from solvermap.formulations.problems.placement import Placement, PlacementProblem
from solvermap.formulations.solver import SolverConfig


def _scale(values) -> int:
    """Smallest power of ten (≤ 10^6) making every value integral."""
    for power in range(7):
        factor = 10**power
        if all(abs(v * factor - round(v * factor)) < 1e-9 for v in values):
            return factor
    return 10**6


def build_cpsat(problem: PlacementProblem, config: SolverConfig, hint: Placement | None = None) -> CpSatModel:
    from ortools.sat.python import cp_model

    prep = prepare(problem)
    model = cp_model.CpModel()
    x = {(i, s): model.NewBoolVar(f"x[{prep.items[i]},{prep.sites[s]}]") for i in range(len(prep.items)) for s in allowed_sites(prep, i)}
    for i in range(len(prep.items)):
        model.AddExactlyOne(x[i, s] for s in allowed_sites(prep, i))
    scales: dict[str, int] = {}
    for r, site, terms in capacity_terms(problem, prep, x):
        if r not in scales:
            scales[r] = _scale([it.demand.get(r, 0.0) for it in problem.items] + [s.capacity.get(r, 0.0) for s in problem.sites])
        scaled = [(round(c * scales[r]), v) for c, v in terms]
        model.Add(sum(c * v for c, v in scaled) <= math.floor(site.capacity.get(r, 0.0) * scales[r] + 1e-9))
    dist_scale = _scale([d for row in prep.dist for d in row] + [problem.hop_offset])
    dist = [[round(d * dist_scale) for d in row] for row in prep.dist]
    boxes: dict[int, tuple[Any, Any, Any, Any]] = {}
    objective_terms = _tree_cpsat(problem, prep, model, x, boxes) if problem.broadcast == "tree" else []
    big_m = max((max(row) for row in dist), default=0)
    z: dict[tuple[int, int], Any] = {}
    h: dict[tuple[int, int], Any] = {}
    for n, t, src, sinks, weight in messages_of(problem, prep):
        z[n, t] = _reach_cpsat(model, x, n, t, sinks)
        h[n, t] = model.NewIntVar(0, big_m, f"h[{n},{t}]")
        _distance_cpsat(problem, prep, model, x, t, src, z[n, t], h[n, t], dist, dist_scale)
        objective_terms.append((weight / dist_scale, h[n, t]))
    objective_expr = sum(c * v for c, v in objective_terms) if objective_terms else 0
    if problem.balance_weight:
        objective_expr = objective_expr + _balance_cpsat(problem, prep, model, x)
    if problem.link_weight and prep.grid and problem.broadcast != "tree":
        objective_expr = objective_expr + _links_cpsat(problem, prep, model, x, z)
    model.Minimize(objective_expr)
    for var, value in warm_start(problem, prep, hint, x, boxes, z, h, lambda s, t: dist[s][t]):
        model.AddHint(var, int(value))
    return CpSatModel(model, {"x": x, "prep": prep})


def _reach_cpsat(model, x, n: int, t: int, sinks: tuple[int, ...]) -> Any:
    """reach: z[n,t] ⇐ x[j,t] for the sinks j (x[j,t] itself for one sink)."""
    if len(sinks) == 1:
        return x[sinks[0], t]
    zt = model.NewBoolVar(f"z[{n},{t}]")
    for j in sinks:
        if (j, t) in x:
            model.AddImplication(x[j, t], zt)
    return zt


def _distance_cpsat(problem: PlacementProblem, prep: Prep, model, x, t: int, src: int, zt, ht, dist, dist_scale: int) -> None:
    """distance: h[n,t] ≥ the source's (scaled) distance to t, enforced if z[n,t] (4 sign rows on a grid)."""
    if not prep.grid:
        model.Add(ht >= sum(dist[s][t] * x[src, s] for s in allowed_sites(prep, src) if dist[s][t])).OnlyEnforceIf(zt)
        return
    offset = round(problem.hop_offset * dist_scale)
    coord = problem.sites[t].coord
    rows, cols = coordinate_terms(problem, prep, x, src)
    row_src, col_src = sum(c * dist_scale * v for c, v in rows), sum(c * dist_scale * v for c, v in cols)
    src_here = x.get((src, t))
    away = offset - offset * src_here if src_here is not None else offset
    for sr in (1, -1):
        for sc in (1, -1):
            model.Add(ht >= sr * (row_src - coord[0] * dist_scale) + sc * (col_src - coord[1] * dist_scale)
                      + away).OnlyEnforceIf(zt)


def _balance_cpsat(problem: PlacementProblem, prep: Prep, model, x) -> Any:
    """balance: W ≥ the (scaled) work of every site; returns λ·W."""
    wscale = _scale([it.work for it in problem.items])
    work_var = model.NewIntVar(0, max(round(sum(it.work for it in problem.items) * wscale), 0), "W")
    for _, terms in work_terms(problem, prep, x):
        model.Add(work_var >= sum(round(c * wscale) * v for c, v in terms))
    return (problem.balance_weight / wscale) * work_var


def _links_cpsat(problem: PlacementProblem, prep: Prep, model, x, z) -> Any:
    """links: u ⇐ z ∧ every route condition (a condition = the source lies in one of the listed sites),
    Λ ≥ the (scaled) load of every link; returns μ·Λ."""
    lscale = _scale([w for _, _, w in prep.nets])
    total_weight = round(sum(w * len(prep.targets[n]) for n, (_, _, w) in enumerate(prep.nets)) * lscale)
    link_var = model.NewIntVar(0, max(total_weight, 0), "Lambda")
    loads: dict[Any, list] = {}
    for n, t, src, sinks, weight in messages_of(problem, prep):
        for link, conds in route_indicators(problem, prep, src, t, None):
            u = model.NewBoolVar(f"u[{n},{t},{link}]")
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
    return (problem.link_weight / lscale) * link_var


def _tree_cpsat(problem: PlacementProblem, prep: Prep, model, x, boxes) -> list[tuple[float, Any]]:
    """tree: the bounding-box rows (integer coordinates); returns (coefficient, var) terms."""
    (lo_r, hi_r), (lo_c, hi_c) = grid_ranges(problem)
    terms = []
    for n, weight, terminals in tree_nets(prep):
        box = boxes[n] = (model.NewIntVar(lo_r, hi_r, f"Rmax[{n}]"), model.NewIntVar(lo_r, hi_r, f"Rmin[{n}]"),
                          model.NewIntVar(lo_c, hi_c, f"Cmax[{n}]"), model.NewIntVar(lo_c, hi_c, f"Cmin[{n}]"))
        for j in terminals:
            rows, cols = (sum(c * v for c, v in side) for side in coordinate_terms(problem, prep, x, j))
            for var, axis, upper in zip(box, (rows, rows, cols, cols), (True, False, True, False)):
                model.Add(var >= axis if upper else var <= axis)
        terms += [(weight, box[0]), (-weight, box[1]), (weight, box[2]), (-weight, box[3])]
    return terms
