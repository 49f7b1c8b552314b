"""Interchangeable items: symmetry breaking of the slot model from the automorphisms of the problem.

An *automorphism* σ of a partition problem permutes its items — each onto one with the same cluster,
demand and feasible bin types — and the ends that are not items (external sources and readers: the model
knows a reader only as "some consumer is not an item" and a source by its delay variable e) so that every
link (src, src_port, dst, kind, forward, order-only, traffic) maps onto a link, multiplicities included.
An external value with a fixed delay of a chunk (``Retiming.fixed_sources``) and every item a fixed delay
names (``Retiming.fixed_sinks``) stay in place. Backward links of an *inert* kind (:func:`_inert_kinds`:
no traffic weight, and no more values of the kind than every bin type accepts) are left out: they enter
no order or schedule row and only arity rows that no assignment fills. Broadcast groups (source, port)
map onto groups with the same kind, consumers and external readers.

The group G of these automorphisms acts on the slot model's solutions by moving items between slots:
(σ·x)[i, b] = x[σ(i), b], each item's delay that of σ(i), each value's retiming and each external value's
delay those of its image, bins, bin types and bin delays unchanged (the arity indicators y, z follow from
x). For an **acyclic** problem the slot model's feasible set is invariant under this action: assignment,
bin type, capacity, arity, cluster and the retiming rows are sums over items, groups or links, which σ
permutes (an inert kind's arity rows hold for every assignment); the symmetry rules on slots (used slots a
prefix, delays sorted) do not name items; the order rows a[d, b] ≤ a[s, b] are indexed by links, which σ
permutes; the domains from the chain bounds (:func:`~.bounds.chain_counts`) count ancestors' and
descendants' demands and external values, which σ preserves. σ·x has the objective of x. (A cyclic
problem's representative rule x[i, b] = 0 for b > rank(i) depends on the item order, and a window or a
neighbourhood around a warm start on the warm start: neither gets symmetry breaking.)

Breaking. With the items in a fixed order o_1, o_2, … and v(i) the slot of item i, let H_k be the
automorphisms that fix o_1 … o_{k−1}. The constraints

    v(o_k) ≤ v(j)    for every j in the orbit of o_k under H_k          (*)

keep at least one optimal solution: take any optimal x and, for k = 1, 2, …, pick j in the orbit of o_k
under H_k with the smallest slot and replace x by σ·x for some σ ∈ H_k with σ(o_k) = j (so o_k takes the
smallest slot of its orbit; :func:`canonical`). σ fixes o_1 … o_{k−1}, so the earlier items keep their
slots, and every later step applies an element of H_{k'} ⊆ H_{k+1}, which fixes o_k and maps the orbit of
o_k under H_k onto itself, so o_k keeps the smallest slot of that orbit. The result is feasible and optimal
(the feasible set is invariant, the objective too) and satisfies every (*). In the slot model (*) reads
a[j, b] ≤ a[o_k, b] for every slot b (o_k in a slot ≤ b whenever j is).

Finding the orbits: colour refinement of the labelled graph (items and external ends; the items o_1 …
o_{k−1} individualised) gives classes that contain the orbits; each candidate j of o_k's class is confirmed
by an explicit automorphism (networkx VF2 with o_k and j marked), kept to canonicalise a warm start. The
work is bounded by ``settings.symmetry_items`` (larger problems get no breaking) and
``settings.symmetry_tests`` (VF2 tests at most; the items after the test that exceeds it get none: a
prefix of (*) is still valid). Both limits are counts, so the constraints never depend on the machine.

Off by default (``settings.item_symmetry``). Measured on kmeans ×4's cluster ``distance`` (87 items, 4
copies of a 20-item body sharing 7 items; with the inert loop token left out G has order 2¹⁶, 16 pairs in
reverse topological order, 33 in topological order, found in about 0.5 s): the no-retiming slot model
from the heuristic's 21 bins proves 17 bins optimal in 3.8 work units with the breaking, 16.2 without;
but the cluster's strategy (two phases, 115 units) stays at 18 bins either way (item order topological
or reversed), and the zero-retiming model on 17 slots finds no solution within 100 units: without a warm
start neither without breaking nor with the 17 pairs of a first version (token kept, external ends fixed),
warm-started from the no-retiming 17-bin partition (16 retiming VBs when scheduled) neither with nor
without this breaking. Not checked on the other study rows yet.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import networkx as nx
from networkx.algorithms.isomorphism import DiGraphMatcher

from solvermap.formulations.partition.settings import SETTINGS
from solvermap.formulations.problems.partition import PartitionDecision, PartitionProblem


@dataclass
class Symmetry:
    """The constraints (*) as (o_k, j) pairs "slot of o_k ≤ slot of j", and per pair an automorphism σ
    (items and external ends, the ones it fixes left out) of H_k with σ(o_k) = j."""

    order: list[str]
    pairs: list[tuple[str, str]] = field(default_factory=list)
    maps: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    tests: int = 0  # VF2 tests run
    complete: bool = True  # False: the test cap cut the chain short


def labelled_graph(problem: PartitionProblem) -> nx.DiGraph:
    """Items and external ends as nodes (colour ``c``), links as arcs labelled by the multiset of their
    (src_port, kind, forward, order_only, traffic)."""
    g = nx.DiGraph()
    fixed_sinks = Counter()
    if problem.retiming is not None:
        for (src, port), t in problem.retiming.fixed_sinks:
            fixed_sinks[src, port, t] += 1
    pinned: dict[str, tuple] = {}
    for (src, port, t), n in sorted(fixed_sinks.items()):
        pinned.setdefault(src, ())
        pinned[src] += ((port, t, n),)
    types = [t.name for t in problem.bin_types]
    for item in problem.items:
        feasible = tuple(t.name for t in problem.feasible_types(item.name))
        allowed = tuple(t for t in types if problem.feasible is None or (item.name, t) in problem.feasible)
        colour = ("item", item.cluster, tuple(sorted(item.demand.items())), feasible, allowed,
                  ("pinned", item.name, pinned[item.name]) if item.name in pinned else ())
        g.add_node(item.name, c=colour)
    fixed: dict[str, tuple] = {}
    if problem.retiming is not None:
        for (src, port, cluster), t in sorted(problem.retiming.fixed_sources):
            fixed[src] = fixed.get(src, ()) + ((port, cluster, t),)
    labels: dict[tuple[str, str], Counter] = {}
    role: dict[str, set[str]] = {}
    inert = _inert_kinds(problem)
    for link in problem.links:
        if not link.forward and link.kind in inert:
            continue
        for end, side in ((link.src, "source"), (link.dst, "reader")):
            if not problem.is_item(end):
                role.setdefault(end, set()).add(side)
        labels.setdefault((link.src, link.dst), Counter())[
            (link.src_port, link.kind, link.forward, link.order_only, link.traffic)] += 1
    for end, sides in role.items():  # a value with a fixed delay keeps its place
        g.add_node(end, c=("external", tuple(sorted(sides)), ("fixed", end, fixed[end]) if end in fixed else ()))
    for (s, d), counter in labels.items():
        g.add_edge(s, d, l=tuple(sorted(counter.items())))
    return g


def _inert_kinds(problem: PartitionProblem) -> set[str]:
    """Link kinds whose backward links change no constraint: without traffic weight, a backward link enters
    no order or schedule row, only the arity rows of its kind; a kind with no more values (groups) than
    every bin type accepts as inputs and as outputs never fills them."""
    if problem.weights.traffic > 0:
        return set()
    count = Counter(g.kind for g in problem.groups())
    limits = [t.inputs for t in problem.bin_types] + [t.outputs for t in problem.bin_types]
    return {k for k, n in count.items() if all(limit.get(k, n) >= n for limit in limits)}


def _refine(g: nx.DiGraph, colour: dict[str, int]) -> dict[str, int]:
    """Colour refinement (1-dimensional Weisfeiler–Leman) of a directed graph with arc labels, from
    ``colour``; classes are numbered by their sorted signatures (no hashing: deterministic)."""
    classes = len(set(colour.values()))
    while True:
        signature = {v: (colour[v],
                         tuple(sorted((g.edges[v, w]["l"], colour[w]) for w in g.successors(v))),
                         tuple(sorted((g.edges[u, v]["l"], colour[u]) for u in g.predecessors(v))))
                     for v in g.nodes}
        number = {s: k for k, s in enumerate(sorted(set(signature.values())))}
        colour = {v: number[signature[v]] for v in g.nodes}
        if len(number) == classes:
            return colour
        classes = len(number)


def _base_colours(g: nx.DiGraph) -> dict[str, int]:
    number = {c: k for k, c in enumerate(sorted({repr(g.nodes[v]["c"]) for v in g.nodes}))}
    return {v: number[repr(g.nodes[v]["c"])] for v in g.nodes}


def _automorphism(g: nx.DiGraph, colour: dict[str, int], item: str, j: str, top: int) -> dict[str, str] | None:
    """An automorphism that keeps ``colour`` and maps ``item`` to ``j``, or None when there is none. Both
    marked, refined: different class sizes refute it; else matching nodes of the first non-singleton class
    are individualised in turn (first by name on both sides) until the classes are singletons, and the
    bijection is checked arc by arc; when such a guess fails, VF2 on the refined classes decides."""
    one, two = dict(colour), dict(colour)
    one[item], two[j] = top, top
    one, two = _refine(g, one), _refine(g, two)
    if Counter(one.values()) != Counter(two.values()):
        return None
    start = (one, two)
    while True:
        if Counter(one.values()) != Counter(two.values()):
            break
        sizes = Counter(one.values())
        open_classes = sorted(c for c, n in sizes.items() if n > 1)
        if not open_classes:
            node = {c: v for v, c in two.items()}
            sigma = {u: node[c] for u, c in one.items()}
            if _is_automorphism(g, sigma):
                return sigma
            break
        c = open_classes[0]
        u = min(v for v in g.nodes if one[v] == c)
        w = min(v for v in g.nodes if two[v] == c)
        mark = max(one.values()) + 1
        one, two = dict(one), dict(two)
        one[u], two[w] = mark, mark
        one, two = _refine(g, one), _refine(g, two)
    g1, g2 = g.copy(), g.copy()
    nx.set_node_attributes(g1, start[0], "k")
    nx.set_node_attributes(g2, start[1], "k")
    matcher = DiGraphMatcher(g1, g2, node_match=lambda a, b: a["k"] == b["k"],
                             edge_match=lambda a, b: a["l"] == b["l"])
    return next(matcher.isomorphisms_iter(), None)


def _is_automorphism(g: nx.DiGraph, sigma: dict[str, str]) -> bool:
    """σ keeps every node's colour ``c`` and maps every arc onto an arc with the same label."""
    if any(g.nodes[u]["c"] != g.nodes[w]["c"] for u, w in sigma.items()):
        return False
    for u, w, label in g.edges(data="l"):
        if not g.has_edge(sigma[u], sigma[w]) or g.edges[sigma[u], sigma[w]]["l"] != label:
            return False
    return True


def symmetry(problem: PartitionProblem, order: list[str]) -> Symmetry | None:
    """The pairs (*) along ``order`` (the module docstring), or None for a cyclic problem, one of more
    than ``settings.symmetry_items`` items, or with ``settings.item_symmetry`` off."""
    if not SETTINGS.item_symmetry or not problem.acyclic or len(problem.items) > SETTINGS.symmetry_items \
            or len(problem.items) < 2:
        return None
    g = labelled_graph(problem)
    out = Symmetry(list(order))
    colour = _refine(g, _base_colours(g))
    top = max(colour.values()) + 1
    for item in order:
        if len(set(colour.values())) == g.number_of_nodes():
            break  # discrete: only the identity is left
        candidates = sorted((v for v in g.nodes if colour[v] == colour[item] and v != item),
                            key=order.index)
        for j in candidates:
            if out.tests >= SETTINGS.symmetry_tests:
                out.complete = False
                return out
            out.tests += 1
            sigma = _automorphism(g, colour, item, j, top)
            if sigma is not None:
                out.pairs.append((item, j))
                out.maps[item, j] = {u: w for u, w in sigma.items() if u != w}
        colour[item] = top  # individualised: the next items' automorphisms fix it
        top += 1
        colour = _refine(g, colour)
        top = max(colour.values()) + 1
    return out


def canonical(problem: PartitionProblem, sym: Symmetry, decision: PartitionDecision) -> PartitionDecision:
    """``decision`` moved by automorphisms until it satisfies every pair (the construction in the module
    docstring): same bins, types and delays, the same objective."""
    assign = dict(decision.assignment)
    retiming = dict(decision.retiming)
    sources = dict(decision.source_delays)
    by_item: dict[str, list[str]] = {}
    for i, j in sym.pairs:
        by_item.setdefault(i, []).append(j)
    for i in sym.order:
        orbit = by_item.get(i)
        if not orbit:
            continue
        j = min(orbit, key=lambda n: (assign[n], sym.order.index(n)))
        if assign[j] >= assign[i]:
            continue
        sigma = sym.maps[i, j]
        inverse = {w: u for u, w in sigma.items()}
        assign = {n: assign[sigma.get(n, n)] for n in assign}
        # the value σ(s).p becomes s.p: its retiming and (external s) its delay move with it
        retiming = {(inverse.get(s, s), p, b): v for (s, p, b), v in retiming.items()}
        sources = {(inverse.get(s, s), p, c): v for (s, p, c), v in sources.items()}
    return PartitionDecision(assign, dict(decision.bin_types), dict(decision.delays), sources, retiming)
