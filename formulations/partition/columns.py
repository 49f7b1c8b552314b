"""The column model: an exact cover of the items by enumerated convex bins, with lazy cycle cuts (acyclic
problems; seed 004 Table 4.2, L599–608).

Sets      columns c: every convex item set of one cluster that fits one bin of some type
          (:func:`convex_bins`; every bin of an acyclic partition is convex, since a path that leaves a bin
          and re-enters it is a cycle of the quotient graph), with the types k it fits.
Vars      x[c,k] ∈ {0,1} column c is a bin of type k.
Minimise  w_bins Σ κ_k x[c,k] + w_traf Σ_g traffic_g Σ_{c ∋ a consumer of g, c ∌ its source} x[c,·]
s.t.      assignment  Σ_{c∋i,k} x[c,k] = 1 ∀ items i
          type-count  Σ_c x[c,k] ≤ n_k
          acyclic     (lazy) a cover whose quotient has a cycle B_1..B_k (links o_j → e_{j+1}) is cut off by
                      Σ_j together(e_j, o_j) − (k' − 1) ≤ together(o_j, e_{j+1}) for every j, together(u, v)
                      = Σ_{c∋u,v} x[c,·]: a closed walk through bins cannot advance in a topological order,
                      so the bins coincide (:func:`add_cycle_cut`).
A relaxation of the problem without retiming (the cover ignores acyclicity until cut), so its bound is
certified at every round; an acyclic cover is a solution. Used when at most ``settings.column_budget``
convex bins exist (:mod:`.strategy` runs it between two slot-model solves).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from solvermap.formulations.partition.bounds import LowerBound, lower_bound
from solvermap.formulations.partition.settings import SETTINGS
from solvermap.formulations.partition.slots import slot_count
from solvermap.formulations.problems.partition import PartitionDecision, PartitionProblem, _topo, complete
from solvermap.formulations.solver import ModelBuilder, SolverConfig, linear_sum


@dataclass(frozen=True)
class Column:
    """One candidate bin: a convex item set of one cluster and the bin types it fits (capacity, arity)."""

    members: tuple[str, ...]
    types: tuple[int, ...]


def convex_bins(problem: PartitionProblem, *, max_columns: int | None = None,
                max_nodes: int | None = None, deadline: float | None = None) -> list[Column] | None:
    """Every convex item set that fits one bin of some type, or None when there are more than the budget.

    In an acyclic partition every bin is convex (a path that leaves a bin and re-enters it is a cycle of
    the quotient graph), so these sets are all the bins any acyclic solution can use. Items are added in
    topological order; a branch is cut when its sums exceed every type's capacity, when an input (output)
    that no later item can remove exceeds every type's arity, or when a skipped item lies on a path
    between two members (the set can no longer be convex). Only for acyclic problems. ``deadline`` (a
    ``time.perf_counter()`` value) stops the enumeration (None, not cached): a wall-clock safety net only,
    the deterministic limits are ``max_columns`` and ``max_nodes`` (default: the settings').
    """
    max_columns = SETTINGS.column_budget if max_columns is None else max_columns
    max_nodes = SETTINGS.column_nodes if max_nodes is None else max_nodes
    if not problem.acyclic or not problem.items:
        return None
    cache = problem.__dict__.setdefault("_convex_bins", {})
    key = (max_columns, max_nodes)
    if key in cache:
        return cache[key]
    order = problem.topological_items()
    n = len(order)
    index = {name: k for k, name in enumerate(order)}
    types = list(problem.bin_types)
    feas = []
    for name in order:
        ok = frozenset(k for k, t in enumerate(types) if not problem.intrinsic_violations(name, t))
        if not ok:
            cache[key] = None
            return None
        feas.append(ok)
    resources = sorted({r for i in problem.items for r, v in i.demand.items() if v > 0})
    demand = [tuple(problem.item(name).demand.get(r, 0.0) for r in resources) for name in order]
    caps = [tuple(t.cap(r) if t.reduce_of(r) == "sum" else math.inf for r in resources) for t in types]
    cluster = [problem.item(name).cluster for name in order]
    groups = problem.groups()
    g_kind = [g.kind for g in groups]
    g_src = [index[g.key[0]] if g.source_is_item else -1 for g in groups]
    g_cons = [tuple(index[c] for c in g.consumers) for g in groups]
    g_ext = [g.external_consumer for g in groups]
    reads: list[list[int]] = [[] for _ in range(n)]
    made: list[list[int]] = [[] for _ in range(n)]
    for k, g in enumerate(groups):
        for c in g_cons[k]:
            reads[c].append(k)
        if g_src[k] >= 0:
            made[g_src[k]].append(k)
    in_lim = [dict(t.inputs) for t in types]
    out_lim = [dict(t.outputs) for t in types]
    succ: list[list[int]] = [[] for _ in range(n)]
    for s, d in problem.order_links():
        succ[index[s]].append(index[d])
    desc = [0] * n
    for k in reversed(range(n)):
        bits = 0
        for q in succ[k]:
            bits |= (1 << q) | desc[q]
        desc[k] = bits
    anc = [0] * n
    for k in range(n):
        for q in succ[k]:
            anc[q] |= anc[k] | (1 << k)
    by_cluster: dict[str, list[int]] = {}
    for k in range(n):
        by_cluster.setdefault(cluster[k], []).append(k)

    def over(counts: dict[str, int], limits: dict[str, int]) -> bool:
        return any(v > limits.get(kind, v) for kind, v in counts.items())

    out: list[Column] = []
    nodes = 0
    timed_out: list[bool] = []

    def visit(members: list[int], mask: int, sums: tuple[float, ...], fit: frozenset[int], below: int,
              last: int, later: list[int], after: int) -> bool:
        nonlocal nodes
        fixed_in: dict[str, int] = {}
        fixed_out: dict[str, int] = {}
        free_out: dict[str, int] = {}
        seen: set[int] = set()
        home = cluster[members[0]]
        for u in members:
            for g in reads[u]:
                if g in seen:
                    continue
                seen.add(g)
                s = g_src[g]
                if s >= 0 and (mask >> s) & 1:
                    continue
                # a source precedes its consumer: an input can never be removed by a later item
                fixed_in[g_kind[g]] = fixed_in.get(g_kind[g], 0) + 1
            for g in made[u]:
                outside = [c for c in g_cons[g] if not (mask >> c) & 1]
                if g_ext[g] or outside:
                    free_out[g_kind[g]] = free_out.get(g_kind[g], 0) + 1
                    if g_ext[g] or any(c <= last or cluster[c] != home for c in outside):
                        fixed_out[g_kind[g]] = fixed_out.get(g_kind[g], 0) + 1
        if all(over(fixed_in, in_lim[k]) or over(fixed_out, out_lim[k]) for k in fit):
            return True
        fits = tuple(sorted(k for k in fit if not over(fixed_in, in_lim[k]) and not over(free_out, out_lim[k])))
        if fits:
            out.append(Column(tuple(order[u] for u in members), fits))
            if len(out) > max_columns:
                return False
        for pos in range(after, len(later)):
            u = later[pos]
            nodes += 1
            if nodes > max_nodes:
                return False
            if deadline is not None and nodes % 2048 == 0 and time.perf_counter() > deadline:
                timed_out.append(True)
                return False
            if anc[u] & below & ~mask:  # a skipped item between a member and u: never convex
                continue
            grown = tuple(a + b for a, b in zip(sums, demand[u]))
            types_left = frozenset(k for k in fit & feas[u]
                                   if all(v <= c + 1e-9 for v, c in zip(grown, caps[k])))
            if not types_left:
                continue
            if not visit(members + [u], mask | (1 << u), grown, types_left, below | desc[u], u, later, pos + 1):
                return False
        return True

    for members in by_cluster.values():
        for pos, u in enumerate(members):
            ok_types = frozenset(k for k in feas[u] if all(v <= c + 1e-9 for v, c in zip(demand[u], caps[k])))
            if ok_types and not visit([u], 1 << u, demand[u], ok_types, desc[u], u, members, pos + 1):
                if not timed_out:
                    cache[key] = None
                return None
    cache[key] = out
    return out


@dataclass
class ColumnModel:
    builder: ModelBuilder
    problem: PartitionProblem
    columns: list[Column]
    slots: int
    x: dict[tuple[int, int], Any]  # (column, type) -> chosen
    bound: LowerBound | None = None


def build_columns(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None = None, *,
                  columns: list[Column], min_bins: int | None = None) -> ColumnModel:
    """The column relaxation (module docstring): an exact cover of the items by enumerated convex bins.

    Every acyclic solution is a feasible cover, so the cover's optimum (and its solver bound) is a lower
    bound of the problem without retiming; a cover whose quotient graph is acyclic is a solution. (No
    bin-count bound as a row: a cardinality row beside the cover slows CP-SAT down badly; the bound is
    kept for the caller.)"""
    types = list(problem.bin_types)
    bound = lower_bound(problem)
    if min_bins is not None and min_bins > bound.bins:
        bound = LowerBound(min_bins, min_bins * min(t.cost for t in types), f"proven: {min_bins} bins",
                           {**bound.parts, "proven": min_bins})
    model = ColumnModel(ModelBuilder(f"partition-columns:{problem.name}"), problem, columns,
                        slot_count(problem, hint), {}, bound)
    _add_assignment(model)
    _add_type_count(model)
    _set_objective(model)
    if hint is not None:
        _hint_columns(model, hint)
    return model


def _add_assignment(model: ColumnModel) -> None:
    """x[c,k] per column and type it fits; Σ_{c∋i,k} x[c,k] = 1."""
    m, types = model.builder, model.problem.bin_types
    holding: dict[str, list[Any]] = {i.name: [] for i in model.problem.items}
    for c, col in enumerate(model.columns):
        for k in col.types:
            var = model.x[c, k] = m.binary(f"x[{c},{types[k].name}]")
            for a in col.members:
                holding[a].append(var)
    for name, terms in holding.items():
        m.add(linear_sum(terms) == 1, "assignment", name)


def _add_type_count(model: ColumnModel) -> None:
    """Σ_c x[c,k] ≤ n_k."""
    for k, t in enumerate(model.problem.bin_types):
        if t.count is not None and t.count < model.slots:
            model.builder.add(linear_sum(v for (c, kk), v in model.x.items() if kk == k) <= t.count, "type-count", t.name)


def _set_objective(model: ColumnModel) -> None:
    """w_bins Σ κ_k x[c,k] + w_traf (traffic of the cover)."""
    problem, types, x = model.problem, model.problem.bin_types, model.x
    terms = [problem.weights.bins * linear_sum(types[k].cost * v for (c, k), v in x.items())]
    if problem.weights.traffic > 0:
        terms.append(problem.weights.traffic * column_traffic(problem, model.columns, x))
    model.builder.minimize(linear_sum(terms))


def _hint_columns(model: ColumnModel, hint: PartitionDecision) -> None:
    """The warm start's bins as columns, when every one of them is a column."""
    types = model.problem.bin_types
    lookup = {(frozenset(col.members), k): c for c, col in enumerate(model.columns) for k in col.types}
    index = {t.name: k for k, t in enumerate(types)}
    chosen = {(lookup.get((frozenset(names), index[hint.bin_types[b]])), index[hint.bin_types[b]])
              for b, names in hint.members().items()}
    if all(c is not None for c, _ in chosen) and len(chosen) <= model.slots:
        for key, var in model.x.items():
            model.builder.hint(var, 1 if key in chosen else 0)


def column_traffic(problem: PartitionProblem, columns: list[Column], x) -> Any:
    """Σ_g traffic_g · (chosen bins holding a consumer of g but not its source)."""
    terms = []
    for g in problem.groups():
        consumers = set(g.consumers)
        for (c, k), var in x.items():
            members = set(columns[c].members)
            if members & consumers and g.key[0] not in members:
                terms.append(g.traffic * var)
    return linear_sum(terms)


def decode_columns(problem: PartitionProblem, built: ColumnModel, solution: Any) -> PartitionDecision | None:
    """The chosen cover as a decision, or None when its quotient graph has a cycle."""
    assignment: dict[str, int] = {}
    types: dict[int, str] = {}
    for b, (c, k) in enumerate(key for key, var in built.x.items() if solution.is_one(var)):
        types[b] = problem.bin_types[k].name
        for n in built.columns[c].members:
            assignment[n] = b
    if not quotient_acyclic(problem, assignment):
        return None
    return complete(problem, assignment, types)


def quotient_acyclic(problem: PartitionProblem, assignment: dict[str, int]) -> bool:
    """The quotient graph of the order links under ``assignment`` has no cycle."""
    succ: dict[int, set[int]] = {b: set() for b in set(assignment.values())}
    for s, d in problem.order_links():
        if assignment[s] != assignment[d]:
            succ[assignment[s]].add(assignment[d])
    try:
        _topo(sorted(succ), {b: sorted(v) for b, v in succ.items()})
    except ValueError:
        return False
    return True



def together_of(built: ColumnModel) -> Callable[[str, str], Any]:
    """together(u, v): the linear expression "u and v are in the same bin" (Σ of the columns with both)."""
    holding: dict[str, dict[int, list[Any]]] = {}
    for (c, _), var in built.x.items():
        for n in built.columns[c].members:
            holding.setdefault(n, {}).setdefault(c, []).append(var)

    def together(u: str, v: str) -> Any:
        both = holding.get(u, {}).keys() & holding.get(v, {}).keys()
        return linear_sum(var for c in sorted(both) for var in holding[u][c])

    return together


def add_cycle_cut(built: ColumnModel, together, cycle: list[tuple[str, str]]) -> None:
    """Cut off a quotient cycle: bins B_1..B_k, link o_j → e_{j+1} from B_j into B_{j+1} (``cycle`` lists
    these links). In an acyclic partition, if every pair (e_j, o_j) shares a bin, the closed walk through
    those bins cannot move forward in a topological order, so all of them are one bin and every link of
    the walk is inside it: Σ_j together(e_j, o_j) − (k' − 1) ≤ together(o_j, e_{j+1}) for each j, where k'
    counts the pairs with e_j ≠ o_j. Valid for acyclic problems (every bin is convex)."""
    k = len(cycle)
    pairs = [(cycle[j - 1][1], cycle[j][0]) for j in range(k)]  # (e_j, o_j)
    distinct = [(e, o) for e, o in pairs if e != o]
    lhs = linear_sum([together(e, o) for e, o in distinct])
    for o, e in cycle:
        built.builder.add(lhs - (len(distinct) - 1) <= together(o, e), "acyclic", f"cycle {o}->{e}")


def quotient_cycles(problem: PartitionProblem, assignment: dict[str, int], limit: int = SETTINGS.cycle_cuts) -> list[list[tuple[str, str]]]:
    """Up to ``limit`` simple cycles of the quotient graph, each as the item links that close it."""
    import networkx as nx

    quotient = nx.DiGraph()
    quotient.add_nodes_from(set(assignment.values()))
    witness: dict[tuple[int, int], tuple[str, str]] = {}
    for s, d in problem.order_links():
        p, q = assignment[s], assignment[d]
        if p != q:
            quotient.add_edge(p, q)
            witness.setdefault((p, q), (s, d))
    out: list[list[tuple[str, str]]] = []
    for component in nx.strongly_connected_components(quotient):
        if len(component) < 2:
            continue
        for cycle in nx.simple_cycles(quotient.subgraph(component)):
            out.append([witness[cycle[j], cycle[(j + 1) % len(cycle)]] for j in range(len(cycle))])
            if len(out) >= limit:
                return out
    return out

