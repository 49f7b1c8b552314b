"""Tree-flow constraint families on a directed mesh: shared by the routing and link-split models.

Not a formulation of its own (no objective, no solve): the building blocks that
:mod:`~solvermap.formulations.routing` (route every logical link) and
:mod:`~solvermap.formulations.link_split` (which links go static) both state, so that neither model
imports the other.

Vars      y[n,e] ∈ {0,1}      link e ∈ E_n is in the tree of net n
          f[n,k,e] ∈ [0,1]    flow of the commodity (n, sink k) on e (one sink: f = y)
Families  flow          Σ_{e∈δ⁺(v)} f[n,k,e] − Σ_{e∈δ⁻(v)} f[n,k,e] = supply·([v = s_n] − [v = k])
          tree          f[n,k,e] ≤ y[n,e]
          arborescence  Σ_{e∈δ⁻(v)} y[n,e] ≤ 1,  Σ_{e∈δ⁻(s_n)} y[n,e] = 0
          static/dynamic capacity per link (seed 004 L302, L316)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solvermap.formulations.problems.routing import (
    STATIC,
    Link,
    Node,
    RouteNet,
    RoutingProblem,
)
from solvermap.formulations.solver import ModelBuilder, linear_sum


@dataclass
class TreeFlowVars:
    """Handles of the tree-flow families of one or more nets."""

    y: dict[tuple[str, Link], Any]
    f: dict[tuple[str, Node, Link], Any]


def region_links(problem: RoutingProblem, net: RouteNet) -> list[Link]:
    nodes = problem.region(net)
    return [(a, b) for a in sorted(nodes) for b in problem.mesh.neighbours(a) if b in nodes]


def add_tree_flow(m: ModelBuilder, problem: RoutingProblem, net: RouteNet, vars_: TreeFlowVars, supply: Any = 1.0) -> list[Link]:
    """The flow / tree / arborescence rows of one net; ``supply`` is 1 or a 0/1 variable (a net that
    may stay off this network). Returns the net's candidate links."""
    links = region_links(problem, net)
    nodes = problem.region(net)
    into: dict[Node, list[Link]] = {v: [] for v in nodes}
    out: dict[Node, list[Link]] = {v: [] for v in nodes}
    for e in links:
        vars_.y[net.name, e] = m.binary(f"y[{net.name},{e}]")
        out[e[0]].append(e)
        into[e[1]].append(e)
    for v in nodes:
        if into[v]:
            limit = 0 if v == net.source else 1
            m.add(linear_sum(vars_.y[net.name, e] for e in into[v]) <= limit, group="arborescence", name=f"{net.name},{v}")
    single = len(net.sinks) == 1
    for k in net.sinks:
        if single:
            flow = {e: vars_.y[net.name, e] for e in links}
        else:
            flow = {}
            for e in links:
                var = m.continuous(0.0, 1.0, name=f"f[{net.name},{k},{e}]")
                vars_.f[net.name, k, e] = var
                flow[e] = var
                m.add(var <= vars_.y[net.name, e], group="tree", name=f"{net.name},{k},{e}")
        for v in nodes:
            rhs = (supply if v == net.source else 0) - (supply if v == k else 0)
            m.add(linear_sum(flow[e] for e in out[v]) - linear_sum(flow[e] for e in into[v]) == rhs,
                  group="flow", name=f"{net.name},{k},{v}")
    return links


def add_capacity(m: ModelBuilder, problem: RoutingProblem, vars_: TreeFlowVars, nets: dict[str, RouteNet]) -> None:
    """Static tracks per class and dynamic paths per link (rows only where the limit can bind)."""
    static: dict[tuple[str, Link], list[Any]] = {}
    dynamic: dict[Link, list[Any]] = {}
    for (name, e), var in vars_.y.items():
        net = nets[name]
        if net.network == STATIC:
            static.setdefault((net.kind, e), []).append(var)
        else:
            dynamic.setdefault(e, []).append(var)
    for (cls, e), terms in static.items():
        cap = problem.static_capacity.get(cls, 0)
        if len(terms) > cap:
            m.add(linear_sum(terms) <= cap, group="static", name=f"{cls},{e}")
    if problem.dynamic_capacity is not None:
        for e, terms in dynamic.items():
            if len(terms) > problem.dynamic_capacity:
                m.add(linear_sum(terms) <= problem.dynamic_capacity, group="dynamic", name=f"{e}")


def hint_tree_flow(m: ModelBuilder, problem: RoutingProblem, net: RouteNet, vars_: TreeFlowVars, tree: tuple[Link, ...]) -> None:
    """Warm start of one net from a tree: y on its links, f on the tree path to each sink."""
    chosen = set(tree)
    for (name, e), var in vars_.y.items():
        if name == net.name:
            m.hint(var, 1.0 if e in chosen else 0.0)
    if len(net.sinks) < 2:
        return
    parent = {b: a for a, b in tree}
    for k in net.sinks:
        on_path = set()
        node = k
        while node in parent:
            on_path.add((parent[node], node))
            node = parent[node]
        for (name, kk, e), var in vars_.f.items():
            if name == net.name and kk == k:
                m.hint(var, 1.0 if e in on_path else 0.0)


