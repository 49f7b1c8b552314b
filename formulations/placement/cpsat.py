"""The placement model as a native CP-SAT model (``backend: cpsat``): ``OnlyEnforceIf`` replaces the big-M
terms, distances and works are integer-scaled, the objective keeps float coefficients."""

from __future__ import annotations

import math
from typing import Any

from solvermap.formulations.decision import CpSatModel
from solvermap.formulations.placement.prep import (
    Prep,
    allowed_sites,
    box_of,
    canonical_hint,
    hint_sites,
    net_terminals,
    prepare,
    route_indicators,
)
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
                row_src = sum(coord[s][0] * dist_scale * x[src, s] for s in allowed_sites(prep, src))
                col_src = sum(coord[s][1] * dist_scale * x[src, s] for s in allowed_sites(prep, src))
                away = offset - offset * src_here if src_here is not None else offset
                for sr in (1, -1):
                    for sc in (1, -1):
                        model.Add(ht >= sr * (row_src - coord[t][0] * dist_scale) + sc * (col_src - coord[t][1] * dist_scale)
                                  + away).OnlyEnforceIf(zt)
            else:
                model.Add(ht >= sum(dist[s][t] * x[src, s] for s in allowed_sites(prep, src) if dist[s][t])).OnlyEnforceIf(zt)
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
                for link, conds in route_indicators(problem, prep, src, t, None):
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

    where = hint_sites(problem, prep, canonical_hint(problem, hint))
    if where is not None:
        for (i, s), var in x.items():
            model.AddHint(var, where[i] == s)
        for n, box in boxes.items():
            for var, value in zip(box, box_of(prep, coord, n, where)):
                model.AddHint(var, int(value))
        for (n, t), var in h.items():
            src, sinks, _ = prep.nets[n]
            reached = any(where[j] == t for j in sinks)
            if len(sinks) > 1:
                model.AddHint(z[n, t], reached)
            model.AddHint(var, dist[where[src]][t] if reached else 0)
    return CpSatModel(model, {"x": x, "prep": prep})



def _tree_cpsat(problem: PlacementProblem, prep: Prep, model, x, boxes) -> list[tuple[float, Any]]:
    """CP-SAT version of the bounding-box rows (integer coordinates); returns (coefficient, var) terms."""
    coord = [s.coord for s in problem.sites]
    lo_r, hi_r = min(c[0] for c in coord), max(c[0] for c in coord)
    lo_c, hi_c = min(c[1] for c in coord), max(c[1] for c in coord)
    terms = []
    for n, (_, _, weight) in enumerate(prep.nets):
        terminals = net_terminals(prep, n)
        if len(terminals) < 2:
            continue
        r_hi, r_lo = model.NewIntVar(lo_r, hi_r, f"Rmax[{n}]"), model.NewIntVar(lo_r, hi_r, f"Rmin[{n}]")
        c_hi, c_lo = model.NewIntVar(lo_c, hi_c, f"Cmax[{n}]"), model.NewIntVar(lo_c, hi_c, f"Cmin[{n}]")
        boxes[n] = (r_hi, r_lo, c_hi, c_lo)
        for j in terminals:
            row = sum(coord[s][0] * x[j, s] for s in allowed_sites(prep, j))
            col = sum(coord[s][1] * x[j, s] for s in allowed_sites(prep, j))
            model.Add(r_hi >= row)
            model.Add(r_lo <= row)
            model.Add(c_hi >= col)
            model.Add(c_lo <= col)
        terms += [(weight, r_hi), (-weight, r_lo), (weight, c_hi), (-weight, c_lo)]
    return terms

