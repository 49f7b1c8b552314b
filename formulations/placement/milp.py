"""The placement MILP (the model of :mod:`solvermap.formulations.placement`) through
:class:`~solvermap.formulations.solver.ModelBuilder`, for ``highs``, ``scip``, ``cbc`` and ``gurobi``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solvermap.formulations.placement.prep import (
    Prep,
    allowed_sites,
    capacity_terms,
    coordinate_terms,
    grid_ranges,
    messages_of,
    prepare,
    route_indicators,
    tree_nets,
    warm_start,
    work_terms,
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
    for i, name in enumerate(prep.items):
        m.add(linear_sum(x[i, s] for s in allowed_sites(prep, i)) == 1, group="assignment", name=name)
    for r, site, terms in capacity_terms(problem, prep, x):
        m.add(linear_sum(c * v for c, v in terms) <= site.capacity.get(r, 0.0), group="capacity", name=f"{site.name}.{r}")
    boxes: dict[int, tuple[Any, Any, Any, Any]] = {}
    objective_terms = _tree_milp(problem, prep, m, x, boxes) if problem.broadcast == "tree" else []
    z: dict[tuple[int, int], Any] = {}
    h: dict[tuple[int, int], Any] = {}
    for n, t, src, sinks, weight in messages_of(problem, prep):
        z[n, t] = _reach_milp(prep, m, x, n, t, sinks)
        h[n, t] = m.continuous(0.0, prep.big_m, name=f"h[{n},{t}]")
        _distance_milp(problem, prep, m, x, n, t, src, z[n, t], h[n, t])
        objective_terms.append(weight * h[n, t])
    total = linear_sum(objective_terms) if objective_terms else 0.0
    if problem.balance_weight:
        work_var = m.continuous(0.0, name="W")
        for site, terms in work_terms(problem, prep, x):
            m.add(work_var >= linear_sum(c * v for c, v in terms), group="balance", name=site.name)
        total = total + problem.balance_weight * work_var
    if problem.link_weight and prep.grid and problem.broadcast != "tree":
        link_var = m.continuous(0.0, name="Lambda")
        for link, terms in _link_usage_milp(problem, prep, m, x, z).items():
            m.add(link_var >= linear_sum(terms), group="links", name=f"{link}")
        total = total + problem.link_weight * link_var
    m.minimize(total)
    for var, value in warm_start(problem, prep, hint, x, boxes, z, h, lambda s, t: prep.dist[s][t]):
        m.hint(var, value)
    return MilpPlacementModel(m, x, prep)


def _reach_milp(prep: Prep, m: ModelBuilder, x, n: int, t: int, sinks: tuple[int, ...]) -> Any:
    """reach: z[n,t] ≥ x[j,t] for the sinks j (x[j,t] itself for one sink; 0 where j cannot go)."""
    if len(sinks) == 1:
        return x.get((sinks[0], t), 0.0)
    zt = m.continuous(0.0, 1.0, name=f"z[{n},{t}]")
    for j in sinks:
        if (j, t) in x:
            m.add(zt >= x[j, t], group="reach", name=f"{n},{t},{prep.items[j]}")
    return zt


def _distance_milp(problem: PlacementProblem, prep: Prep, m: ModelBuilder, x, n: int, t: int, src: int, zt, ht) -> None:
    """distance: h[n,t] ≥ the source's distance to t when z[n,t] (big-M; 4 sign rows on a grid)."""
    if not prep.grid:
        reach_dist = linear_sum(prep.dist[s][t] * x[src, s] for s in allowed_sites(prep, src) if prep.dist[s][t])
        m.add(ht >= reach_dist - prep.big_m * (1 - zt), group="distance", name=f"{n},{t}")
        return
    coord = problem.sites[t].coord
    rows, cols = coordinate_terms(problem, prep, x, src)
    row_src, col_src = linear_sum(c * v for c, v in rows), linear_sum(c * v for c, v in cols)
    base = problem.hop_offset * (1 - x.get((src, t), 0.0)) - prep.big_m * (1 - zt)
    for sr in (1, -1):
        for sc in (1, -1):
            m.add(ht >= sr * (row_src - coord[0]) + sc * (col_src - coord[1]) + base,
                  group="distance", name=f"{n},{t},{sr},{sc}")


def _tree_milp(problem: PlacementProblem, prep: Prep, m: ModelBuilder, x, boxes) -> list[Any]:
    """tree: the bounding-box (half-perimeter) rows of ``broadcast='tree'``; returns the objective terms."""
    (lo_r, hi_r), (lo_c, hi_c) = grid_ranges(problem)
    terms = []
    for n, weight, terminals in tree_nets(prep):
        box = boxes[n] = (m.continuous(lo_r, hi_r, name=f"Rmax[{n}]"), m.continuous(lo_r, hi_r, name=f"Rmin[{n}]"),
                          m.continuous(lo_c, hi_c, name=f"Cmax[{n}]"), m.continuous(lo_c, hi_c, name=f"Cmin[{n}]"))
        for j in terminals:
            rows, cols = (linear_sum(c * v for c, v in side) for side in coordinate_terms(problem, prep, x, j))
            for var, axis, upper, tag in zip(box, (rows, rows, cols, cols), (True, False, True, False), ("r+", "r-", "c+", "c-")):
                m.add(var >= axis if upper else var <= axis, group="tree", name=f"{n},{prep.items[j]},{tag}")
        terms.append(weight * (box[0] - box[1] + box[2] - box[3]))
    return terms


def _link_usage_milp(problem, prep, m, x, z):
    """links: u[n,t,e] ≥ z + the route's conditions − their count; the loads per link."""
    loads: dict[Any, list] = {}
    for n, t, src, sinks, weight in messages_of(problem, prep):
        for link, conds in route_indicators(problem, prep, src, t, None):
            u = m.continuous(0.0, 1.0, name=f"u[{n},{t},{link}]")
            expr = z[n, t] + sum(linear_sum(x[src, s] for s in cond) for cond in conds) - len(conds)
            m.add(u >= expr, group="links", name=f"route{n},{t},{link}")
            loads.setdefault(link, []).append(weight * u)
    return loads
