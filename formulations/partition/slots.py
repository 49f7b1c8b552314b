"""The slot model of capacity-limited partitioning (variant ``ours``; seed 004 Table 4.2, L599–608, and
Tables 4.3/4.4 for merging): items into S bin slots, acyclic by a topological slot order.

Sets      I items (in topological order of the forward links when acyclic, else by decreasing size),
          B = {0..S−1} bin slots (S from the warm start: no better solution uses more bins),
          T bin types, G broadcast groups g = (source, port) with consumer items D_g and kind k_g,
          E forward item→item links.
Params    demand c[i,r]; per type: capacity C[τ,r], reduction (sum | max), input/output arity
          In[τ,k] / Out[τ,k], count n_τ, cost κ_τ; feasible types F(i) (pairs allowed, max-reduced and
          own-arity demands fit); retiming: hop latency L, buffer depth b_d; weights w_bins, w_ret, w_traf.
Vars      x[i,b] ∈ {0,1} item i in slot b (only b ∈ dom(i), :mod:`.bounds`);
          w[b,τ] ∈ {0,1} slot b is a used bin of type τ (one type: w[b] = "slot b used");
          y[g,b], z[g,b] ∈ {0,1} value g enters / leaves bin b (only for limited kinds, or traffic);
          a[i,b] ∈ {0,1} prefix "i is in a slot ≤ b" (acyclic only);
          retiming only: t[b] ∈ Z≥0 bin delay, e[g] ∈ Z≥0 external source delay, s[i] ∈ Z≥0 item delay,
          c[l] ∈ {0,1} link l crosses bins, r[g,b] ∈ Z≥0 retiming bins on the link of g into b.
Minimise  w_bins Σ κ_τ w[b,τ] + w_ret Σ r[g,b] + w_traf Σ traffic_g y[g,b]
s.t.      assignment        Σ_b x[i,b] = 1
          bin-type          x[i,b] ≤ Σ_{τ∈F(i)} w[b,τ];  Σ_τ w[b,τ] ≤ 1
          symmetry          slots used as a prefix: Σ_τ w[b,τ] ≥ Σ_τ w[b+1,τ] (not in a neighbourhood);
                            without acyclicity the representative rule x[i,b] = 0 for b > rank(i);
                            acyclic, between interchangeable items (:mod:`.symmetry`: automorphisms of
                            the labelled item graph): a[j,b] ≤ a[i,b] per pair (i, j) (slot of i ≤ slot
                            of j; not with a window or a neighbourhood)
          capacity          Σ_i c[i,r] x[i,b] ≤ Σ_τ C[τ,r] w[b,τ]      (sum resources; max resources
                            are exactly the feasibility F(i), Table 4.4's r = max)
          type-count        Σ_b w[b,τ] ≤ n_τ
          cluster           items of different clusters never share a slot (when solved jointly)
          input-arity       y[g,b] ≥ x[d,b] − x[src g,b] (d ∈ D_g; x[src] = 0 if external);
                            Σ_{g: k_g = k} y[g,b] ≤ Σ_τ In[τ,k] w[b,τ]   (a broadcast counts once, L637)
          output-arity      z[g,b] ≥ x[src,b] − x[d,b]; z[g,b] ≥ x[src,b] if g has an external consumer;
                            Σ_{g: k_g = k} z[g,b] ≤ Σ_τ Out[τ,k] w[b,τ]
          order             a[i,b] = a[i,b−1] + x[i,b];  a[d,b] ≤ a[s,b] ∀(s→d) ∈ E, b   — slots are
                            numbered in a topological order of the quotient graph, so it is acyclic
                            (no delays and no big-M; replaces Table 4.2's delay-based cycle constraint)
          retiming          t[b] ≤ t[b+1] (slots sorted by delay); s[i] = t[bin(i)] via prefix a;
                            s[d] ≥ s[src] + L·c[l], c[l] ≥ x[d,b] − x[src,b]; s[d] ≥ e[g] + L (external);
                            (b_d + L)·r[g,b] ≥ s[d] − s[src] − L − b_d − M(1 − x[d,b]); fixed delays of a
                            chunk (``Retiming.fixed_sources`` / ``fixed_sinks``, :mod:`.chunks`)
          lower-bound       Σ w ≥ the certified bound (:mod:`.bounds`) or a proven bin count
          retiming caps     (optional) Σ r ≤ k, Σ r ≥ k' (phase B, :mod:`.two_phase`); cap 0 is the
                            zero-retiming model: no r, no big-M, s[d] − s[src] ≤ L + b_d on every link
Warm start the best baseline, renumbered into canonical slot order (:func:`canonical_hint`), hints every
          variable.
Size      before any variable is made, the item-slot pairs (Σ |dom(i)|) at ``BYTES_PER_PAIR`` each are checked
          against the memory cap (:func:`solvermap.limits.check_estimate`: one line, exit 2, over it). ``window`` / ``free`` restrict the domains around the warm start (large problems; the
          neighbourhoods of the large-neighbourhood search).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from solvermap.formulations.partition.bounds import LowerBound, chain_counts, lower_bound, sum_resources
from solvermap.formulations.partition.symmetry import Symmetry, symmetry
from solvermap.formulations.partition.symmetry import canonical as canonical_items
from solvermap.formulations.problems.partition import (
    BinType,
    PartitionDecision,
    PartitionProblem,
    cross_arcs,
    objective,
    required_retiming,
)
from solvermap.formulations.solver import ModelBuilder, SolverConfig, linear_sum
from solvermap.limits import check_estimate

# memory of one item-slot pair at least: x[i,b] and its prefix a[i,b], each a MathOpt variable with its Python
# handle and its row entries, with the y/z rows of the values they touch (the builder measured 3-4 kB per pair
# on small merge models, 7.2-8.7 kB on the first 200 and 400 VBs of ResNet-18's merge on a 32 x 32 Plasticine;
# the 1 kB used before let AlexNet's 7.9 M pairs pass a 12 GB cap and grow past 9 GB)
BYTES_PER_PAIR = 4000.0


@dataclass
class PartitionModel:
    builder: ModelBuilder
    problem: PartitionProblem
    order: list[str]
    slots: int
    types: list[BinType]
    x: dict[tuple[str, int], Any]
    w: dict[tuple[int, int], Any]
    t: dict[int, Any] = field(default_factory=dict)
    e: dict[tuple[str, str], Any] = field(default_factory=dict)
    node_delay: dict[str, Any] = field(default_factory=dict)
    r: dict[tuple[tuple[str, str], int], Any] = field(default_factory=dict)
    cross: dict[tuple[str, str], Any] = field(default_factory=dict)
    bound: LowerBound | None = None
    variant: str = "ours"
    feasible: dict[str, list[int]] = field(default_factory=dict)  # item -> indices of the types it fits
    dom: dict[str, range] = field(default_factory=dict)  # item -> slots it may take
    a: dict[tuple[str, int], Any] = field(default_factory=dict)  # prefix "item in a slot ≤ b" (acyclic)
    y: dict[tuple[tuple[str, str], int], Any] = field(default_factory=dict)  # value enters bin
    z: dict[tuple[tuple[str, str], int], Any] = field(default_factory=dict)  # value leaves bin
    symmetry: Symmetry | None = None  # interchangeable items ordered by slot (:mod:`.symmetry`)


def item_order(problem: PartitionProblem) -> list[str]:
    if problem.acyclic:
        return problem.topological_items()
    sums = sum_resources(problem)

    def size(item) -> float:
        return max([item.demand.get(r, 0.0) / cap for r, cap in sums.items()] or [0.0])

    position = {n: k for k, n in enumerate(problem.item_names)}
    return [i.name for i in sorted(problem.items, key=lambda i: (-size(i), position[i.name]))]


def slot_count(problem: PartitionProblem, hint: PartitionDecision | None) -> int:
    n = len(problem.items)
    counted = [t.count for t in problem.bin_types]
    cap = n if any(c is None for c in counted) else min(n, sum(counted))
    if hint is None:
        return max(cap, 1)
    used = len(set(hint.assignment.values()))
    cheapest = min(t.cost for t in problem.bin_types) * problem.weights.bins
    if cheapest <= 0:
        return max(cap, used, 1)
    budget = math.floor(objective(problem, hint) / cheapest + 1e-9)
    return max(used, min(cap, budget), 1)


def canonical_hint(problem: PartitionProblem, hint: PartitionDecision, order: list[str]) -> PartitionDecision:
    """The hint renumbered into the model's slot order (topological / by delay / by first item)."""
    rank = {n: k for k, n in enumerate(order)}
    bins = sorted(set(hint.assignment.values()))
    if problem.acyclic:
        quotient = nx.DiGraph()
        quotient.add_nodes_from(bins)
        quotient.add_edges_from((hint.assignment[s], hint.assignment[d]) for s, d in problem.order_links()
                                if hint.assignment[s] != hint.assignment[d])
        first = {b: min(rank[n] for n, c in hint.assignment.items() if c == b) for b in bins}
        delay = {b: hint.delays.get(b, 0) for b in bins} if problem.retiming else dict.fromkeys(bins, 0)
        try:  # among the ready bins, the earliest (by delay, then first item) first
            new_order = list(nx.lexicographical_topological_sort(quotient, key=lambda b: (delay[b], first[b])))
        except nx.NetworkXUnfeasible:  # cyclic hint: keep it as it is (the solver ignores a bad hint)
            new_order = bins
        if problem.retiming and len(problem.clusters()) == 1:
            topo_rank = {b: k for k, b in enumerate(new_order)}
            new_order = sorted(new_order, key=lambda b: (delay[b], topo_rank[b]))
    else:
        new_order = sorted(bins, key=lambda b: min(rank[n] for n, c in hint.assignment.items() if c == b))
    renumber = {b: k for k, b in enumerate(new_order)}
    return PartitionDecision(
        {n: renumber[b] for n, b in hint.assignment.items()},
        {renumber[b]: hint.bin_types[b] for b in bins},
        {renumber[b]: t for b, t in hint.delays.items() if b in renumber},
        dict(hint.source_delays),
        {(s, p, renumber[b]): v for (s, p, b), v in hint.retiming.items() if b in renumber},
    )


def build(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None = None, *,
          min_bins: int | None = None, window: int | None = None, slots: int | None = None,
          max_retiming: int | None = None, min_retiming: int = 0,
          free: Collection[str] | None = None) -> PartitionModel:
    """The slot model (module docstring); ``min_bins`` is an externally proven bin-count bound; ``window``
    restricts every item to slots within ``window`` of its warm-start slot (the model's own bound is then not
    a global bound); ``max_retiming`` / ``min_retiming`` bound the retiming bins (max 0: the zero-retiming
    model, without retiming variables: every skew within the buffer); ``free`` (with a warm start) keeps every
    other item in its warm-start slot, a neighbourhood of the large-neighbourhood search (no prefix rule, so
    a slot may empty; the bound is local)."""
    order = item_order(problem)
    types = list(problem.bin_types)
    S = slots if slots is not None else slot_count(problem, hint)
    canonical = canonical_hint(problem, hint, order) if hint is not None else None
    symmetric = symmetry(problem, order) if window is None and free is None else None
    if symmetric is not None and canonical is not None:
        canonical = canonical_items(problem, symmetric, canonical)  # the warm start obeys the breaking
    model = PartitionModel(ModelBuilder(f"partition:{problem.name}"), problem, order, S, types, {}, {},
                           bound=_bound(problem, order, min_bins))
    model.feasible = {n: [k for k, t in enumerate(types) if t in problem.feasible_types(n)] for n in order}
    model.dom = _domains(problem, order, S, canonical, window, free)
    pairs = sum(len(d) for d in model.dom.values())
    check_estimate(f"{problem.name}: slot model of {len(order):,} items x {S:,} slots ({pairs:,} item-slot pairs)",
                   BYTES_PER_PAIR * pairs, problem.name)
    groups = problem.groups()
    _add_variables(model)
    _add_assignment(model)
    _add_bin_type_and_symmetry(model, prefix=free is None)  # (pinned items break the symmetry; a freed slot may empty)
    _add_capacity(model)
    _add_type_count(model)
    _add_cluster(model)
    _add_arity(model, groups)
    _add_order(model)
    if symmetric is not None:
        _add_item_symmetry(model, symmetric)
    retime_cost = _add_retiming(model, groups, zero=max_retiming == 0) if problem.retiming is not None else []
    _add_lower_bound(model)
    _add_retiming_caps(model, retime_cost, max_retiming, min_retiming)
    _set_objective(model, retime_cost, groups)
    if canonical is not None:
        _hint_ours(model, groups, canonical)
    return model


def _bound(problem: PartitionProblem, order: list[str], min_bins: int | None) -> LowerBound:
    """The certified bound of :mod:`.bounds`, raised to ``min_bins`` (phase A's proven optimum)."""
    bound = lower_bound(problem, order if problem.acyclic else None)
    if min_bins is not None and min_bins > bound.bins:
        cheapest = min(t.cost for t in problem.bin_types)
        bound = LowerBound(min_bins, min_bins * cheapest, f"phase A (no retiming) optimum: {min_bins} bins",
                           {**bound.parts, "phase A optimum": min_bins})
    return bound


def _domains(problem: PartitionProblem, order: list[str], S: int, canonical: PartitionDecision | None,
             window: int | None, free: Collection[str] | None) -> dict[str, range]:
    """dom(i): chain bounds (acyclic) or the representative rule, then the window or the neighbourhood."""
    dom: dict[str, range] = {}
    chains = chain_counts(problem, order) if problem.acyclic else None
    for k, n in enumerate(order):
        lo, hi = 0, S - 1
        if chains is not None:
            lo = chains[0][k] - 1
            hi = S - chains[1][k]
        elif not problem.acyclic:
            hi = min(hi, k)
        dom[n] = range(max(lo, 0), min(hi, S - 1) + 1)
    if window is not None and canonical is not None:  # large-neighbourhood restriction around the warm start
        for n in order:
            home = canonical.assignment[n]
            dom[n] = range(max(dom[n].start, home - window), min(dom[n].stop - 1, home + window) + 1)
    if free is not None and canonical is not None:  # a neighbourhood: every other item stays where it is
        for n in order:
            home = canonical.assignment[n]
            if n not in free and home in dom[n]:
                dom[n] = range(home, home + 1)
    return dom


def _add_variables(model: PartitionModel) -> None:
    """w[b,τ] per slot and type, x[i,b] per item and slot of its domain (items that fit some type)."""
    m, types = model.builder, model.types
    for b in range(model.slots):
        for k in range(len(types)):
            model.w[b, k] = m.binary(f"w[{b},{types[k].name}]")
    for n in model.order:
        if not model.feasible[n]:
            continue
        for b in model.dom[n]:
            model.x[n, b] = m.binary(f"x[{n},{b}]")


def _used(model: PartitionModel, b: int) -> Any:
    return linear_sum(model.w[b, k] for k in range(len(model.types)))


def _add_assignment(model: PartitionModel) -> None:
    """Σ_b x[i,b] = 1."""
    x, dom = model.x, model.dom
    for n in model.order:
        model.builder.add(linear_sum(x[n, b] for b in dom[n] if (n, b) in x) == 1, "assignment", n)


def _add_bin_type_and_symmetry(model: PartitionModel, *, prefix: bool) -> None:
    """bin-type x[i,b] ≤ Σ_{τ∈F(i)} w[b,τ], Σ_τ w[b,τ] ≤ 1; symmetry (``prefix``): used slots form a prefix."""
    m, types, S = model.builder, model.types, model.slots
    one_type = len(types) == 1
    for (n, b), var in model.x.items():
        allowed = model.feasible[n]
        if one_type or len(allowed) == len(types):
            m.add(var <= _used(model, b), "bin-type", f"{n},{b}")
        else:
            m.add(var <= linear_sum(model.w[b, k] for k in allowed), "bin-type", f"{n},{b}")
    for b in range(S):
        if len(types) > 1:
            m.add(_used(model, b) <= 1, "bin-type", f"one type {b}")
        if b + 1 < S and prefix:
            m.add(_used(model, b + 1) <= _used(model, b), "symmetry", f"prefix {b}")


def _add_capacity(model: PartitionModel) -> None:
    """Σ_i c[i,r] x[i,b] ≤ Σ_τ C[τ,r] w[b,τ] for sum resources (max resources are the feasibility F(i))."""
    m, problem, types, S, x, w = model.builder, model.problem, model.types, model.slots, model.x, model.w
    members: dict[int, list[str]] = {b: [] for b in range(S)}
    for n, b in x:
        members[b].append(n)
    resources = sorted({r for i in problem.items for r, v in i.demand.items() if v > 0})
    for r in resources:
        for b in range(S):
            terms = [problem.item(n).demand.get(r, 0.0) * x[n, b] for n in members[b] if problem.item(n).demand.get(r, 0.0)]
            if not terms:
                continue
            cap_terms = [types[k].cap(r) * w[b, k] for k in range(len(types))
                         if types[k].reduce_of(r) == "sum" and types[k].cap(r) > 0]
            if all(types[k].reduce_of(r) == "max" for k in range(len(types))):
                continue
            m.add(linear_sum(terms) <= linear_sum(cap_terms) if cap_terms else linear_sum(terms) <= 0,
                  "capacity", f"{r},{b}")


def _add_type_count(model: PartitionModel) -> None:
    """Σ_b w[b,τ] ≤ n_τ."""
    for k, t in enumerate(model.types):
        if t.count is not None and t.count < model.slots:
            model.builder.add(linear_sum(model.w[b, k] for b in range(model.slots)) <= t.count, "type-count", t.name)


def _add_cluster(model: PartitionModel) -> None:
    """Items of different clusters never share a slot (only when clusters are solved jointly)."""
    m, x = model.builder, model.x
    clusters = model.problem.clusters()
    if len(clusters) <= 1:
        return
    names = sorted(clusters)
    for b in range(model.slots):
        cvar = {c: m.binary(f"cluster[{b},{c}]") for c in names}
        m.add(linear_sum(cvar.values()) <= 1, "cluster", f"one {b}")
        for c in names:
            for n in clusters[c]:
                if (n, b) in x:
                    m.add(x[n, b] <= cvar[c], "cluster", f"{n},{b}")


def _add_arity(model: PartitionModel, groups) -> None:
    """input-arity y[g,b] ≥ x[d,b] − x[src g,b], Σ_{g of kind k} y[g,b] ≤ Σ_τ In[τ,k] w[b,τ] (a broadcast counts
    once); output-arity z[g,b] ≥ x[src,b] − x[d,b] (≥ x[src,b] with an external consumer), Σ z ≤ Out."""
    m, types, x, w, dom = model.builder, model.types, model.x, model.w, model.dom
    limited_in = {g.kind for g in groups if any(g.kind in t.inputs for t in types)}
    limited_out = {g.kind for g in groups if any(g.kind in t.outputs for t in types)}
    traffic = model.problem.weights.traffic > 0
    y, z = model.y, model.z
    for g in groups:
        src = g.key[0] if g.source_is_item else None
        if g.kind in limited_in or traffic:
            slots = sorted({b for d in g.consumers for b in dom[d] if (d, b) in x})
            for b in slots:
                var = y[g.key, b] = m.binary(f"y[{g.key[0]}.{g.key[1]},{b}]")
                for d in g.consumers:
                    if (d, b) in x:
                        rhs = x[d, b] - x[src, b] if (src, b) in x else x[d, b]
                        m.add(var >= rhs, "input-arity", f"{g.key[0]}->{d},{b}")
        if g.kind in limited_out and src is not None:
            for b in dom[src]:
                if (src, b) not in x:
                    continue
                var = z[g.key, b] = m.binary(f"z[{g.key[0]}.{g.key[1]},{b}]")
                if g.external_consumer:
                    m.add(var >= x[src, b], "output-arity", f"{g.key[0]}->ext,{b}")
                for d in g.consumers:
                    rhs = x[src, b] - x[d, b] if (d, b) in x else x[src, b]
                    m.add(var >= rhs, "output-arity", f"{g.key[0]}->{d},{b}")
    kind_of = {g.key: g.kind for g in groups}
    for side, table, limited in (("inputs", y, limited_in), ("outputs", z, limited_out)):
        group_name = "input-arity" if side == "inputs" else "output-arity"
        by_slot: dict[tuple[str, int], list[Any]] = {}
        for (key, b), var in table.items():
            if kind_of[key] in limited:
                by_slot.setdefault((kind_of[key], b), []).append(var)
        for (kind, b), terms in sorted(by_slot.items()):
            total = len(terms)
            cap_terms = [min(getattr(t, side).get(kind, total), total) * w[b, k] for k, t in enumerate(types)]
            m.add(linear_sum(terms) <= linear_sum(cap_terms), group_name, f"{kind} limit {b}")


def _add_order(model: PartitionModel) -> None:
    """order a[i,b] = a[i,b−1] + x[i,b]; a[d,b] ≤ a[s,b] per forward link (slots in topological order)."""
    problem, m, x, dom, S, a = model.problem, model.builder, model.x, model.dom, model.slots, model.a
    if not problem.acyclic:
        return
    for n in model.order:
        prev = None
        for b in range(S):
            if b < dom[n].start:
                continue
            if b >= dom[n].stop - 1:
                break  # a[n, b] = 1 from the last slot of the domain on
            var = a[n, b] = m.binary(f"a[{n},{b}]")
            step = x[n, b] if (n, b) in x else 0
            m.add(var == (prev + step if prev is not None else step), "order", f"prefix {n},{b}")
            prev = var
    for s, d in problem.order_links():
        if dom[d].stop - 1 < dom[s].start:  # d must precede s by the bounds: impossible
            m.add(linear_sum([]) >= 1, "order", f"{s}->{d},bounds")
            continue
        # outside [start of d, end of s) the constraint is trivially true (a constant side)
        for b in range(max(0, dom[d].start), min(S, dom[s].stop)):
            lhs = _prefix(a, dom, d, b)
            rhs = _prefix(a, dom, s, b)
            if isinstance(lhs, int) and isinstance(rhs, int):
                if lhs > rhs:
                    m.add(linear_sum([]) >= 1, "order", f"{s}->{d},{b}")  # impossible by bounds
                continue
            if isinstance(rhs, int) and rhs == 1:
                continue
            if isinstance(lhs, int) and lhs == 0:
                continue
            m.add(_expr(lhs) <= _expr(rhs), "order", f"{s}->{d},{b}")


def _add_item_symmetry(model: PartitionModel, sym: Symmetry) -> None:
    """symmetry (items) a[j,b] ≤ a[i,b] per pair (i, j) of :mod:`.symmetry` (the slot of i ≤ the slot of j)."""
    m, dom, a, S = model.builder, model.dom, model.a, model.slots
    model.symmetry = sym
    for i, j in sym.pairs:
        for b in range(S):
            lhs, rhs = _prefix(a, dom, j, b), _prefix(a, dom, i, b)
            if isinstance(lhs, int) and isinstance(rhs, int):
                # both fixed by the domains (σ-invariant, so never 1 > 0): nothing to add. Leaving a pair's row
                # out is always safe — the canonical optimum satisfies any subset of the rows —, whereas an
                # empty row ≥ 1 would turn a slip in the domains into a false proof of infeasibility.
                continue
            if (isinstance(rhs, int) and rhs == 1) or (isinstance(lhs, int) and lhs == 0):
                continue
            m.add(_expr(lhs) <= _expr(rhs), "symmetry", f"{i}<={j},{b}")


def _add_lower_bound(model: PartitionModel) -> None:
    """Σ w ≥ the certified bound's bin count (:mod:`.bounds`)."""
    bound, w = model.bound, model.w
    if bound.bins > 1:
        if len(model.types) == 1:
            model.builder.add(linear_sum(w[b, 0] for b in range(model.slots)) >= bound.bins, "lower-bound", bound.reason)
        else:
            model.builder.add(linear_sum(w.values()) >= bound.bins, "lower-bound", bound.reason)


def _add_retiming_caps(model: PartitionModel, retime_cost: list[Any], max_retiming: int | None, min_retiming: int) -> None:
    """Σ r ≤ ``max_retiming`` (what can still beat an incumbent) and Σ r ≥ ``min_retiming`` (what every solution needs)."""
    if retime_cost and max_retiming is not None:
        model.builder.add(linear_sum(retime_cost) <= max_retiming, "retiming", "at most the retiming that still improves")
    if retime_cost and min_retiming > 0:
        model.builder.add(linear_sum(retime_cost) >= min_retiming, "retiming", "at least the retiming every solution needs")


def _set_objective(model: PartitionModel, retime_cost: list[Any], groups) -> None:
    """w_bins Σ κ_τ w[b,τ] + w_ret Σ r[g,b] + w_traf Σ traffic_g y[g,b]."""
    problem, types, S, w = model.problem, model.types, model.slots, model.w
    cost_expr = linear_sum(types[k].cost * w[b, k] for b in range(S) for k in range(len(types)))
    terms = [problem.weights.bins * cost_expr]
    if retime_cost and problem.weights.retiming:
        terms.append(problem.weights.retiming * linear_sum(retime_cost))
    if problem.weights.traffic > 0:
        tr = {g.key: g.traffic for g in groups}
        terms.append(problem.weights.traffic * linear_sum(tr[key] * var for (key, _), var in model.y.items()))
    model.builder.minimize(linear_sum(terms))


def _prefix(a, dom, n: str, b: int) -> Any:
    """a[n, b] as a variable or a constant from the domain bounds."""
    if b < dom[n].start:
        return 0
    if b >= dom[n].stop - 1:
        return 1
    return a[n, b]


def _expr(v: Any) -> Any:
    return linear_sum([v]) if not isinstance(v, int) else linear_sum([]) + v


def _add_retiming(model: PartitionModel, groups, zero: bool = False) -> list[Any]:
    """retiming: delays, schedule and retiming rows (module docstring); returns the retiming variables.
    ``zero``: no retiming variables, every value's skew at most the buffer depth instead (s[d] − s[src] ≤
    L + b_d, which also holds inside a bin, so no big-M)."""
    m, dom, a = model.builder, model.dom, model.a
    problem, x, S = model.problem, model.x, model.slots
    L, depth = problem.retiming.hop_latency, problem.retiming.buffer_depth
    cluster = {i.name: i.cluster for i in problem.items}

    ext_key = problem.external_source  # (schedules are per cluster)
    ext_keys = problem.external_sources()
    fixed = {k: v for k, v in problem.retiming.fixed_sources if k in set(ext_keys)}
    # fixed delays keep their differences, shifted to start at 0 (with readers outside: the caller's budget)
    base = 0 if problem.retiming.fixed_sinks else min(fixed.values(), default=0)
    spread = max(fixed.values(), default=0) - base
    inside = set(model.order)
    sinks = [(i, src, port, t - base) for i, ((src, port), t) in enumerate(problem.retiming.fixed_sinks)
             if src in inside]
    # per cluster, gaps between consecutive delays never need to exceed L (beyond the fixed sources' spread)
    horizon = max([spread + L * (S + len(ext_keys))] + [t for *_, t in sinks])
    big = horizon + L + depth
    sorted_delays = len(set(cluster.values())) == 1  # one schedule: slots can be sorted by delay
    t = {b: m.integer(0, horizon, f"t[{b}]") for b in range(S)}
    s = {n: m.integer(0, horizon, f"s[{n}]") for n in model.order}
    if sorted_delays:
        for b in range(S - 1):
            m.add(t[b] <= t[b + 1], "symmetry", f"delay order {b}")
    for n in model.order:
        # sorted delays: s[n] ≥ t[start] and s[n] ≤ t[last] imply the rows outside the domain
        for b in (dom[n] if sorted_delays else range(S)):
            if sorted_delays:  # s[n] = t[bin(n)] through the prefix variables (delays are sorted)
                below = _prefix(a, dom, n, b - 1) if b > 0 else 0  # n in a slot < b
                upto = _prefix(a, dom, n, b)  # n in a slot ≤ b
                if not (isinstance(below, int) and below == 1):
                    m.add(s[n] >= t[b] - big * _expr(below), "delay-consistency", f"{n}>={b}")
                if not (isinstance(upto, int) and upto == 0):
                    m.add(s[n] <= t[b] + big * (1 - _expr(upto)), "delay-consistency", f"{n}<={b}")
            elif (n, b) in x:
                m.add(s[n] >= t[b] - big * (1 - x[n, b]), "delay-consistency", f"{n}>={b}")
                m.add(s[n] <= t[b] + big * (1 - x[n, b]), "delay-consistency", f"{n}<={b}")
    e = {k: m.integer(fixed[k] - base, fixed[k] - base, f"e[{k[0]}.{k[1]}@{k[2]}]") if k in fixed
         else m.integer(0, horizon, f"e[{k[0]}.{k[1]}@{k[2]}]") for k in ext_keys}
    retime = []
    r: dict[tuple[tuple[str, str], int], Any] = {}
    for g in groups:
        for d in g.forward_consumers:
            key = ext_key(g, d)
            src = g.key[0]
            if key is not None:
                start = e[key]
                m.add(s[d] >= start + L, "schedule", f"ext {src}->{d}")
            else:
                start = s[src]
                if (src, d) not in model.cross:
                    cross = model.cross[src, d] = m.binary(f"c[{src}->{d}]")
                    for b in dom[d]:
                        if (d, b) in x:
                            rhs = x[d, b] - x[src, b] if (src, b) in x else x[d, b]
                            m.add(cross >= rhs, "schedule", f"cross {src}->{d},{b}")
                    m.add(s[d] >= s[src] + L * cross, "schedule", f"{src}->{d}")
            if zero:
                m.add(s[d] - start <= L + depth, "retiming", f"none {src}->{d}")
                continue
            for b in dom[d]:
                if (d, b) not in x:
                    continue
                if (g.key, b) not in r:
                    r[g.key, b] = m.integer(0, max(1, math.ceil(horizon / (depth + L))), f"r[{g.key[0]}.{g.key[1]},{b}]")
                    retime.append(r[g.key, b])
                m.add((depth + L) * r[g.key, b] >= s[d] - start - L - depth - big * (1 - x[d, b]),
                      "retiming", f"{g.key[0]}->{d},{b}")
    for i, src, port, t_sink in sinks:  # a reader outside at a fixed delay
        m.add(s[src] <= t_sink - L, "schedule", f"sink {src}->{i}")
        if zero:
            m.add(s[src] >= t_sink - L - depth, "retiming", f"none {src}->sink {i}")
            continue
        if t_sink - L - depth > 0:  # else no delay of src makes the link wait beyond the buffer
            var = m.integer(0, max(1, math.ceil(horizon / (depth + L))), f"r[{src}.{port},sink {i}]")
            r[(src, port), -(i + 1)] = var
            retime.append(var)
            m.add((depth + L) * var >= t_sink - s[src] - L - depth, "retiming", f"{src}->sink {i}")
    for src, d in problem.order_links():  # keeps "sorted by delay" consistent with the slot order
        if cluster[src] == cluster[d]:
            m.add(s[d] >= s[src], "schedule", f"order {src}->{d}")
    model.t, model.e, model.node_delay, model.r = t, e, s, r
    return retime


def _hint_ours(model: PartitionModel, groups, hint: PartitionDecision) -> None:
    """Warm start: every variable's value derived from ``hint`` (in canonical slot order)."""
    m, problem, S = model.builder, model.problem, model.slots
    dom, a, y, z = model.dom, model.a, model.y, model.z
    assign = hint.assignment
    if any(b >= S for b in assign.values()) or any(assign[n] not in dom[n] for n in model.order):
        return  # not representable in this slot space (e.g. violates a bound): no warm start
    type_index = {t.name: k for k, t in enumerate(model.types)}
    for (b, k), var in model.w.items():
        m.hint(var, 1 if b in hint.bin_types and type_index[hint.bin_types[b]] == k else 0)
    for (n, b), var in model.x.items():
        m.hint(var, 1 if assign[n] == b else 0)
    for (n, b), var in a.items():
        m.hint(var, 1 if assign[n] <= b else 0)
    gmap = {g.key: g for g in groups}
    for (key, b), var in y.items():
        g = gmap[key]
        home = assign.get(key[0]) if g.source_is_item else None
        m.hint(var, 1 if b != home and any(assign[c] == b for c in g.consumers) else 0)
    for (key, b), var in z.items():
        g = gmap[key]
        here = assign[key[0]] == b
        m.hint(var, 1 if here and (g.external_consumer or any(assign[c] != b for c in g.consumers)) else 0)
    if problem.retiming is not None and model.t:
        delays = dict(hint.delays)
        for b in range(S):
            delays.setdefault(b, max(delays.values(), default=0))
        for b, var in model.t.items():
            m.hint(var, delays[b])
        for n, var in model.node_delay.items():
            m.hint(var, delays[assign[n]])
        for key, var in model.e.items():
            m.hint(var, hint.source_delays.get(key, 0))
        for (key, b), var in model.r.items():
            m.hint(var, hint.retiming.get((key[0], key[1], b), 0))
        for (src, d), var in model.cross.items():
            m.hint(var, 1 if assign[src] != assign[d] else 0)


def decode(problem: PartitionProblem, built: PartitionModel, solution: Any) -> PartitionDecision:
    assignment: dict[str, int] = {}
    for (n, b), var in built.x.items():
        if solution.is_one(var):
            assignment[n] = b
    slot_type = {}
    for (b, k), var in built.w.items():
        if solution.is_one(var):
            slot_type[b] = built.types[k].name
    used = sorted(set(assignment.values()))
    renumber = {b: k for k, b in enumerate(used)}
    types = {renumber[b]: slot_type.get(b, built.types[0].name) for b in used}
    assign = {n: renumber[b] for n, b in assignment.items()}
    if problem.retiming is None:
        return PartitionDecision(assign, types)
    if built.variant == "table42":
        delays = {renumber[b]: int(round(solution.value(built.t[b]))) for b in used}
    else:
        delays = {renumber[b]: solution.rounded(built.t[b]) for b in used}
    sources = {key: solution.rounded(var) for key, var in built.e.items()}
    need = {a[0][1] for a in cross_arcs(problem, assign) if isinstance(a[0], tuple)}
    for key in sorted(need - set(sources)):  # e.g. the literal variant has no delay for this value
        consumers = [delays[q] for p, q, _ in cross_arcs(problem, assign) if isinstance(p, tuple) and p[1] == key]
        sources[key] = max(0, min(consumers) - problem.retiming.hop_latency)
    retiming = required_retiming(problem, assign, delays, sources)
    return PartitionDecision(assign, types, delays, sources, retiming)

