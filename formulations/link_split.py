"""Hybrid static/dynamic split of logical links as an ILP (seed 004 L318–320).

Problem, decision and objective: :mod:`solvermap.formulations.problems.link_split`.

Sets      N logical links (nets) with source s_n, sinks K_n, class c_n, importance a_n = activation ×
          fanout (L320); mesh nodes V, links E; V_n, E_n the net's region (bounding box + margin)
Params    T_c static tracks per link of class c (x# vector, 4 scalar, L368)
Vars      σ_n ∈ {0,1}        net n is carried by the static network (fixed to 1 / 0 when ``mandatory``)
          y[n,e] ∈ {0,1}     link e is in n's static tree;  f[n,k,e] ∈ [0,1] static flow to sink k
Maximise  Σ_n a_n σ_n                                      (activation carried statically)
s.t.      flow          Σ_{δ⁺(v)} f[n,k,·] − Σ_{δ⁻(v)} f[n,k,·] = σ_n([v = s_n] − [v = k])   ∀ n, k, v
          tree          f[n,k,e] ≤ y[n,e];  membership  y[n,e] ≤ σ_n
          arborescence  Σ_{δ⁻(v)} y[n,·] ≤ 1,  Σ_{δ⁻(s_n)} y[n,·] = 0
          static        Σ_{n: c_n = c} y[n,e] ≤ T_c                        ∀ e, c   (one logical link per
                        track for the whole program, L302)

The flow / tree / arborescence rows are those of the static routing model
(:func:`solvermap.formulations.tree_flow.add_tree_flow`, shared with the routing model, supply σ_n), so a net the split puts
on the static network always has a routable tree within the tracks. Nets not carried statically go to
the dynamic network (routed by the ``route`` decision). The seed's greedy rule (highest a_n first until
static is full) is the baseline; this model maximises the same quantity exactly. One ModelBuilder model
runs on every MILP backend.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from solvermap.formulations.decision import Solved, solve_model
from solvermap.formulations.problems.link_split import Split, SplitProblem, objective, upper_bound
from solvermap.formulations.problems.routing import DYNAMIC, STATIC, RouteNet, Routes, RoutingProblem, assign_tracks, prune
from solvermap.formulations.tree_flow import TreeFlowVars, add_capacity, add_tree_flow, hint_tree_flow
from solvermap.formulations.solver import ModelBuilder, SolverConfig, Status, explain_infeasible, linear_sum, relative_gap

NAME = "link_split"
KIND = "milp"


def _as_static(problem: SplitProblem) -> RoutingProblem:
    r = problem.routing
    nets = tuple(RouteNet(n.name, n.source, n.sinks, n.kind, n.weight, STATIC, n.importance) for n in r.nets if n.sinks)
    return RoutingProblem(r.mesh, nets, r.static_capacity, None, r.margin, r.name)


def build(problem: SplitProblem, config: SolverConfig, hint: Split | None = None):
    routing = _as_static(problem)
    m = ModelBuilder(name=problem.name)
    vars_ = TreeFlowVars({}, {})
    carried: dict[str, Any] = {}
    if problem.mandatory != DYNAMIC:
        for net in routing.nets:
            sigma = 1.0 if problem.mandatory == STATIC else m.binary(f"sigma[{net.name}]")
            carried[net.name] = sigma
            links = add_tree_flow(m, routing, net, vars_, supply=sigma)
            if problem.mandatory != STATIC:
                for e in links:
                    m.add(vars_.y[net.name, e] <= sigma, group="membership", name=f"{net.name},{e}")
        add_capacity(m, routing, vars_, {n.name: n for n in routing.nets})
    by_name = {n.name: n for n in routing.nets}
    terms = [by_name[name].importance * sigma for name, sigma in carried.items() if not isinstance(sigma, float)]
    constant = sum(by_name[name].importance for name, sigma in carried.items() if isinstance(sigma, float))
    m.maximize(linear_sum(terms) + constant)
    if hint is not None:
        for net in routing.nets:
            inside = net.name in hint.static and net.name in hint.routes.trees
            sigma = carried.get(net.name)
            if sigma is not None and not isinstance(sigma, float):
                m.hint(sigma, 1.0 if inside else 0.0)
            if inside:
                hint_tree_flow(m, routing, net, vars_, tuple(hint.routes.trees[net.name]))
            elif sigma is not None and not isinstance(sigma, float):
                for (name, e), var in vars_.y.items():
                    if name == net.name:
                        m.hint(var, 0.0)
    return m, vars_, carried, routing


def decode(problem: SplitProblem, built, solution: Any) -> Split:
    m, vars_, carried, routing = built
    static = frozenset(name for name, sigma in carried.items()
                       if isinstance(sigma, float) or solution.is_one(sigma))
    chosen: dict[str, list] = {name: [] for name in static}
    for (name, e), var in vars_.y.items():
        if name in static and solution.is_one(var):
            chosen[name].append(e)
    trees = {name: prune(links, routing.net(name).source, routing.net(name).sinks) for name, links in chosen.items()}
    return Split(static, Routes(trees, assign_tracks(routing, trees)))


def diagnose(problem: SplitProblem) -> str | None:
    if problem.mandatory == STATIC:
        for net in problem.routing.nets:
            if net.sinks and problem.routing.static_capacity.get(net.kind, 0) == 0:
                return f"net {net.name!r} must be static but the static {net.kind} network has 0 tracks"
    return None


def solve(problem: SplitProblem, config: SolverConfig, hint: Split | None = None) -> Solved[Split]:
    built = build(problem, config, hint)
    m = built[0]
    result, solution = solve_model(m, config)
    decision = decode(problem, built, solution) if result.status.has_solution else None
    explanation = explain_infeasible(m, config) if result.status == Status.INFEASIBLE else []
    details: dict[str, Any] = {"model_size": m.size(), "upper_bound_all_static": upper_bound(problem),
                               "static_nets": None if decision is None else len(decision.static),
                               "nets": sum(1 for n in problem.routing.nets if n.sinks)}
    if decision is not None:
        value = objective(problem, decision)
        bound = result.bound if result.bound is not None else upper_bound(problem)
        bound = max(min(bound, upper_bound(problem)), value)
        result = dataclasses.replace(result, objective=value, bound=bound, gap=relative_gap(value, bound))
    return Solved(result, decision, explanation, details)
