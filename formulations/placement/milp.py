"""The placement MILP (the model of :mod:`solvermap.formulations.placement`) through
:class:`~solvermap.formulations.solver.ModelBuilder`, for ``highs``, ``scip``, ``cbc`` and ``gurobi``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
from solvermap.formulations.solver import ModelBuilder, SolverConfig, linear_sum


@dataclass
class MilpPlacementModel:
    builder: ModelBuilder
    x: dict[tuple[int, int], Any]
    prep: Prep


def build_milp(problem: PlacementProblem, config: SolverConfig, hint: Placement | None = None) -> MilpPlacementModel:
    prep = prepare(problem)
    m = ModelBuilder(name=problem.name)
    x = {(i, s): m.binary(f"x[{prep.items[i]},{prep.sites[s]}]") for i in range(len(prep.items)) for s in allowed_sites(prep, i)}
    on = lambda i, s: x.get((i, s), 0.0)  # noqa: E731 - missing pair = fixed 0

    # assignment
    for i, name in enumerate(prep.items):
        m.add(linear_sum(x[i, s] for s in allowed_sites(prep, i)) == 1, group="assignment", name=name)
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
                row_src = linear_sum(coord[s][0] * x[src, s] for s in allowed_sites(prep, src))
                col_src = linear_sum(coord[s][1] * x[src, s] for s in allowed_sites(prep, src))
                base = problem.hop_offset * (1 - on(src, t)) - prep.big_m * (1 - zt)
                for sr in (1, -1):
                    for sc in (1, -1):
                        m.add(ht >= sr * (row_src - coord[t][0]) + sc * (col_src - coord[t][1]) + base,
                              group="distance", name=f"{n},{t},{sr},{sc}")
            else:
                reach_dist = linear_sum(prep.dist[s][t] * x[src, s] for s in allowed_sites(prep, src) if prep.dist[s][t])
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

    where = hint_sites(problem, prep, canonical_hint(problem, hint))
    if where is not None:
        for (i, s), var in x.items():
            m.hint(var, 1.0 if where[i] == s else 0.0)
        for n, box in boxes.items():
            for var, value in zip(box, box_of(prep, coord, n, where)):
                m.hint(var, value)
        for (n, t), var in h.items():
            src, sinks, _ = prep.nets[n]
            reached = any(where[j] == t for j in sinks)
            if not isinstance(z[n, t], (int, float)) and len(sinks) > 1:
                m.hint(z[n, t], 1.0 if reached else 0.0)
            m.hint(var, prep.dist[where[src]][t] if reached else 0.0)
    return MilpPlacementModel(m, x, prep)



def _tree_milp(problem: PlacementProblem, prep: Prep, m: ModelBuilder, x, boxes) -> list[Any]:
    """Bounding-box (half-perimeter) rows of ``broadcast='tree'``; returns the objective terms."""
    coord = [s.coord for s in problem.sites]
    lo_r, hi_r = min(c[0] for c in coord), max(c[0] for c in coord)
    lo_c, hi_c = min(c[1] for c in coord), max(c[1] for c in coord)
    terms = []
    for n, (_, _, weight) in enumerate(prep.nets):
        terminals = net_terminals(prep, n)
        if len(terminals) < 2:
            continue
        r_hi, r_lo = m.continuous(lo_r, hi_r, name=f"Rmax[{n}]"), m.continuous(lo_r, hi_r, name=f"Rmin[{n}]")
        c_hi, c_lo = m.continuous(lo_c, hi_c, name=f"Cmax[{n}]"), m.continuous(lo_c, hi_c, name=f"Cmin[{n}]")
        boxes[n] = (r_hi, r_lo, c_hi, c_lo)
        for j in terminals:
            row = linear_sum(coord[s][0] * x[j, s] for s in allowed_sites(prep, j))
            col = linear_sum(coord[s][1] * x[j, s] for s in allowed_sites(prep, j))
            m.add(r_hi >= row, group="tree", name=f"{n},{prep.items[j]},r+")
            m.add(r_lo <= row, group="tree", name=f"{n},{prep.items[j]},r-")
            m.add(c_hi >= col, group="tree", name=f"{n},{prep.items[j]},c+")
            m.add(c_lo <= col, group="tree", name=f"{n},{prep.items[j]},c-")
        terms.append(weight * (r_hi - r_lo + c_hi - c_lo))
    return terms



def _link_usage_milp(problem, prep, m, x, z):
    loads: dict[Any, list] = {}
    for n, (src, sinks, weight) in enumerate(prep.nets):
        for t in prep.targets[n]:
            for link, conds in route_indicators(problem, prep, src, t, None):
                u = m.continuous(0.0, 1.0, name=f"u[{n},{t},{link}]")
                expr = z[n, t] + sum(linear_sum(x[src, s] for s in cond) for cond in conds) - len(conds)
                m.add(u >= expr, group="links", name=f"route{n},{t},{link}")
                loads.setdefault(link, []).append(weight * u)
    return loads

