"""Routing of logical links as a multi-commodity flow ILP with broadcast trees (seed 004 L300–320).

Problem and decision types, tree utilities and the objective: :mod:`solvermap.formulations.problems.routing`.

Sets      N nets (logical links), n = (source s_n, sinks K_n, class c_n ∈ {vector, scalar}, network
          ∈ {static, dynamic}, weight w_n); V mesh nodes, E directed mesh links;
          V_n ⊆ V = terminals' bounding box grown by ``margin``; E_n = links inside V_n
Params    T_c static tracks per link of class c (x# vector, 4 scalar, L368); D paths per dynamic link
          (the VC count v#, L316; optional)
Vars      y[n,e] ∈ {0,1}      link e ∈ E_n is in the tree of net n
          f[n,k,e] ∈ [0,1]    flow of the commodity (n, sink k) on e (|K_n| ≥ 2; one sink: f = y)
Minimise  Σ_n w_n Σ_e y[n,e]                                   (activation-weighted hops, L447)
s.t.      flow          Σ_{e∈δ⁺(v)} f[n,k,e] − Σ_{e∈δ⁻(v)} f[n,k,e] = [v = s_n] − [v = k]   ∀ n, k, v ∈ V_n
          tree          f[n,k,e] ≤ y[n,e]                                                 ∀ n, k, e
          arborescence  Σ_{e∈δ⁻(v)} y[n,e] ≤ 1 (∀ v),  Σ_{e∈δ⁻(s_n)} y[n,e] = 0           ∀ n
          static        Σ_{n static, c_n = c} y[n,e] ≤ T_c                                ∀ e, c
                        (a switch output carries one logical link for the program, L302)
          dynamic       Σ_{n dynamic} y[n,e] ≤ D                                          ∀ e (D given)

The union of the flows' supports reaches every sink, so the y = 1 links contain a source-rooted tree to
all sinks; with in-degree ≤ 1 it is an arborescence and ``decode`` prunes unused branches, so a
broadcast pays for every link of its tree once (duplication where the tree branches, L312). One
ModelBuilder model runs on every MILP backend (cpsat, highs, scip, cbc, gurobi); warm start from
``hint``. The region is part of the problem (the checker's ``region`` rule); the reported bound is the
larger of the solver's and :func:`~..problems.routing.lower_bound` (Σ w × half-perimeter, valid for any
tree).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from solvermap.formulations.decision import Solved, solve_model
from solvermap.formulations.problems.routing import (
    DYNAMIC,
    STATIC,
    Link,
    Node,
    RouteNet,
    Routes,
    RoutingProblem,
    assign_tracks,
    lower_bound,
    objective,
    prune,
)
from solvermap.formulations.solver import ModelBuilder, SolverConfig, Status, explain_infeasible, linear_sum, relative_gap
from solvermap.formulations.tree_flow import TreeFlowVars, add_capacity, add_tree_flow, hint_tree_flow

NAME = "routing"
KIND = "milp"


@dataclass
class RoutingModel:
    builder: ModelBuilder
    vars: TreeFlowVars


def build(problem: RoutingProblem, config: SolverConfig, hint: Routes | None = None) -> RoutingModel:
    m = ModelBuilder(name=problem.name)
    vars_ = TreeFlowVars({}, {})
    nets = list(problem.nets)
    by_name = {n.name: n for n in nets}
    for net in nets:
        add_tree_flow(m, problem, net, vars_)
    add_capacity(m, problem, vars_, by_name)
    m.minimize(linear_sum(by_name[name].weight * var for (name, _), var in vars_.y.items()))
    if hint is not None:
        for net in nets:
            tree = hint.trees.get(net.name)
            if tree is not None and set(tree) <= {e for (n, e) in vars_.y if n == net.name}:
                hint_tree_flow(m, problem, net, vars_, tuple(tree))
    return RoutingModel(m, vars_)


def decode_trees(problem: RoutingProblem, vars_: TreeFlowVars, solution: Any, nets: list[RouteNet]) -> dict[str, tuple[Link, ...]]:
    chosen: dict[str, list[Link]] = {n.name: [] for n in nets}
    for (name, e), var in vars_.y.items():
        if solution.is_one(var):
            chosen[name].append(e)
    return {n.name: prune(chosen[n.name], n.source, n.sinks) for n in nets if chosen[n.name] or not n.sinks}


def decode(problem: RoutingProblem, built: RoutingModel, solution: Any) -> Routes:
    trees = decode_trees(problem, built.vars, solution, list(problem.nets))
    return Routes(trees, assign_tracks(problem, trees))


def diagnose(problem: RoutingProblem) -> str | None:
    """Name a net or a node whose demand no routing can meet, before any model is built."""
    for net in problem.nets:
        for t in net.terminals():
            if not problem.mesh.contains(t):
                return f"net {net.name!r} has terminal {t} outside the {problem.mesh.rows}x{problem.mesh.cols} mesh"
        if net.network == STATIC and problem.static_capacity.get(net.kind, 0) == 0:
            return f"net {net.name!r} is a static {net.kind} link but the static {net.kind} network has 0 tracks"
    # every static net of a source leaves its node on one of ≤ 4 outgoing links
    for network, limit in ((STATIC, None), (DYNAMIC, problem.dynamic_capacity)):
        by_node: dict[tuple[Node, str], int] = {}
        for net in problem.nets:
            if net.network != network or not net.sinks:
                continue
            cls = net.kind if network == STATIC else "any"
            by_node[(net.source, cls)] = by_node.get((net.source, cls), 0) + 1
            for s in set(net.sinks):
                by_node[(s, "in:" + cls)] = by_node.get((s, "in:" + cls), 0) + 1
        for (node, cls), count in by_node.items():
            degree = len(problem.mesh.neighbours(node))
            per_link = problem.static_capacity.get(cls.removeprefix("in:"), 0) if network == STATIC else limit
            if per_link is not None and count > degree * per_link:
                what = "leave" if not cls.startswith("in:") else "enter"
                return (f"{count} {network} {cls.removeprefix('in:')} logical links {what} node {node}, which has "
                        f"{degree} links x {per_link} {'tracks' if network == STATIC else 'paths'}")
    return None


def solve(problem: RoutingProblem, config: SolverConfig, hint: Routes | None = None) -> Solved[Routes]:
    built = build(problem, config, hint)
    result, solution = solve_model(built.builder, config)
    decision = decode(problem, built, solution) if result.status.has_solution else None
    explanation = explain_infeasible(built.builder, config) if result.status == Status.INFEASIBLE else []
    details: dict[str, Any] = {"model_size": built.builder.size(), "margin": problem.margin,
                               "mesh_lower_bound": lower_bound(problem)}
    if decision is not None:
        value = objective(problem, decision)
        details["objective_recomputed"] = value
        bound = max(result.bound if result.bound is not None else 0.0, details["mesh_lower_bound"])
        bound = min(bound, value)
        status = Status.OPTIMAL if value - bound <= 1e-6 * max(1.0, value) else result.status
        result = dataclasses.replace(result, status=status, objective=value, bound=bound, gap=relative_gap(value, bound))
    return Solved(result, decision, explanation, details)

