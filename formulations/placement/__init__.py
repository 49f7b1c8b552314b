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

Builds: a native CP-SAT model (:mod:`.cpsat`, ``backend: cpsat``; ``OnlyEnforceIf`` replaces the big-M
terms, distances and works are integer-scaled, the objective keeps float coefficients) and the MILP above
(:mod:`.milp`) through :class:`~solvermap.formulations.solver.ModelBuilder` (``highs``, ``scip``, ``cbc``,
``gurobi``); index sets both use: :mod:`.prep`. Both are warm-started from ``hint`` (every variable's
value is derived from the hinted placement). ``details`` reports ``combinatorial_bound`` (see the problems
module), which also raises the solver's bound when it is stronger, and ``work`` (the deterministic work
charged, :func:`~solvermap.formulations.strategy.spent_by`).

:func:`improve` (:mod:`.search`) is a large-neighbourhood search over the same model for instances too
large to close: each round re-solves the items of a few sites with all other items fixed
(:func:`neighbourhood_problem`, an instance of this model with the full traffic objective restricted to the
nets that can change), run by :func:`solvermap.formulations.strategy.lns`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from solvermap.formulations.decision import CpSatModel, Solved, solve_model
from solvermap.formulations.placement.cpsat import build_cpsat
from solvermap.formulations.placement.milp import MilpPlacementModel, build_milp
from solvermap.formulations.placement.search import improve, neighbourhood_problem
from solvermap.formulations.problems.placement import Placement, PlacementProblem, combinatorial_bound, messages, objective, xy_route
from solvermap.formulations.solver import SolverConfig, Status, explain_infeasible, relative_gap
from solvermap.formulations.strategy import MIN_SOLVE_WORK, spent_by

NAME = "placement"
KIND = "milp"  # runs on every MILP backend; backend "cpsat" uses the native CP-SAT build


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
                               "work": spent_by(result, config)}
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
        result = dataclasses.replace(result, status=status, objective=value, bound=bound, gap=relative_gap(value, bound))
    return Solved(result, decision, explanation, details)



def message_count(problem: PlacementProblem, placement: Placement) -> int:
    """Number of messages (net, destination site) the placement implies (reporting helper)."""
    return len(messages(problem, placement))


__all__ = ["NAME", "KIND", "build", "build_cpsat", "build_milp", "decode", "diagnose", "solve", "improve", "neighbourhood_problem",
           "xy_route", "message_count", "MIN_SOLVE_WORK"]
