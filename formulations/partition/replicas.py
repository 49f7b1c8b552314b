"""Replicated clusters: the copies of a loop body that a parallelization factor makes (seed 004 L145, Fig 2.1).

Copies    a cluster whose items fall into k ≥ 2 connected components (item→item links, order links included)
          that are isomorphic (item demands; link ports, kinds, directions, external ends) and share no
          value (no external value is read by two copies) — :func:`find_copies`.
Incumbent one copy solved as its own problem, its decision (bins, types, delays, external values' delays)
          mapped onto every copy by the isomorphism: the union is a solution of the whole (bins are
          disjoint, the copies share no value, so arity, capacity, acyclicity and every link's skew are each
          copy's own), of k × the copy's objective.
Bound     restrict any solution of the whole to one copy: each bin's items of copy j (a *part*) form a
          solution of copy j — capacity and arity only shrink (copies share no value, so a bin's inputs and
          outputs are its parts' sums), a cycle of parts maps onto a cycle of bins, delays and each link's
          retiming are unchanged. Call a part *heavy* when it has more than ⌊In/2⌋ inputs of the one link
          kind κ, or its inputs (outputs) of κ are at the limit In (Out), or a sum resource r is above
          C_r − d_r (d_r the least demand of an item): every part has ≥ 1 input and ≥ 1 output of κ (every
          item reads a forward value and sends one, checked) and ≥ d_r of r, so a heavy part shares its bin
          with no heavy part. Hence a solution costs ≥ κ_cost · Σ_j #heavy parts of copy j + Σ_j retiming of
          copy j ≥ k · OPT(copy with a second, free bin type "light" = the non-heavy parts: ⌊In/2⌋ and In − 1
          inputs, Out − 1 outputs, C_r − d_r) — :func:`light_relaxation`, a partition problem that the same
          solver bounds, so k × its certified bound is certified for the whole.
Shares    the same restriction with other weights (a dual-feasible function of the parts, as in the
          configuration LP of bin packing): a part is *alone* when its inputs (outputs) of κ are at In (Out)
          or a sum resource is above C_r − d_r — it shares its bin with no other part —, else it *shares*.
          Give an alone part weight 1 and a sharing part u / C_r, u its use of one sum resource r: a bin holds
          one alone part, or sharing parts whose uses add up to at most C_r, so its parts' weights add up to
          at most 1 and a solution has at least Σ_j Σ_{parts of copy j} weight bins. Copy j's parts, each a
          bin of the cheapest type it fits (full at cost 1; "share u": In − 1 inputs, Out − 1 outputs, u of
          r, C − d of the other sum resources, at cost u / C_r), are a solution of copy 0's relaxation
          (isomorphic) at that weight plus copy j's retiming; so k × its optimum bounds the whole —
          :func:`share_relaxation` (r the sum resource with the most demand per capacity, its demands
          positive integers). A relaxation's partitions are partitions of the copy (its types fit inside
          the full one) with the same retiming: when no partition of the copy runs without retiming
          (:func:`~.two_phase.needs_retiming`), its optimum is at least its no-retiming optimum + w_ret. Neither relaxation dominates: light is exact when every part is heavy
          (lattice: 3 inputs per bin), shares when small parts are what mixing copies would use.
Arity     the same restriction weighed by the limited link kind κ instead of a resource: a part with a inputs
          and b outputs of κ that can share (a < In, b < Out, every sum resource within C_r − d_r) weighs
          (a / In + b / Out) / 2, the mean of its input and its output share; any other part 1 (it shares with
          no part: every part has ≥ 1 input and ≥ 1 output of κ, and ≥ d_r of r). The parts of one bin use at
          most In inputs and Out outputs in all, so their weights add up to at most 1 — for any number of copies
          (the shares of stages and of arity are both dual-feasible, their mean too). Copy j's parts, each a bin
          of its cheapest type ("a-in b-out": a inputs, b outputs, C − d, at that cost), are a solution of
          copy 0's relaxation — :func:`arity_relaxation`; k × its optimum bounds the whole. It prices a part by
          its arity where the shares relaxation prices it by its stages: a one-stage part with two inputs
          weighs ½ here, ⅙ there.
          Conditions (else no bound): one bin type with no count; one kind κ limited on both sides over the
          copies' data links; no traffic weight; no fixed delays; every item reads and sends a forward value.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import networkx as nx
from networkx.algorithms import isomorphism

from solvermap.formulations.problems.partition import (
    BinType,
    PartitionDecision,
    PartitionProblem,
    required_retiming,
)


@dataclass(frozen=True)
class Copies:
    """The copies of a replicated cluster: ``names[j]`` the items of copy j; ``maps[j]`` copy 0's items and
    external ends onto copy j's (``maps[0]`` the identity)."""

    names: list[list[str]]
    maps: list[dict]


def _labelled(problem: PartitionProblem, names: list[str]) -> nx.MultiDiGraph:
    """A copy as a labelled graph: items (demand) and one node per external end of a link."""
    keep = set(names)
    g = nx.MultiDiGraph()
    for n in names:
        g.add_node(n, label=("item", tuple(sorted(problem.item(n).demand.items()))))
    for link in problem.links:
        label = {"label": (link.src_port, link.kind, link.forward, link.order_only)}
        if link.src in keep and link.dst in keep:
            g.add_edge(link.src, link.dst, **label)
        elif link.dst in keep:
            end = ("source", link.src, link.src_port)
            g.add_node(end, label=("source",))
            g.add_edge(end, link.dst, **label)
        elif link.src in keep:
            end = ("sink", link.src, link.src_port, link.dst)
            g.add_node(end, label=("sink",))
            g.add_edge(link.src, end, **label)
    return g


def find_copies(problem: PartitionProblem) -> Copies | None:
    """The copies of ``problem`` (one cluster), or None when it is not k ≥ 2 isomorphic copies sharing no value."""
    if len(problem.clusters()) != 1:
        return None
    items = set(problem.item_names)
    graph = nx.Graph()
    graph.add_nodes_from(problem.item_names)
    graph.add_edges_from((l.src, l.dst) for l in problem.links if l.src in items and l.dst in items)
    position = {n: k for k, n in enumerate(problem.item_names)}
    names = sorted((sorted(c, key=position.get) for c in nx.connected_components(graph)),
                   key=lambda c: position[c[0]])
    if len(names) < 2 or len({len(c) for c in names}) != 1:
        return None
    copy_of = {n: j for j, c in enumerate(names) for n in c}
    readers: dict[tuple[str, str], set[int]] = {}
    for link in problem.links:
        if link.src not in items and link.dst in items:
            readers.setdefault((link.src, link.src_port), set()).add(copy_of[link.dst])
    if any(len(r) > 1 for r in readers.values()):
        return None
    first = _labelled(problem, names[0])
    maps = [{n: n for n in first.nodes}]
    for c in names[1:]:
        matcher = isomorphism.MultiDiGraphMatcher(
            first, _labelled(problem, c), node_match=lambda a, b: a["label"] == b["label"],
            edge_match=isomorphism.categorical_multiedge_match("label", None))
        mapping = next(matcher.isomorphisms_iter(), None)
        if mapping is None:
            return None
        maps.append(mapping)
    return Copies(names, maps)


def replicate(problem: PartitionProblem, copies: Copies, decision: PartitionDecision) -> PartitionDecision:
    """Copy 0's ``decision`` on every copy (bins of copy j after those of copy j − 1), with its delays."""
    bins = sorted(set(decision.assignment.values()))
    assignment: dict[str, int] = {}
    types: dict[int, str] = {}
    delays: dict[int, int] = {}
    sources: dict[tuple[str, str, str], int] = {}
    for j, mapping in enumerate(copies.maps):
        renumber = {b: j * len(bins) + k for k, b in enumerate(bins)}
        for n in copies.names[0]:
            assignment[mapping[n]] = renumber[decision.assignment[n]]
        for b in bins:
            types[renumber[b]] = decision.bin_types[b]
            if b in decision.delays:
                delays[renumber[b]] = decision.delays[b]
        for (src, port, cluster), t in decision.source_delays.items():
            for end, image in mapping.items():
                if isinstance(end, tuple) and end[0] == "source" and end[1:] == (src, port):
                    sources[image[1], image[2], cluster] = t
    if problem.retiming is None:
        return PartitionDecision(assignment, types)
    return PartitionDecision(assignment, types, delays, sources, required_retiming(problem, assignment, delays, sources))


def _relaxable(problem: PartitionProblem, copies: Copies) -> tuple[PartitionProblem, BinType, str] | None:
    """Copy 0, the one bin type and the one limited link kind κ, when the relaxations' conditions hold
    (module docstring), else None."""
    if len(problem.bin_types) != 1 or problem.feasible is not None or problem.weights.traffic != 0:
        return None
    if problem.retiming is not None and (problem.retiming.fixed_sources or problem.retiming.fixed_sinks):
        return None
    full = problem.bin_types[0]
    if full.count is not None:
        return None
    copy = problem.subproblem(copies.names[0], f"{problem.name}[relaxation]")
    data = [l for l in copy.links if not l.order_only]
    kinds = {l.kind for l in data}
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    inputs, outputs = full.inputs.get(kind), full.outputs.get(kind)
    if inputs is None or outputs is None or inputs < 2 or outputs < 2:
        return None
    reads = {l.dst for l in data if l.forward and copy.is_item(l.dst)}
    sends = {l.src for l in data if copy.is_item(l.src) and (l.forward or not copy.is_item(l.dst))}
    if any(n not in reads or n not in sends for n in copy.item_names):
        return None
    return copy, full, kind


def _shared_capacity(copy: PartitionProblem, full: BinType) -> dict[str, float]:
    """C_r − d_r per sum resource r (d_r the least demand of an item): what a part that shares its bin has."""
    capacity = dict(full.capacity)
    for r, cap in full.capacity.items():
        if full.reduce_of(r) == "sum":
            capacity[r] = cap - min(float(i.demand.get(r, 0.0)) for i in copy.items)
    return capacity


def light_relaxation(problem: PartitionProblem, copies: Copies) -> PartitionProblem | None:
    """Copy 0 with a second, free bin type for its non-heavy parts (module docstring), or None when the
    bound's conditions do not hold. k × its optimum (or certified bound) bounds the whole problem."""
    found = _relaxable(problem, copies)
    if found is None:
        return None
    copy, full, kind = found
    inputs, outputs = full.inputs[kind], full.outputs[kind]
    light = BinType(f"{full.name}-light", _shared_capacity(copy, full), dict(full.reduction),
                    {**full.inputs, kind: min(inputs // 2, inputs - 1)}, {**full.outputs, kind: outputs - 1},
                    None, 0.0)
    return dataclasses.replace(copy, bin_types=(full, light), name=f"{problem.name}[light relaxation]")


def share_relaxation(problem: PartitionProblem, copies: Copies) -> PartitionProblem | None:
    """Copy 0 in which a part that can share its bin costs its share u / C_r of the binding sum resource r
    (module docstring, "Shares"): bin types "share u" (In − 1 inputs, Out − 1 outputs of κ, u of r, C − d
    of the other sum resources, cost u / C_r) for u = 1 … C_r − d_r beside the full type. None when the
    conditions do not hold or r's demands are not positive integers. k × its optimum bounds the whole."""
    found = _relaxable(problem, copies)
    if found is None:
        return None
    copy, full, kind = found
    sums = [r for r in full.capacity if full.reduce_of(r) == "sum" and full.cap(r) > 0]
    demands = {r: [float(i.demand.get(r, 0.0)) for i in copy.items] for r in sums}
    usable = [r for r in sums if float(full.cap(r)).is_integer()
              and all(v >= 1 and v.is_integer() for v in demands[r])]
    if not usable:
        return None
    resource = max(usable, key=lambda r: (sum(demands[r]) / full.cap(r), r))  # the binding one
    cap = int(full.cap(resource))
    shared = _shared_capacity(copy, full)
    types = [full] + [BinType(f"{full.name}-share{u}", {**shared, resource: float(u)}, dict(full.reduction),
                              {**full.inputs, kind: full.inputs[kind] - 1},
                              {**full.outputs, kind: full.outputs[kind] - 1}, None, u / cap)
                      for u in range(1, int(shared[resource]) + 1)]
    return dataclasses.replace(copy, bin_types=tuple(types), name=f"{problem.name}[share relaxation]")


def arity_relaxation(problem: PartitionProblem, copies: Copies) -> PartitionProblem | None:
    """Copy 0 in which a part that can share its bin costs the mean of its input and output shares of the
    limited kind κ (module docstring, "Arity"): bin types "a-in b-out" (a of In − 1 … 1 inputs, b of
    Out − 1 … 1 outputs of κ, C − d of every sum resource, cost (a / In + b / Out) / 2) beside the full type.
    None when the conditions do not hold. k × its optimum bounds the whole."""
    found = _relaxable(problem, copies)
    if found is None:
        return None
    copy, full, kind = found
    inputs, outputs = full.inputs[kind], full.outputs[kind]
    shared = _shared_capacity(copy, full)
    types = [full] + [BinType(f"{full.name}-{a}in{b}out", shared, dict(full.reduction),
                              {**full.inputs, kind: a}, {**full.outputs, kind: b}, None,
                              (a / inputs + b / outputs) / 2)
                      for a in range(1, inputs) for b in range(1, outputs)]
    return dataclasses.replace(copy, bin_types=tuple(types), name=f"{problem.name}[arity relaxation]")


def retyped(problem: PartitionProblem, decision: PartitionDecision) -> PartitionDecision:
    """``decision`` (of a problem with the same items and links) with each bin of the cheapest type of
    ``problem`` its members fit (capacity and arity); a bin no type fits keeps its type."""
    types = dict(decision.bin_types)
    for b, members in decision.members().items():
        ins, outs = problem.crossing(members)
        fitting = [t for t in problem.bin_types
                   if all(t.reduce_of(r) == "max" or sum(float(problem.item(n).demand.get(r, 0.0)) for n in members)
                          <= t.cap(r) + 1e-9 for r in {r for n in members for r in problem.item(n).demand})
                   and all(not problem.intrinsic_violations(n, t) for n in members)
                   and all(n <= t.inputs.get(k, n) for k, n in ins.items())
                   and all(n <= t.outputs.get(k, n) for k, n in outs.items())]
        if fitting:
            types[b] = min(fitting, key=lambda t: t.cost).name
    return dataclasses.replace(decision, bin_types=types)


def integral(problem: PartitionProblem, bound: float) -> float:
    """``bound`` rounded up when every objective value is an integer (unit bin costs and weights)."""
    if all(t.cost == 1.0 for t in problem.bin_types) and problem.weights.bins == 1.0 \
            and problem.weights.retiming in (0.0, 1.0) and problem.weights.traffic == 0:
        return float(math.ceil(bound - 1e-9))
    return bound
