"""Capacity-limited partitioning, merging and heterogeneous bin packing (seed 004 Tables 4.1–4.4).

The one shared model for "put items into bins": SARA compute partitioning (Table 4.2, L599–608),
SARA global merging (Tables 4.3/4.4, L615–623, L670), PUMA core/tile grouping and memory-tile packing.
Problem, decision and objective: :mod:`solvermap.formulations.problems.partition`.

Variant ``ours`` (default)
--------------------------
Sets      I items (in topological order of the forward links when acyclic, else by decreasing size),
          B = {0..S−1} bin slots (S from the warm start: no better solution uses more bins),
          T bin types, G broadcast groups g = (source, port) with consumer items D_g and kind k_g,
          E forward item→item links.
Params    demand c[i,r]; per type: capacity C[τ,r], reduction (sum | max), input/output arity
          In[τ,k] / Out[τ,k], count n_τ, cost κ_τ; feasible types F(i) (pairs allowed, max-reduced and
          own-arity demands fit); retiming: hop latency L, buffer depth b_d; weights w_bins, w_ret, w_traf.
Vars      x[i,b] ∈ {0,1} item i in slot b (only b ∈ dom(i), see bounds);
          w[b,τ] ∈ {0,1} slot b is a used bin of type τ (one type: w[b] = "slot b used");
          y[g,b], z[g,b] ∈ {0,1} value g enters / leaves bin b (only for limited kinds, or traffic);
          a[i,b] ∈ {0,1} prefix "i is in a slot ≤ b" (acyclic only);
          retiming only: t[b] ∈ Z≥0 bin delay, e[g] ∈ Z≥0 external source delay, s[i] ∈ Z≥0 item delay,
          c[l] ∈ {0,1} link l crosses bins, r[g,b] ∈ Z≥0 retiming bins on the link of g into b.
Minimise  w_bins Σ κ_τ w[b,τ] + w_ret Σ r[g,b] + w_traf Σ traffic_g y[g,b]
s.t.      assignment        Σ_b x[i,b] = 1
          bin-type          x[i,b] ≤ Σ_{τ∈F(i)} w[b,τ];  Σ_τ w[b,τ] ≤ 1
          capacity          Σ_i c[i,r] x[i,b] ≤ Σ_τ C[τ,r] w[b,τ]      (sum resources; max resources
                            are exactly the feasibility F(i), Table 4.4's r = max)
          type-count        Σ_b w[b,τ] ≤ n_τ
          input-arity       y[g,b] ≥ x[d,b] − x[src g,b] (d ∈ D_g; x[src] = 0 if external);
                            Σ_{g: k_g = k} y[g,b] ≤ Σ_τ In[τ,k] w[b,τ]   (a broadcast counts once, L637)
          output-arity      z[g,b] ≥ x[src,b] − x[d,b]; z[g,b] ≥ x[src,b] if g has an external consumer;
                            Σ_{g: k_g = k} z[g,b] ≤ Σ_τ Out[τ,k] w[b,τ]
          order             a[i,b] = a[i,b−1] + x[i,b];  a[d,b] ≤ a[s,b] ∀(s→d) ∈ E, b   — slots are
                            numbered in a topological order of the quotient graph, so it is acyclic
                            (no delays and no big-M; replaces Table 4.2's delay-based cycle constraint)
          cluster           items of different clusters never share a slot (per-cluster solves)
          retiming          t[b] ≤ t[b+1] (slots sorted by delay); s[i] = t[bin(i)] via prefix a;
                            s[d] ≥ s[src] + L·c[l], c[l] ≥ x[d,b] − x[src,b]; s[d] ≥ e[g] + L (external);
                            (b_d + L)·r[g,b] ≥ s[d] − s[src] − L − b_d − M(1 − x[d,b])
Symmetry  slots used as a prefix: Σ_τ w[b,τ] ≥ Σ_τ w[b+1,τ]; without acyclicity the representative
          rule x[i,b] = 0 for b > rank(i) (bins numbered by their first item).
Bounds    (certified, :func:`lower_bound`) Σ κ w ≥ LB = max of: resource bound ⌈Σ c / C⌉; arity bound
          ⌈#external inputs (outputs) of kind k / In (Out)⌉; big-item bound (items that pairwise exceed a
          capacity); chain bound max_i ⌈anc(i)/C⌉ + ⌈desc(i)/C⌉ − 1 (ancestors fill a prefix of slots,
          descendants a suffix), which also fixes dom(i) = [⌈anc(i)/C⌉ − 1, S − ⌈desc(i)/C⌉];
          type-exclusive bound Σ_τ ⌈demand of the items only τ can hold / C_τ⌉ (several types).
Two phases (retiming problems) (A) the model without retiming: its optimum P* bins is a lower bound of
          the joint objective (retiming bins ≥ 0) and its solution, scheduled, a candidate — optimal when
          it needs no retiming; else (B) the joint model with Σ bins ≥ P*, warm-started: first uncapped on
          a short share of the budget (JOINT_FIRST_SHARE; an actor it proves there gets the partition the
          joint model alone would give), then, when phase A proved P* (else the joint model keeps the
          whole budget), with the retiming capped: Σ r ≤ 0 (the zero-retiming model: no r, no big-M,
          s[d] − s[src] ≤ L + b_d on every link), then Σ r ≤ k = ⌈(incumbent − P*) / w_ret⌉ − 1 (more
          cannot beat the incumbent), first on P* slots, then on the incumbent's slots. After cap k,
          min(bound of the capped model, P* + w_ret (k + 1)) is a certified joint lower bound; on P* slots
          also min(·, (P* + 1) cheapest + w_ret r_min), r_min the retiming every solution needs (1 when the
          zero-retiming model is infeasible): the optimum often keeps P* bins (blackscholes: 14 + 2,
          proven on 14 slots in 16 s, 32 s on the incumbent's 25).
Delay     relaxation (phase B on LP-based backends, ``retiming_search`` "auto" or "columns", for acyclic
          retiming problems with enumerable convex bins and no fixed delays): the cover by convex bins, an
          integer delay s[i] ∈ [0, H] per item, H = L·(S + #external values) (a schedule compresses so
          that consecutive delays are ≤ L apart): s[d] − s[src] ≥ L(1 − together(src, d)) and
          s[d] − s[src] ≤ H(1 − together(src, d)) per link, s[d] ≥ e[k] + L per external value,
          s[d] ≥ s[src] per order link, and one retiming count per value,
          (b_d + L)·R[g] ≥ s[d] − s[src] − L − b_d over its readers d. A relaxation: items of a bin are
          tied only where linked (a bin's unlinked items may drift apart, the cover may be cyclic) and a
          value's retiming is counted once, not per reading bin. Small and big-M-light, so its LP bounds
          well where the slot model's does not (blackscholes: cost ≤ 15 refuted by SCIP in 10–35 s, HiGHS
          proves 16 by minimising in about 25 s; SCIP proves neither capped slot model in 300 s).
          Phase B then alternates (1) answers from the layered column model
          (:mod:`~solvermap.formulations.partition_layers`: a convex bin at a layer t runs at delay L·t,
          a primal model whose time-indexed LP suits LP-based branch and bound) with T₀, T₀ + 1, …,
          T₀ + LAYER_EXTRA layers, T₀ the fewest its windows allow, at most LAYER_SHARE of what is left
          each; and (2) levels "relaxed cost ≤ v", v from the bound upwards in steps of the objective's
          granularity q: a refuted level lifts the bound to v + q, the first level not refuted ends the
          levels (a satisfiable level is slow to solve: never more than LEVEL_SHARE of what is left). So
          an optimal incumbent is proven without search (blackscholes on SCIP: T = 8 gives 17, level 14
          refuted, T = 9 gives 16, level 15 refuted: optimal). (3) With the gap still open, a
          large-neighbourhood search on the exact slot model from phase A's candidate
          (:func:`_neighbourhood_search`: items of a few bins freed, the rest pinned, ``build(free=…)``)
          on what is left. CP-SAT ("auto") keeps the capped slot models, which its propagation proves
          fastest (blackscholes optimal in about 13 s).
Columns   (acyclic, no retiming, when at most COLUMN_BUDGET convex bins exist) after a short slot-model
          solve: every bin of an acyclic partition is convex, so an exact cover of the items by the
          enumerated convex bins (x[c,τ] ∈ {0,1}, Σ_{c∋i} x = 1, min Σ κ x) is a relaxation; a cover
          whose quotient has a cycle B_1..B_k (links o_j → e_{j+1}) is cut off by
          Σ_j together(e_j, o_j) − (k' − 1) ≤ together(o_j, e_{j+1}) for every j, together(u, v) =
          Σ_{c∋u,v} x[c,·] (a closed walk through bins cannot advance in a topological order, so the bins
          coincide); rounds repeat until a cover is acyclic (optimal) or time runs out (its bound stays
          certified). The slot model then runs with the proven bin count.
Warm start the best baseline, renumbered into canonical slot order, hints every variable.
Decomposition clusters solve independently when no bin type has a finite count.
Chunks    an acyclic cluster of more than CHUNK_ITEMS items is cut into consecutive groups of the warm
          start's bins (about CHUNK_SIZE items, in the order of its schedule), solved one after another with
          the slot model; with retiming, the delays of values read from earlier chunks are fixed
          (``Retiming.fixed_sources``: e[g] fixed), so each chunk pays exactly the retiming of the links
          into it, and values read by later chunks have their readers at the warm start's delays
          (``Retiming.fixed_sinks``: s[src] ≤ D − L, (b_d + L)·r ≥ D − s[src] − L − b_d), so a chunk pays
          an estimate of the links out of it and the warm start stays feasible for every chunk.
          Kept only when better than the warm start; only the combinatorial bound is global.
Large     above 250,000 item × slot pairs each item is restricted to slots within a window of its warm-start
          slot (a large-neighbourhood search); only the combinatorial lower bound is then reported.
Budget    ``time_limit_s`` is split between phases, models, cut rounds and clusters by a
          :class:`~solvermap.formulations.solver.WorkClock`. Deterministic configs charge each solve by
          its outcome (:func:`_work`: the whole budget when stopped by its limit, a size proxy when
          finished), never by the wall clock, so the same config gives the same partition on any load.

Variant ``table42`` (the seed's literal formulation, for comparison on the same backend)
------------------------------------------------------------------------------------------
B[i,j] for every item and every one of P = (warm start's bin count) columns; u_j = proj_B(Σ_i B[i,j])
by big-M; node delays d_n and partition delays d_p with big-M Delay Consistency; Dependency
d_n(j) ≥ d_n(i) + L·1[p_i ≠ p_j] (this is also its only cycle constraint); Output arity
Σ and(B[s,p], proj_B(Σ_dest (1 − B[d,p]))); Input arity Σ max{proj_B(Σ_dest B[d,:]) − B[s,:], 0};
retiming α Σ_edges proj_B(max{d_n(j) − d_n(i) − L − b_d, 0}); Constant Validity d ≤ K. No symmetry
breaking, no lower bounds, no variable fixing. Single bin type only (partitioning, Table 4.2).
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvermap.errors import ConfigError
from solvermap.formulations import partition_layers as layers
from solvermap.formulations.decision import Solved, combine
from solvermap.formulations.problems.partition import (
    BinType,
    GroupKey,
    SourceKey,
    _topo,
    complete,
    cross_arcs,
    PartitionDecision,
    PartitionProblem,
    objective,
    required_retiming,
)
from solvermap.formulations.solver import (
    PYOMO_BACKENDS,
    ModelBuilder,
    SolveResult,
    SolverConfig,
    Status,
    WorkClock,
    explain_infeasible,
    linear_sum,
    relative_gap,
    solve_milp,
)

NAME = "partition"
KIND = "milp"
VARIANTS = ("ours", "table42")


# ---------------------------------------------------------------------- bounds and diagnosis


@dataclass(frozen=True)
class LowerBound:
    """A certified lower bound on the bins' cost, with the argument that gives it."""

    bins: int  # lower bound on the number of bins
    cost: float  # lower bound on Σ cost (bins × cheapest cost)
    reason: str
    parts: dict[str, int] = field(default_factory=dict)


def _sum_resources(problem: PartitionProblem) -> dict[str, float]:
    """Resources every type reduces by sum → the largest capacity any type offers."""
    out: dict[str, float] = {}
    resources = {r for i in problem.items for r, v in i.demand.items() if v > 0}
    for r in sorted(resources):
        if any(t.reduce_of(r) == "max" for t in problem.bin_types):
            continue
        cap = max(t.cap(r) for t in problem.bin_types)
        if cap > 0:
            out[r] = cap
    return out


def _reachability(problem: PartitionProblem, order: list[str]) -> np.ndarray | None:
    """anc[i, j] = item j is an ancestor of (or equal to) item i, in ``order`` indexing."""
    n = len(order)
    if n > 6000:
        return None
    index = {name: k for k, name in enumerate(order)}
    anc = np.eye(n, dtype=bool)
    preds: list[list[int]] = [[] for _ in range(n)]
    for s, d in problem.order_links():
        preds[index[d]].append(index[s])
    for k in range(n):
        for p in preds[k]:
            anc[k] |= anc[p]
    return anc


def _chain_counts(problem: PartitionProblem, order: list[str]) -> tuple[list[int], list[int]] | None:
    """Per item (in ``order``): bins needed by its ancestors (incl. itself) and by its descendants."""
    if not problem.acyclic:
        return None
    anc = _reachability(problem, order)
    if anc is None:
        return None
    n = len(order)
    need_up = np.ones(n, dtype=np.int64)
    need_down = np.ones(n, dtype=np.int64)
    for r, cap in _sum_resources(problem).items():
        demand = np.array([problem.item(name).demand.get(r, 0.0) for name in order])
        up = anc.astype(np.float64) @ demand
        down = anc.T.astype(np.float64) @ demand
        need_up = np.maximum(need_up, np.ceil(up / cap - 1e-9).astype(np.int64))
        need_down = np.maximum(need_down, np.ceil(down / cap - 1e-9).astype(np.int64))
    index = {name: k for k, name in enumerate(order)}
    for kind, limit in _max_limits(problem, "inputs").items():
        ext = [g for g in problem.groups() if g.kind == kind and not g.source_is_item]
        if not ext or limit <= 0:
            continue
        consumed = np.zeros((n, len(ext)), dtype=bool)
        for k, g in enumerate(ext):
            for c in g.consumers:
                consumed[index[c], k] = True
        count = (anc.astype(np.int64) @ consumed.astype(np.int64)) > 0
        need_up = np.maximum(need_up, np.ceil(count.sum(axis=1) / limit - 1e-9).astype(np.int64))
    for kind, limit in _max_limits(problem, "outputs").items():
        ext = [g for g in problem.groups() if g.kind == kind and g.source_is_item and g.external_consumer]
        if not ext or limit <= 0:
            continue
        produced = np.zeros((n, len(ext)), dtype=bool)
        for k, g in enumerate(ext):
            produced[index[g.key[0]], k] = True
        count = (anc.T.astype(np.int64) @ produced.astype(np.int64)) > 0
        need_down = np.maximum(need_down, np.ceil(count.sum(axis=1) / limit - 1e-9).astype(np.int64))
    return need_up.tolist(), need_down.tolist()


def _max_limits(problem: PartitionProblem, side: str) -> dict[str, int]:
    """Per link kind: the largest arity limit of any type, when every type limits that kind."""
    kinds = {g.kind for g in problem.groups()}
    out = {}
    for k in sorted(kinds):
        limits = [getattr(t, side).get(k) for t in problem.bin_types]
        if all(v is not None for v in limits):
            out[k] = max(limits)
    return out


def lower_bound(problem: PartitionProblem, order: list[str] | None = None) -> LowerBound:
    """Certified lower bound on the number (and cost) of bins; see the module docstring."""
    if not problem.items:
        return LowerBound(0, 0.0, "no items")
    parts: dict[str, int] = {"one bin": 1}
    for r, cap in _sum_resources(problem).items():
        parts[f"total {r}"] = math.ceil(sum(i.demand.get(r, 0.0) for i in problem.items) / cap - 1e-9)
    for kind, limit in _max_limits(problem, "inputs").items():
        n = sum(1 for g in problem.groups() if g.kind == kind and not g.source_is_item)
        if n and limit > 0:
            parts[f"external {kind} inputs"] = math.ceil(n / limit)
    for kind, limit in _max_limits(problem, "outputs").items():
        n = sum(1 for g in problem.groups() if g.kind == kind and g.source_is_item and g.external_consumer)
        if n and limit > 0:
            parts[f"external {kind} outputs"] = math.ceil(n / limit)
    big = 0
    sums = _sum_resources(problem)
    for i in problem.items:
        if any(i.demand.get(r, 0.0) > cap / 2 + 1e-9 for r, cap in sums.items()):
            big += 1
    parts["items over half a bin"] = big
    if problem.acyclic:
        order = order or problem.topological_items()
        chains = _chain_counts(problem, order)
        if chains is not None:
            up, down = chains
            parts["longest chain"] = max(u + d - 1 for u, d in zip(up, down))
    if len(problem.bin_types) > 1:
        parts["type-exclusive items"] = _type_exclusive_bound(problem)
    clusters = problem.clusters()
    if len(clusters) > 1:
        parts["one bin per cluster"] = len(clusters)
    best = max(parts, key=lambda k: (parts[k], k))
    count = parts[best]
    cheapest = min(t.cost for t in problem.bin_types)
    return LowerBound(count, count * cheapest, f"{best}: {count} bins", parts)


def _type_exclusive_bound(problem: PartitionProblem) -> int:
    """Items that fit exactly one type need bins of that type; bins of different types are disjoint."""
    only: dict[str, list] = {}
    for item in problem.items:
        types = problem.feasible_types(item.name)
        if len(types) == 1:
            only.setdefault(types[0].name, []).append(item)
    total = 0
    for name, items in only.items():
        t = problem.bin_type(name)
        need = 1
        for r in {r for i in items for r in i.demand}:
            if t.reduce_of(r) == "sum" and t.cap(r) > 0:
                need = max(need, math.ceil(sum(i.demand.get(r, 0.0) for i in items) / t.cap(r) - 1e-9))
        total += need
    return total


def diagnose(problem: PartitionProblem) -> str | None:
    """Name the item that fits no bin type and the limit it breaks, or a count that is too small."""
    for item in problem.items:
        if not problem.feasible_types(item.name):
            reasons = []
            for t in problem.bin_types:
                why = problem.intrinsic_violations(item.name, t)
                reasons.append(f"{why[0]}" if why else f"does not fit a {t.name}")
            return f"node '{item.name}' fits no {'/'.join(t.name for t in problem.bin_types)}: {'; '.join(reasons)}"
    counted = [t for t in problem.bin_types if t.count is not None]
    for t in counted:  # items that only this type can hold
        only = [i for i in problem.items if [f.name for f in problem.feasible_types(i.name)] == [t.name]]
        if not only:
            continue
        need = 1
        for r in sorted({r for i in only for r in i.demand}):
            if t.reduce_of(r) == "sum" and t.cap(r) > 0:
                need = max(need, math.ceil(sum(i.demand.get(r, 0.0) for i in only) / t.cap(r) - 1e-9))
        if need > t.count:
            return (f"{len(only)} items fit only a {t.name} and need at least {need} of them "
                    f"(their total demand), the target has {t.count}")
    if len(counted) == len(problem.bin_types):
        available = sum(t.count for t in counted)
        need = lower_bound(problem).bins
        if need > available:
            return f"needs at least {need} bins ({lower_bound(problem).reason}), only {available} available"
        for t in counted:
            only = [i.name for i in problem.items if [f.name for f in problem.feasible_types(i.name)] == [t.name]]
            if len(only) > 0 and t.count == 0:
                return f"node '{only[0]}' fits only a {t.name} and the target has none"
    return None


# ---------------------------------------------------------------------- the model (variant "ours")


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


def _item_order(problem: PartitionProblem) -> list[str]:
    if problem.acyclic:
        return problem.topological_items()
    sums = _sum_resources(problem)

    def size(item) -> float:
        return max([item.demand.get(r, 0.0) / cap for r, cap in sums.items()] or [0.0])

    position = {n: k for k, n in enumerate(problem.item_names)}
    return [i.name for i in sorted(problem.items, key=lambda i: (-size(i), position[i.name]))]


def _slot_count(problem: PartitionProblem, hint: PartitionDecision | None) -> int:
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


def _canonical(problem: PartitionProblem, hint: PartitionDecision, order: list[str]) -> PartitionDecision:
    """The hint renumbered into the model's slot order (topological / by delay / by first item)."""
    rank = {n: k for k, n in enumerate(order)}
    bins = sorted(set(hint.assignment.values()))
    if problem.acyclic:
        succ: dict[int, set[int]] = {b: set() for b in bins}
        for s, d in problem.order_links():
            p, q = hint.assignment[s], hint.assignment[d]
            if p != q:
                succ[p].add(q)
        first = {b: min(rank[n] for n, c in hint.assignment.items() if c == b) for b in bins}
        delay = {b: hint.delays.get(b, 0) for b in bins} if problem.retiming else dict.fromkeys(bins, 0)
        indeg = dict.fromkeys(bins, 0)
        for b in bins:
            for q in succ[b]:
                indeg[q] += 1
        ready = [b for b in bins if indeg[b] == 0]
        new_order = []
        while ready:
            ready.sort(key=lambda b: (delay[b], first[b]))
            b = ready.pop(0)
            new_order.append(b)
            for q in succ[b]:
                indeg[q] -= 1
                if indeg[q] == 0:
                    ready.append(q)
        if len(new_order) != len(bins):  # cyclic hint: keep it as it is (the solver ignores a bad hint)
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
    """Variant ``ours`` (see the module docstring); ``min_bins`` is an externally proven bin-count bound;
    ``window`` restricts every item to slots within ``window`` of its warm-start slot (the model's own
    bound is then not a global bound); ``max_retiming`` / ``min_retiming`` bound the retiming bins (max 0:
    the zero-retiming model, without retiming variables: every skew within the buffer); ``free`` (with a
    warm start) keeps every other item in its warm-start slot, a neighbourhood of the large-neighbourhood
    search (:func:`_neighbourhood_search`; no prefix rule, so a slot may empty; the bound is local)."""
    m = ModelBuilder(f"partition:{problem.name}")
    order = _item_order(problem)
    types = list(problem.bin_types)
    S = slots if slots is not None else _slot_count(problem, hint)
    one_type = len(types) == 1
    feasible = {n: [k for k, t in enumerate(types) if t in problem.feasible_types(n)] for n in order}
    bound = lower_bound(problem, order if problem.acyclic else None)
    if min_bins is not None and min_bins > bound.bins:
        cheapest = min(t.cost for t in types)
        bound = LowerBound(min_bins, min_bins * cheapest, f"phase A (no retiming) optimum: {min_bins} bins",
                           {**bound.parts, "phase A optimum": min_bins})

    # domains: chain bounds (acyclic) or representative rule
    dom: dict[str, range] = {}
    chains = _chain_counts(problem, order) if problem.acyclic else None
    for k, n in enumerate(order):
        lo, hi = 0, S - 1
        if chains is not None:
            lo = chains[0][k] - 1
            hi = S - chains[1][k]
        elif not problem.acyclic:
            hi = min(hi, k)
        dom[n] = range(max(lo, 0), min(hi, S - 1) + 1)
    canonical = _canonical(problem, hint, order) if hint is not None else None
    if window is not None and canonical is not None:  # large-neighbourhood restriction around the warm start
        for n in order:
            home = canonical.assignment[n]
            dom[n] = range(max(dom[n].start, home - window), min(dom[n].stop - 1, home + window) + 1)
    if free is not None and canonical is not None:  # a neighbourhood: every other item stays where it is
        for n in order:
            home = canonical.assignment[n]
            if n not in free and home in dom[n]:
                dom[n] = range(home, home + 1)

    # variables ---------------------------------------------------------------------------
    w: dict[tuple[int, int], Any] = {}
    for b in range(S):
        for k in range(len(types)):
            w[b, k] = m.binary(f"w[{b},{types[k].name}]")
    x: dict[tuple[str, int], Any] = {}
    for n in order:
        if not feasible[n]:
            continue
        for b in dom[n]:
            x[n, b] = m.binary(f"x[{n},{b}]")

    def used(b: int) -> Any:
        return linear_sum(w[b, k] for k in range(len(types)))

    # assignment, bin-type, symmetry --------------------------------------------------------
    for n in order:
        m.add(linear_sum(x[n, b] for b in dom[n] if (n, b) in x) == 1, "assignment", n)
    for (n, b), var in x.items():
        allowed = feasible[n]
        if one_type or len(allowed) == len(types):
            m.add(var <= used(b), "bin-type", f"{n},{b}")
        else:
            m.add(var <= linear_sum(w[b, k] for k in allowed), "bin-type", f"{n},{b}")
    for b in range(S):
        if len(types) > 1:
            m.add(used(b) <= 1, "bin-type", f"one type {b}")
        if b + 1 < S and free is None:  # (pinned items break the symmetry; a freed slot may empty)
            m.add(used(b + 1) <= used(b), "symmetry", f"prefix {b}")

    # capacity (sum resources; max resources are in the feasibility relation) ------------------
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

    # type counts --------------------------------------------------------------------------
    for k, t in enumerate(types):
        if t.count is not None and t.count < S:
            m.add(linear_sum(w[b, k] for b in range(S)) <= t.count, "type-count", t.name)

    # clusters (only when solved jointly) ---------------------------------------------------
    clusters = problem.clusters()
    if len(clusters) > 1:
        names = sorted(clusters)
        for b in range(S):
            cvar = {c: m.binary(f"cluster[{b},{c}]") for c in names}
            m.add(linear_sum(cvar.values()) <= 1, "cluster", f"one {b}")
            for c in names:
                for n in clusters[c]:
                    if (n, b) in x:
                        m.add(x[n, b] <= cvar[c], "cluster", f"{n},{b}")

    # arity --------------------------------------------------------------------------------
    groups = problem.groups()
    limited_in = {g.kind for g in groups if any(g.kind in t.inputs for t in types)}
    limited_out = {g.kind for g in groups if any(g.kind in t.outputs for t in types)}
    traffic = problem.weights.traffic > 0
    y: dict[tuple[tuple[str, str], int], Any] = {}
    z: dict[tuple[tuple[str, str], int], Any] = {}
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

    # acyclicity by topological slot order ---------------------------------------------------
    a: dict[tuple[str, int], Any] = {}
    if problem.acyclic:
        for n in order:
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

    # retiming -----------------------------------------------------------------------------
    model = PartitionModel(m, problem, order, S, types, x, w, bound=bound)
    retime_cost = []
    if problem.retiming is not None:
        retime_cost = _retiming_block(m, model, dom, a, groups, zero=max_retiming == 0)

    # certified lower bound -----------------------------------------------------------------
    cost_expr = linear_sum(types[k].cost * w[b, k] for b in range(S) for k in range(len(types)))
    if bound.bins > 1:
        if one_type:
            m.add(linear_sum(w[b, 0] for b in range(S)) >= bound.bins, "lower-bound", bound.reason)
        else:
            m.add(linear_sum(w.values()) >= bound.bins, "lower-bound", bound.reason)

    # objective ----------------------------------------------------------------------------
    terms = [problem.weights.bins * cost_expr]
    if retime_cost and problem.weights.retiming:
        terms.append(problem.weights.retiming * linear_sum(retime_cost))
    if retime_cost and max_retiming is not None:
        m.add(linear_sum(retime_cost) <= max_retiming, "retiming", "at most the retiming that still improves")
    if retime_cost and min_retiming > 0:
        m.add(linear_sum(retime_cost) >= min_retiming, "retiming", "at least the retiming every solution needs")
    if traffic:
        tr = {g.key: g.traffic for g in groups}
        terms.append(problem.weights.traffic * linear_sum(tr[key] * var for (key, _), var in y.items()))
    m.minimize(linear_sum(terms))

    if hint is not None:
        _hint_ours(model, dom, a, y, z, groups, canonical)
    return model


def _prefix(a, dom, n: str, b: int) -> Any:
    """a[n, b] as a variable or a constant from the domain bounds."""
    if b < dom[n].start:
        return 0
    if b >= dom[n].stop - 1:
        return 1
    return a[n, b]


def _expr(v: Any) -> Any:
    return linear_sum([v]) if not isinstance(v, int) else linear_sum([]) + v


def _retiming_block(m: ModelBuilder, model: PartitionModel, dom, a, groups, zero: bool = False) -> list[Any]:
    """Delays, schedule and retiming rows; ``zero``: no retiming variables, every value's skew at most the
    buffer depth instead (s[d] − s[src] ≤ L + b_d, which also holds inside a bin, so no big-M)."""
    problem, x, S = model.problem, model.x, model.slots
    L, depth = problem.retiming.hop_latency, problem.retiming.buffer_depth
    cluster = {i.name: i.cluster for i in problem.items}

    ext_key = problem.external_source  # (schedules are per cluster)
    ext_keys = problem.external_sources()
    fixed = {k: v for k, v in problem.retiming.fixed_sources if k in set(ext_keys)}
    # fixed delays keep their differences, shifted to start at 0 (with readers outside: the caller's clock)
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


def _hint_ours(model: PartitionModel, dom, a, y, z, groups, hint: PartitionDecision) -> None:
    m, problem, S = model.builder, model.problem, model.slots
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


# ---------------------------------------------------------------------- the column model (variant "ours")

COLUMN_BUDGET = 40_000  # convex bins enumerated at most; above it the slot model runs
COLUMN_NODES = 3_000_000  # search nodes of the enumeration at most (a few seconds)


@dataclass(frozen=True)
class Column:
    """One candidate bin: a convex item set of one cluster and the bin types it fits (capacity, arity)."""

    members: tuple[str, ...]
    types: tuple[int, ...]


def convex_bins(problem: PartitionProblem, *, max_columns: int = COLUMN_BUDGET,
                max_nodes: int = COLUMN_NODES, deadline: float | None = None) -> list[Column] | None:
    """Every convex item set that fits one bin of some type, or None when there are more than the budget.

    In an acyclic partition every bin is convex (a path that leaves a bin and re-enters it is a cycle of
    the quotient graph), so these sets are all the bins any acyclic solution can use. Items are added in
    topological order; a branch is cut when its sums exceed every type's capacity, when an input (output)
    that no later item can remove exceeds every type's arity, or when a skipped item lies on a path
    between two members (the set can no longer be convex). Only for acyclic problems. ``deadline`` (a
    ``time.perf_counter()`` value) stops the enumeration (None, not cached) so a solve keeps its time limit.
    """
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
    bound of the problem without retiming; a cover whose quotient graph is acyclic is a solution."""
    m = ModelBuilder(f"partition-columns:{problem.name}")
    types = list(problem.bin_types)
    S = _slot_count(problem, hint)
    bound = lower_bound(problem)
    if min_bins is not None and min_bins > bound.bins:
        bound = LowerBound(min_bins, min_bins * min(t.cost for t in types), f"proven: {min_bins} bins",
                           {**bound.parts, "proven": min_bins})
    x: dict[tuple[int, int], Any] = {}
    holding: dict[str, list[Any]] = {i.name: [] for i in problem.items}
    for c, col in enumerate(columns):
        for k in col.types:
            var = x[c, k] = m.binary(f"x[{c},{types[k].name}]")
            for a in col.members:
                holding[a].append(var)
    for name, terms in holding.items():
        m.add(linear_sum(terms) == 1, "assignment", name)
    for k, t in enumerate(types):
        if t.count is not None and t.count < S:
            m.add(linear_sum(v for (c, kk), v in x.items() if kk == k) <= t.count, "type-count", t.name)
    # (no bin-count bounds as constraints: a cardinality row beside the cover slows CP-SAT down badly)
    terms = [problem.weights.bins * linear_sum(types[k].cost * v for (c, k), v in x.items())]
    if problem.weights.traffic > 0:
        terms.append(problem.weights.traffic * _column_traffic(problem, columns, x))
    m.minimize(linear_sum(terms))
    model = ColumnModel(m, problem, columns, S, x, bound)
    if hint is not None:
        lookup = {(frozenset(col.members), k): c for c, col in enumerate(columns) for k in col.types}
        index = {t.name: k for k, t in enumerate(types)}
        chosen = {(lookup.get((frozenset(names), index[hint.bin_types[b]])), index[hint.bin_types[b]])
                  for b, names in hint.members().items()}
        if all(c is not None for c, _ in chosen) and len(chosen) <= S:
            for key, var in x.items():
                m.hint(var, 1 if key in chosen else 0)
    return model


def _column_traffic(problem: PartitionProblem, columns: list[Column], x) -> Any:
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


# ---------------------------------------------------------------------- the delay relaxation (retiming problems)


@dataclass
class DelayRelaxation:
    """The column model with item delays (:func:`build_delay_relaxation`)."""

    columns: ColumnModel
    delay: dict[str, Any]  # s[i]: the delay of item i's bin
    source: dict[SourceKey, Any]  # e[k]: the delay of external value k
    retiming: dict[GroupKey, Any]  # R[g]: retiming bins of value g, counted once
    horizon: int
    cost: Any  # the relaxed objective (an expression)


def build_delay_relaxation(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None = None,
                           *, columns: list[Column], min_bins: int | None = None,
                           level: float | None = None) -> DelayRelaxation:
    """The delay relaxation of a retiming problem (module docstring): the exact cover by convex bins with a
    delay per item, tied only across links. Minimises the relaxed objective; with ``level`` it is a
    feasibility model "relaxed objective ≤ level" (a refuted level bounds the problem: every solution with
    at most the warm start's slot count of bins, the ones that can beat it, costs more)."""
    retiming = problem.retiming
    if retiming is None or retiming.fixed_sources or retiming.fixed_sinks:
        raise ConfigError("the delay relaxation takes a retiming problem without fixed delays")
    cover = build_columns(problem, config, hint, columns=columns)
    m = cover.builder
    L, depth = retiming.hop_latency, retiming.buffer_depth
    together = _together(cover)
    cluster = {i.name: i.cluster for i in problem.items}
    groups = problem.groups()

    external = problem.external_source
    keys = problem.external_sources()
    horizon = L * (cover.slots + len(keys))  # compressed schedules: consecutive delays at most L apart
    s = {n: m.integer(0, horizon, f"s[{n}]") for n in problem.item_names}
    e = {k: m.integer(0, horizon, f"e[{k[0]}.{k[1]}@{k[2]}]") for k in keys}
    r: dict[GroupKey, Any] = {}
    linked: set[tuple[str, str]] = set()
    for g in groups:
        for d in g.forward_consumers:
            key = external(g, d)
            if key is None:
                src = g.key[0]
                both = together(src, d)
                m.add(s[d] - s[src] >= L * (1 - both), "schedule", f"{src}->{d}")
                m.add(s[d] - s[src] <= horizon * (1 - both), "schedule", f"{src}={d}")
                start = s[src]
                linked.add((src, d))
            else:
                start = e[key]
                m.add(s[d] - start >= L, "schedule", f"ext {key[0]}->{d}")
            if g.key not in r:
                r[g.key] = m.integer(0, math.ceil(horizon / (depth + L)) + 1, f"R[{g.key[0]}.{g.key[1]}]")
            m.add((depth + L) * r[g.key] >= s[d] - start - L - depth, "retiming", f"{g.key[0]}->{d}")
    for src, d in problem.order_links():
        if (src, d) not in linked and cluster[src] == cluster[d]:
            m.add(s[d] >= s[src], "schedule", f"order {src}->{d}")
    x = cover.x
    types = problem.bin_types
    cost = problem.weights.bins * linear_sum(types[k].cost * v for (c, k), v in x.items())
    cost = cost + problem.weights.retiming * linear_sum(r.values())
    if problem.weights.traffic > 0:
        cost = cost + problem.weights.traffic * _column_traffic(problem, cover.columns, x)
    if min_bins is not None and min_bins > 1:
        m.add(linear_sum(x.values()) >= min_bins, "lower-bound", f"phase A optimum: {min_bins} bins")
    if level is None:
        m.minimize(cost)
    else:
        m.add(cost <= level, "level", f"relaxed objective <= {level:g}")
        m.minimize(linear_sum([]))
    if hint is not None and cover.builder.hints:  # the warm start's bins are columns: its delays too
        for n, var in s.items():
            m.hint(var, hint.delays.get(hint.assignment[n], 0))
        for k, var in e.items():
            m.hint(var, hint.source_delays.get(k, 0))
        most: dict[GroupKey, int] = {}
        for (src, port, _), v in hint.retiming.items():
            most[src, port] = max(most.get((src, port), 0), v)
        for key, var in r.items():
            m.hint(var, most.get(key, 0))
    return DelayRelaxation(cover, s, e, r, horizon, cost)


# ---------------------------------------------------------------------- the literal variant (Table 4.2)


def build_table42(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None = None) -> PartitionModel:
    """The seed's Table 4.2 as written (see the module docstring); single bin type only."""
    if len(problem.bin_types) != 1:
        raise ConfigError("variant 'table42' is the seed's partitioning model and takes one bin type; "
                          "use variant 'ours' for merging")
    m = ModelBuilder(f"table42:{problem.name}")
    bt = problem.bin_types[0]
    order = problem.item_names
    N = len(order)
    P = len(set(hint.assignment.values())) if hint is not None else N
    K = N  # proj_B constant: a count never exceeds N
    L = problem.retiming.hop_latency if problem.retiming else 1
    depth = problem.retiming.buffer_depth if problem.retiming else 0
    KD = 2 * P * L + depth + L  # delay constant (the authors' code: 2·P·delay_per_partition)
    B = {(n, j): m.binary(f"B[{n},{j}]") for n in order for j in range(P)}
    u = {j: m.binary(f"u[{j}]") for j in range(P)}
    # Allocated partitions: u_j = proj_B(Σ_i B[i,j])
    for j in range(P):
        m.add(linear_sum(B[n, j] for n in order) <= K * u[j], "proj-partitions", str(j))
    # Partition assignment
    for n in order:
        m.add(linear_sum(B[n, j] for j in range(P)) == 1, "assignment", n)
    # Operation capacity (prose L637; Table 4.4 reducible constraint with r = sum)
    for r in sorted({r for i in problem.items for r in i.demand}):
        if bt.reduce_of(r) == "max":
            for n in order:
                if problem.item(n).demand.get(r, 0) > bt.cap(r):
                    m.add(linear_sum(B[n, j] for j in range(P)) <= 0, "capacity", f"{r},{n}")
            continue
        for j in range(P):
            m.add(linear_sum(problem.item(n).demand.get(r, 0.0) * B[n, j] for n in order) <= bt.cap(r), "capacity", f"{r},{j}")
    if problem.feasible is not None:
        for n in order:
            if (n, bt.name) not in problem.feasible:
                m.add(linear_sum(B[n, j] for j in range(P)) <= 0, "feasibility", n)
    # Delays: node delays d_n, partition delays d_p, Delay Consistency, Constant Validity
    dn = {n: m.integer(0, KD, f"dn[{n}]") for n in order}
    dp = {j: m.integer(0, KD, f"dp[{j}]") for j in range(P)}
    for n in order:
        for j in range(P):
            m.add(dn[n] <= dp[j] + KD * (1 - B[n, j]), "delay-consistency", f"{n}<={j}")
            m.add(dn[n] >= dp[j] - KD * (1 - B[n, j]), "delay-consistency", f"{n}>={j}")
    # Dependency constraint: d_n(j) ≥ d_n(i) + L·1[p_i ≠ p_j] on forward edges (also the cycle constraint)
    if problem.acyclic:
        for s, d in problem.order_links():
            neq = m.binary(f"neq[{s},{d}]")
            for j in range(P):
                m.add(neq >= B[d, j] - B[s, j], "dependency", f"{s}->{d},{j}")
            m.add(dn[d] >= dn[s] + L * neq, "dependency", f"{s}->{d}")
    groups = problem.groups()
    # Output arity: Σ_s and(B[s,p], proj_B(Σ_dest (1 − B[d,p]) [+ external]))
    for kind, limit in sorted(bt.outputs.items()):
        for j in range(P):
            terms = []
            for g in groups:
                if g.kind != kind or not g.source_is_item:
                    continue
                s = g.key[0]
                leave = m.binary(f"leave[{s}.{g.key[1]},{j}]")
                outside = linear_sum((1 - B[d, j]) for d in g.consumers) + (1 if g.external_consumer else 0)
                m.add(outside <= K * leave, "proj-output", f"{s},{j}")
                both = m.binary(f"and[{s}.{g.key[1]},{j}]")
                m.add(both >= B[s, j] + leave - 1, "and-output", f"{s},{j}")
                terms.append(both)
            if terms:
                m.add(linear_sum(terms) <= limit, "output-arity", f"{kind},{j}")
    # Input arity: Σ_i max{proj_B(Σ_{dest(i)} B[·,p]) − B[i,p], 0}
    for kind, limit in sorted(bt.inputs.items()):
        for j in range(P):
            terms = []
            for g in groups:
                if g.kind != kind:
                    continue
                enter = m.binary(f"proj-in[{g.key[0]}.{g.key[1]},{j}]")
                m.add(linear_sum(B[d, j] for d in g.consumers) <= K * enter, "proj-input", f"{g.key[0]},{j}")
                gain = m.binary(f"in[{g.key[0]}.{g.key[1]},{j}]")
                src = B[g.key[0], j] if g.source_is_item else 0
                m.add(gain >= enter - src, "input-arity-max", f"{g.key[0]},{j}")
                terms.append(gain)
            if terms:
                m.add(linear_sum(terms) <= limit, "input-arity", f"{kind},{j}")
    # Objective: allocated partitions + α · Σ proj_B(max{d_n(j) − d_n(i) − L − b_d, 0})
    retime = []
    ext_delay: dict[tuple[str, str, str], Any] = {}
    cluster = {i.name: i.cluster for i in problem.items}
    if problem.retiming is not None:
        for g in groups:
            for d in g.forward_consumers:
                if g.source_is_item and cluster[g.key[0]] == cluster[d]:
                    start = dn[g.key[0]]
                else:
                    key = (g.key[0], g.key[1], cluster[d])
                    if key not in ext_delay:
                        ext_delay[key] = m.integer(0, KD, f"e[{key[0]}.{key[1]}@{key[2]}]")
                    start = ext_delay[key]
                    m.add(dn[d] >= start + L, "dependency", f"ext {g.key[0]}->{d}")
                flag = m.binary(f"retime[{g.key[0]}->{d}]")
                m.add(dn[d] - start - L - depth <= KD * flag, "proj-retiming", f"{g.key[0]}->{d}")
                retime.append(flag)
    alpha = problem.weights.retiming
    m.minimize(problem.weights.bins * bt.cost * linear_sum(u.values()) + alpha * linear_sum(retime))
    model = PartitionModel(m, problem, order, P, [bt], B, {(j, 0): u[j] for j in range(P)}, variant="table42")
    model.t, model.e = dp, ext_delay
    if hint is not None:
        _hint_table42(model, dn, hint)
    return model


def _hint_table42(model: PartitionModel, dn, hint: PartitionDecision) -> None:
    m = model.builder
    if any(b >= model.slots for b in hint.assignment.values()):
        return
    for (n, j), var in model.x.items():
        m.hint(var, 1 if hint.assignment[n] == j else 0)
    for (j, _), var in model.w.items():
        m.hint(var, 1 if j in hint.bin_types else 0)
    if hint.delays:
        for j, var in model.t.items():
            m.hint(var, hint.delays.get(j, 0))
        for n, var in dn.items():
            m.hint(var, hint.delays[hint.assignment[n]])


# ---------------------------------------------------------------------- solve (with decomposition)


def _solve_one(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None, variant: str,
               explain: bool, *, use_columns: bool = True, search: str = "auto") -> Solved[PartitionDecision]:
    if variant == "ours" and problem.acyclic and hint is not None and len(problem.items) > CHUNK_ITEMS \
            and len(problem.clusters()) == 1 and all(t.count is None for t in problem.bin_types):
        chunks = _chunks(problem, hint)
        if chunks is not None:
            return _solve_chunked(problem, config, hint, chunks, explain)
    # the enumeration is bounded by COLUMN_NODES (deterministic); the wall clock only backs it up
    wall = config.wall_limit()
    deadline = time.perf_counter() + wall if wall is not None else None
    columns = (lambda: convex_bins(problem, deadline=deadline)) \
        if variant == "ours" and problem.acyclic and use_columns else None
    if variant == "ours" and problem.retiming is not None and problem.weights.retiming > 0 and problem.weights.bins > 0:
        return _solve_two_phase(problem, config, hint, explain, columns, search)
    return _solve_model(problem, config, hint, variant, explain, columns=columns)


MIN_SOLVE_WORK = 0.05  # budget charged for any finished solve at least ...
WORK_PER_ENTRY = 1e-5  # ... else this per model variable + nonzero (a deterministic proxy of its solve time)


def _work(builder: ModelBuilder, result: SolveResult, config: SolverConfig) -> float:
    """Budget one MILP solve used, in the units of ``config.time_limit_s``. MathOpt reports no
    deterministic time, so with ``config.deterministic`` a solve stopped by its limit is charged its whole
    budget and a finished one (optimal, infeasible) a proxy of its size — both functions of the
    deterministic outcome, so the split between phases, and the answer, does not depend on machine load.
    Wall seconds when ``config.deterministic`` is off."""
    if not config.deterministic:
        return result.solve_seconds
    given = config.time_limit_s
    if given is None:
        return 0.0
    if result.status in (Status.OPTIMAL, Status.INFEASIBLE) and not result.limit_reached:
        size = builder.size()
        return min(given, max(MIN_SOLVE_WORK, WORK_PER_ENTRY * (size["variables"] + size["nonzeros"])))
    return given


def _left(config: SolverConfig, clock: WorkClock, share: float = 1.0) -> SolverConfig:
    """``config`` limited to ``share`` of what ``clock`` has left (at least 0.05 s)."""
    left = clock.left()
    if left is None:
        return config
    return config.with_(time_limit_s=max(0.05, left * share))


def _closing(value: float, lower: float, results: list[SolveResult], message: str) -> SolveResult:
    """The result of a sequence of solves ``results`` whose best answer costs ``value`` and whose certified
    bound is ``lower``: optimal when they meet; limit reached when not and any solve hit its limit."""
    lower = min(lower, value)
    status = Status.OPTIMAL if value <= lower + 1e-9 else Status.FEASIBLE
    return SolveResult(status, value, lower, relative_gap(value, lower), backend=results[-1].backend,
                       solver_version=results[-1].solver_version,
                       limit_reached=status != Status.OPTIMAL and any(r.limit_reached for r in results),
                       message=message)


def _spent(solved: Solved[PartitionDecision]) -> float:
    return float(solved.details.get("work", 0.0))


RETIMING_CAPS = (0,)  # retiming caps solved before the incumbent's cap (see _solve_two_phase)
JOINT_FIRST_SHARE = 0.05  # share of phase B's budget for the uncapped joint model, before the caps


def _by_columns(search: str, config: SolverConfig) -> bool:
    """Phase B by the delay relaxation (``columns``) or by the slot model's retiming caps (``slots``);
    ``auto``: columns on LP-based backends, whose bounds need a small, big-M-free LP, slots on CP-SAT,
    whose propagation proves the capped slot models fastest (blackscholes: 13 s vs 49 s for one level)."""
    if search not in RETIMING_SEARCHES:
        raise ConfigError(f"unknown retiming search {search!r}; choose one of {', '.join(RETIMING_SEARCHES)}")
    return search == "columns" or (search == "auto" and config.milp_backend() in LP_BACKENDS)


def _solve_two_phase(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None,
                     explain: bool, columns: Callable[[], list[Column] | None] | None = None,
                     search: str = "auto") -> Solved[PartitionDecision]:
    """Retiming problems: (A) the model without retiming gives the fewest bins P* — a lower bound of the
    joint objective, since retiming bins are ≥ 0; its solution, scheduled, is a joint candidate. If the
    best candidate has no retiming it is optimal. Otherwise (B) joint models with Σ bins ≥ P* and the best
    candidate as warm start: uncapped on a short share of the budget, then (when phase A is proven) with
    the retiming capped at 0, then at what can still beat the incumbent (see below). The budget is split
    by a :class:`WorkClock` (:func:`_work`)."""
    clock = WorkClock(config)
    relaxed = dataclasses.replace(problem, retiming=None, weights=dataclasses.replace(problem.weights, retiming=0.0))
    relaxed_hint = PartitionDecision(dict(hint.assignment), dict(hint.bin_types)) if hint is not None else None
    # phase A gets half the time when the column model (and its cycle cuts) can prove it, else 30 %
    a = _solve_model(relaxed, _left(config, clock, 0.5 if columns is not None else 0.3), relaxed_hint, "ours",
                     explain, columns=columns)
    clock.charge(_spent(a))
    a.details["phase"] = "A"
    candidate = None
    if a.decision is not None:
        try:
            candidate = complete(problem, a.decision.assignment, a.decision.bin_types)
        except ValueError:  # fixed delays (a chunk of a larger problem) that this partition cannot meet
            candidate = None
    if a.decision is None or (candidate is None and hint is None):
        if a.result.status == Status.INFEASIBLE:
            return a
        joint = _solve_model(problem, _left(config, clock), hint, "ours", explain, columns=columns)
        clock.charge(_spent(joint))
        joint.details["work"] = clock.elapsed()
        if joint.decision is None and hint is not None:  # nothing new found: the warm start is the incumbent
            value = objective(problem, hint)
            lower = max([r for r in (a.result.bound, joint.result.bound) if r is not None] or [0.0])
            lower = min(lower, value)
            status = Status.OPTIMAL if value <= lower + 1e-9 else Status.FEASIBLE
            final = SolveResult(status, value, lower, relative_gap(value, lower), backend=joint.result.backend,
                                solver_version=joint.result.solver_version, limit_reached=True,
                                message="no solver solution within the limit: the warm start, with the bound")
            return Solved(combine([a.result, joint.result], final), hint, [], joint.details)
        return joint
    # on a tie the warm start (equal-cost partitions merge and simulate differently: keep what was shipped)
    best = min([d for d in (hint, candidate) if d is not None], key=lambda d: objective(problem, d))
    lower = a.result.bound if a.result.bound is not None else 0.0
    cheapest = min(t.cost for t in problem.bin_types) * problem.weights.bins
    min_bins = math.ceil(lower / cheapest - 1e-9) if cheapest > 0 and problem.weights.traffic == 0 else None
    value = objective(problem, best)
    details = {"phases": [{"phase": "A", "status": str(a.result.status), "objective": a.result.objective,
                           "bound": a.result.bound, "solve_seconds": a.result.solve_seconds}],
               **{k: v for k, v in a.details.items() if k != "phase"}}
    if a.result.status == Status.OPTIMAL and value <= lower + 1e-9:
        final = SolveResult(Status.OPTIMAL, value, value, 0.0, a.result.build_seconds, a.result.solve_seconds,
                            a.result.backend, a.result.solver_version, False,
                            "phase A optimum needs no retiming")
        return Solved(final, best, [], details)
    # (B) retiming-capped joint models. Phase A's bound P (bins cost) holds for every solution, so one with
    # more than k retiming bins costs ≥ P + w_ret (k + 1): the cap k_max = ⌈(incumbent − P) / w_ret⌉ − 1 loses
    # nothing. Cap 0 (no retiming variables, no big-M: every skew within the buffers) runs first: a
    # solution with at most k retiming bins costs ≥ the capped model's bound, so after cap k
    # min(bound_k, P + w_ret (k + 1)) is a joint lower bound — often the incumbent's value; an infeasible
    # cap k adds Σ r ≥ k + 1 to the next model (the slot space only shrinks as the incumbent improves).
    base, w_ret = lower, problem.weights.retiming
    bins_floor = min_bins if a.result.status == Status.OPTIMAL else None
    messages, results, last = ["two-phase: no-retiming optimum"], [a.result], None
    fixed = problem.retiming.fixed_sources or problem.retiming.fixed_sinks  # (chunks; the relaxation has none)
    cols = columns() if columns is not None and not fixed and _by_columns(search, config) else None
    if cols is not None:  # LP-based backends: the delay relaxation and the neighbourhood search
        best, lower, more = _phase_b_columns(problem, config, clock, best, candidate, lower, bins_floor, cols,
                                             details, results)
        details["work"] = clock.elapsed()
        final = _closing(objective(problem, best), lower, results, ", then ".join(messages + more))
        return Solved(combine(results, final), best, [], details)
    least_retiming = 0  # every solution needs at least this many retiming bins (a cap proven infeasible)
    # the uncapped joint model first, on a share of the budget: most actors are proven here, and their
    # partition does not depend on the caps below. The caps need phase A's proven bin count (a floor for
    # every capped model): without it, the joint model gets the whole budget (kmeans x4, actor
    # "distance", phase A 20 / bound 17: the caps reach 19, the joint model alone 18)
    capped_after = bins_floor is not None
    joint = _solve_slots(problem, _left(config, clock, JOINT_FIRST_SHARE if capped_after else 1.0), best, "ours",
                         explain, min_bins=bins_floor)
    clock.charge(_spent(joint))
    results.append(joint.result)
    last = joint
    details["phases"].append({"phase": "B (joint)", "status": str(joint.result.status),
                              "objective": joint.result.objective, "bound": joint.result.bound,
                              "solve_seconds": joint.result.solve_seconds})
    messages.append("joint")
    details.update({k: v for k, v in joint.details.items() if k in ("model_size", "slots", "lower_bound")})
    if joint.decision is not None and objective(problem, joint.decision) < value - 1e-9:
        best, value = joint.decision, objective(problem, joint.decision)
    if joint.result.bound is not None:
        lower = max(lower, joint.result.bound)
    # the caps, then (before the last cap, when phase A's bin count is below the incumbent's) the same cap
    # on phase A's bin count of slots: the optimum often keeps P* bins (blackscholes: 14 + 2 retiming,
    # proven in this small model) and solutions with more bins cost ≥ (P* + 1) cheapest + least retiming
    steps = [(cap, None) for cap in RETIMING_CAPS] + [(None, bins_floor), (None, None)]
    for cap_step, slots in steps:
        if value <= lower + 1e-9 or not capped_after:
            break
        cap_max = math.ceil((value - base) / w_ret - 1e-9) - 1
        if cap_max < 0:
            break
        cap = min(cap_step, cap_max) if cap_step is not None else cap_max
        if slots is not None and (slots >= _slot_count(problem, best)
                                  or _window(problem, best, slots) is not None):
            continue  # the last step's slot space already, or too large for the whole slot space
        final_step = cap == cap_max and slots is None
        # warm start: phase A's candidate when it ties the incumbent (its P* bins are closer to a partition
        # with little retiming: lattice's zero-retiming model finds 18 in 1 s from it, in 21 s from the
        # heuristic's 19 bins); the incumbent itself stays the answer unless a step improves it
        warm = candidate if candidate is not None and objective(problem, candidate) <= value + 1e-9 else best
        if slots is not None and candidate is not None and len(set(warm.assignment.values())) > slots:
            warm = candidate  # P* slots: the incumbent does not fit, phase A's partition does
        capped = _solve_slots(problem, _left(config, clock, 1.0 if final_step else 0.5), warm, "ours",
                              explain and final_step, min_bins=bins_floor, max_retiming=cap,
                              min_retiming=least_retiming, slots=slots)
        clock.charge(_spent(capped))
        results.append(capped.result)
        last = capped
        name = f"B (retiming <= {cap}" + (f", {slots} bins)" if slots is not None else ")")
        details["phases"].append({"phase": name, "status": str(capped.result.status),
                                  "objective": capped.result.objective, "bound": capped.result.bound,
                                  "solve_seconds": capped.result.solve_seconds})
        messages.append(f"at most {cap} retiming" + (f" on {slots} bins" if slots is not None else ""))
        details.update({k: v for k, v in capped.details.items() if k in ("model_size", "slots", "lower_bound")})
        if capped.decision is not None and objective(problem, capped.decision) < value - 1e-9:
            best, value = capped.decision, objective(problem, capped.decision)
        capped_bound = math.inf if capped.result.status == Status.INFEASIBLE else (
            capped.result.bound if capped.result.bound is not None else base)
        if slots is None and capped.result.status == Status.INFEASIBLE:
            least_retiming = cap + 1
        # a solution outside this model has more retiming than the cap, or (fewer slots) more bins
        outside = base + w_ret * (cap + 1)
        if slots is not None:
            more_bins = max(base, (slots + 1) * cheapest) + w_ret * least_retiming
            outside = min(outside, more_bins)
        lower = max(lower, min(capped_bound, outside))
        if value <= lower + 1e-9 or final_step:
            break
    details["work"] = clock.elapsed()
    lower = min(lower, value)
    status = Status.OPTIMAL if value <= lower + 1e-9 else Status.FEASIBLE
    tail = last.result if last is not None else a.result
    final = SolveResult(status, value, lower, relative_gap(value, lower), backend=tail.backend,
                        solver_version=tail.solver_version,
                        limit_reached=status != Status.OPTIMAL and tail.limit_reached, message=", then ".join(messages))
    return Solved(combine(results, final), best, last.explanation if last is not None else [], details)


LP_BACKENDS = ("highs", "scip", "gurobi", "cbc") + PYOMO_BACKENDS  # LP-based branch and bound: phase B by columns (auto)
RETIMING_SEARCHES = ("auto", "slots", "columns")
NEIGHBOURHOOD_SLOTS = 4  # the search's first neighbourhoods: this many consecutive slots (by delay) ...
NEIGHBOURHOOD_GROWTH = 2  # ... and this many more after a pass over all of them finds nothing
NEIGHBOURHOOD_BUDGET = 2.0  # budget of one neighbourhood solve at most
LEVEL_SHARE = 0.2  # share of what is left for one level of the relaxation at most
LAYER_SHARE = 0.5  # share of what is left for one layered column model at most
LAYER_EXTRA = 2  # layer counts tried above the fewest a layered solution needs
LAYER_PAIRS = 150_000  # column × layer pairs of one layered model at most


def _objective_step(problem: PartitionProblem) -> int | None:
    """q such that every objective value is a multiple of q (integral costs and weights, no traffic), else None."""
    if problem.weights.traffic > 0:
        return None
    coefficients = [problem.weights.bins * t.cost for t in problem.bin_types] + [problem.weights.retiming]
    if any(abs(c - round(c)) > 1e-9 or c < 0 for c in coefficients):
        return None
    return math.gcd(*(int(round(c)) for c in coefficients)) or None


def _neighbourhood_search(problem: PartitionProblem, config: SolverConfig, start: PartitionDecision, lower: float,
                          bins_floor: int | None) -> Solved[PartitionDecision]:
    """A large-neighbourhood search on the exact slot model (fix and optimise): with the incumbent's bins
    sorted by delay, the items of ``size`` consecutive bins are freed and every other item stays in its
    bin (``build(free=…)``); a better answer becomes the incumbent. Windows are visited in an order drawn
    from ``config.seed``; a pass that finds nothing widens them by NEIGHBOURHOOD_GROWTH. Stops at
    ``lower``, when the windows cover every bin, or when the budget is spent. The neighbourhood solves
    prove nothing globally: the result has no bound."""
    clock = WorkClock(config)
    rng = random.Random(config.seed)
    order = _item_order(problem)
    best, value = start, objective(problem, start)
    size = NEIGHBOURHOOD_SLOTS
    steps: list[dict[str, Any]] = []
    results: list[SolveResult] = []
    spent = False
    while value > lower + 1e-9 and not spent:
        canonical = _canonical(problem, best, order)
        slots = len(canonical.bins)
        if size >= slots:
            break
        windows = [set(range(first, first + size)) for first in range(slots - size + 1)]
        rng.shuffle(windows)
        improved = False
        for bins in _retimed_neighbourhoods(problem, canonical, size) + windows:
            left = clock.left()
            if left is not None and left < MIN_SOLVE_WORK:
                spent = True
                break
            free = {n for n, b in canonical.assignment.items() if b in bins}
            step_config = config if left is None else config.with_(time_limit_s=min(NEIGHBOURHOOD_BUDGET, left))
            sub = _solve_slots(problem, step_config, canonical, "ours", False, min_bins=bins_floor, slots=slots,
                               free=free)
            clock.charge(_spent(sub))
            results.append(sub.result)
            found = objective(problem, sub.decision) if sub.decision is not None else None
            steps.append({"bins": sorted(bins), "items": len(free), "status": str(sub.result.status),
                          "objective": found, "solve_seconds": round(sub.result.solve_seconds, 2)})
            if found is not None and found < value - 1e-9:
                best, value, improved = sub.decision, found, True
                break
        if not improved:
            size += NEIGHBOURHOOD_GROWTH
    improved_any = value < objective(problem, start) - 1e-9
    final = SolveResult(Status.FEASIBLE, value, None, None, backend=config.milp_backend(),
                        solver_version=results[-1].solver_version if results else "",
                        limit_reached=spent,
                        message=f"neighbourhood search: {len(steps)} neighbourhoods, "
                                f"{objective(problem, start):g} -> {value:g}")
    final.solve_seconds = sum(r.solve_seconds for r in results)
    return Solved(final, best if improved_any else start, [], {"steps": steps, "work": clock.elapsed()})


def _retimed_neighbourhoods(problem: PartitionProblem, canonical: PartitionDecision, size: int) -> list[set[int]]:
    """Per retimed value of ``canonical`` (slots by delay), in order: the bins of its producer and of its
    retimed reader, each with its neighbours by delay, up to ``size`` bins (a value that waits joins bins far
    apart, which a window of consecutive bins rarely frees together)."""
    slots = len(canonical.bins)
    out: list[set[int]] = []
    for (src, _, q) in sorted(canonical.retiming, key=lambda k: (k[2], k[0], k[1])):
        if q < 0:
            continue
        ends = [q] + ([canonical.assignment[src]] if src in canonical.assignment else [])
        bins = set(ends)
        reach = 1
        while len(bins) < size and reach < slots:
            for end in ends:
                for b in (end - reach, end + reach):
                    if 0 <= b < slots and len(bins) < size:
                        bins.add(b)
            reach += 1
        if bins not in out:
            out.append(bins)
    return out


def _solve_level(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision, columns: list[Column],
                 bins_floor: int | None, level: float | None) -> Solved[PartitionDecision]:
    """The delay relaxation at ``level`` (None: minimised). Its decision, when its cover is acyclic, is that
    cover rescheduled exactly (:func:`complete`), a candidate; its status and bound are the relaxation's."""
    built = build_delay_relaxation(problem, config, hint, columns=columns, min_bins=bins_floor, level=level)
    solution = solve_milp(built.columns.builder, config)
    decision = None
    if solution.result.status.has_solution:
        decision = decode_columns(problem, built.columns, solution)
    details = {"model_size": built.columns.builder.size(), "columns": len(columns), "level": level,
               "work": _work(built.columns.builder, solution.result, config)}
    return Solved(solution.result, decision, [], details)


def _phase_b_columns(problem: PartitionProblem, config: SolverConfig, clock: WorkClock, best: PartitionDecision,
                     candidate: PartitionDecision | None, lower: float, bins_floor: int | None,
                     columns: list[Column], details: dict[str, Any], results: list[SolveResult]
                     ) -> tuple[PartitionDecision, float, list[str]]:
    """Phase B for LP-based backends (module docstring, "Delay relaxation"): answers from the layered column
    model and the neighbourhood search, bounds from the delay relaxation. (1) In turn, while the gap is
    open: the layered model with the next layer count (T₀ … T₀ + LAYER_EXTRA; none after a solve stopped
    by its limit), and the lowest level of the relaxation not yet refuted: a refuted level v lifts the
    bound to v + q (q = :func:`_objective_step`), the first level not refuted ends the levels (without a
    step: the relaxation minimised once, its bound, before the turns) — an optimal incumbent is proven
    here; (2) the neighbourhood search from phase A's candidate (its P* bins are what the optimum often
    keeps) on what is left. Returns the best answer, the bound and the phases' messages."""
    value = objective(problem, best)
    messages = []
    step = _objective_step(problem)
    if step is None and value > lower + 1e-9:
        relaxed = _solve_level(problem, _left(config, clock, 0.5), best, columns, bins_floor, None)
        clock.charge(_spent(relaxed))
        results.append(relaxed.result)
        if relaxed.result.status == Status.INFEASIBLE:
            lower = value  # no solution with fewer bins than the incumbent's slot count: the incumbent
        elif relaxed.result.bound is not None:
            lower = max(lower, relaxed.result.bound)
        details["phases"].append({"phase": "B (delay relaxation)", "status": str(relaxed.result.status),
                                  "objective": relaxed.result.objective, "bound": relaxed.result.bound,
                                  "solve_seconds": relaxed.result.solve_seconds})
        messages.append("delay relaxation")
    # answers from the layered model (T₀, T₀ + 1, …), bounds from the levels, one of each in turn
    T = layers.fewest_layers(problem, columns) if layers.applicable(problem) is None else None
    last_layers = T + LAYER_EXTRA if T is not None else None
    levels = step is not None
    while value > lower + 1e-9 and (T is not None or levels):
        left = clock.left()
        if left is not None and left < MIN_SOLVE_WORK:
            break
        if T is not None:
            found = _solve_layers(problem, _left(config, clock, LAYER_SHARE), T, bins_floor, columns)
            if found is not None:
                clock.charge(_spent(found))
                results.append(found.result)
                details["phases"].append({"phase": f"B (layered, T = {T})", "status": str(found.result.status),
                                          "objective": found.result.objective, "bound": None,
                                          "solve_seconds": found.result.solve_seconds})
                messages.append(found.result.message)
                if found.decision is not None and objective(problem, found.decision) < value - 1e-9:
                    best, value = found.decision, objective(problem, found.decision)
            # a larger T is a larger model: not after a solve stopped by its limit
            T = T + 1 if found is not None and not found.result.limit_reached and T < last_layers else None
        if levels and value > lower + 1e-9:
            level = math.ceil(lower / step - 1e-9) * step
            checked = _solve_level(problem, _left(config, clock, LEVEL_SHARE), best, columns, bins_floor, level)
            clock.charge(_spent(checked))
            results.append(checked.result)
            details["phases"].append({"phase": f"B (level <= {level:g})", "status": str(checked.result.status),
                                      "objective": None, "bound": None, "solve_seconds": checked.result.solve_seconds})
            messages.append(f"level {level:g} " + ("refuted" if checked.result.status == Status.INFEASIBLE else "open"))
            if checked.result.status == Status.INFEASIBLE:
                lower = level + step
            else:  # the first level not refuted ends the levels (a satisfiable level is slow to solve)
                levels = False
                if checked.decision is not None and objective(problem, checked.decision) < value - 1e-9:
                    best, value = checked.decision, objective(problem, checked.decision)
    if value > lower + 1e-9:
        start = candidate if candidate is not None else best
        found = _neighbourhood_search(problem, _left(config, clock), start, lower, bins_floor)
        clock.charge(_spent(found))
        results.append(found.result)
        details["phases"].append({"phase": "B (neighbourhood search)", "status": str(found.result.status),
                                  "objective": found.result.objective, "bound": None,
                                  "solve_seconds": found.result.solve_seconds,
                                  "neighbourhoods": len(found.details["steps"])})
        messages.append(found.result.message)
        if objective(problem, found.decision) < value - 1e-9:
            best = found.decision
    return best, lower, messages


def _solve_layers(problem: PartitionProblem, config: SolverConfig, T: int, bins_floor: int | None,
                  columns: list[Column]) -> Solved[PartitionDecision] | None:
    """The layered column model with ``T`` layers (:mod:`~solvermap.formulations.partition_layers`), a
    primal model: its answer is a solution, its status says how the T-layer search ended, and its result
    carries no bound (the solver's bound holds for T layers only). None when the model would exceed
    LAYER_PAIRS column × layer pairs."""
    if layers.layer_windows(problem, columns, T).pairs > LAYER_PAIRS:
        return None
    built = layers.build_layers(problem, columns=columns, layers=T, min_bins=bins_floor)
    solution = solve_milp(built.builder, config)
    decision = layers.decode_layers(problem, built, solution) if solution.result.status.has_solution else None
    found = objective(problem, decision) if decision is not None else None
    status = solution.result.status
    status = Status.FEASIBLE if status == Status.OPTIMAL else status  # optimal for T layers only
    result = dataclasses.replace(solution.result, status=status, objective=found, bound=None, gap=None,
                                 message=f"layered T={T}: " + (f"{found:g}" if found is not None else str(status)))
    details = {"model_size": built.builder.size(), "layers": T, "work": _work(built.builder, solution.result, config)}
    return Solved(result, decision, [], details)


QUICK_SLOT_SECONDS = 2.0  # the first slot-model solve of an acyclic problem, before the column model ...
QUICK_SLOT_ITEMS = 150  # ... when it has at most this many items (larger ones rarely have few convex bins)
VARIABLE_BUDGET = 250_000  # item × slot pairs above which "ours" searches a window around the warm start


def _window(problem: PartitionProblem, hint: PartitionDecision | None, slots: int | None = None) -> int | None:
    if hint is None:
        return None
    slots = slots if slots is not None else _slot_count(problem, hint)
    n = len(problem.items)
    if n * slots <= VARIABLE_BUDGET:
        return None
    return max(2, VARIABLE_BUDGET // (2 * n))


def _solve_model(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None, variant: str,
                 explain: bool, *, min_bins: int | None = None,
                 columns: Callable[[], list[Column] | None] | None = None) -> Solved[PartitionDecision]:
    """One model of ``variant``; without retiming, ``ours`` follows an unproven slot model with the column
    model and its cycle cuts (its bound, and its cover when acyclic) and, if the gap remains, the slot
    model again."""
    if variant != "ours" or columns is None or problem.retiming is not None:
        return _solve_slots(problem, config, hint, variant, explain, min_bins=min_bins)
    clock = WorkClock(config)
    # a short slot-model solve first (it proves most actors at once), then the column model with cycle
    # cuts (exact on small convex-bin sets), then the slot model again with the proven bin count
    quick = _left(config, clock, 0.25)
    if quick.time_limit_s is not None and len(problem.items) <= QUICK_SLOT_ITEMS:
        quick = quick.with_(time_limit_s=min(quick.time_limit_s, QUICK_SLOT_SECONDS))
    first = _solve_slots(problem, quick, hint, variant, explain, min_bins=min_bins)
    clock.charge(_spent(first))
    if first.result.status in (Status.OPTIMAL, Status.INFEASIBLE):
        return first
    cols = columns()
    if cols is None:
        first.details["columns"] = "over budget"
        return first
    cover = _solve_columns(problem, _left(config, clock, 0.7), first.decision or hint, explain, cols, min_bins)
    clock.charge(_spent(cover))
    if cover.result.status in (Status.OPTIMAL, Status.INFEASIBLE):
        cover.details.update({"variant": variant, "slots": None, "work": clock.elapsed()})
        return cover
    results = [first.result, cover.result]
    candidates = [d for d in (first.decision, cover.decision) if d is not None]
    best = min(candidates, key=lambda d: objective(problem, d)) if candidates else None
    lower = max([r.bound for r in results if r.bound is not None] or [0.0])
    details = {**first.details, "columns": len(cols), "column_relaxation": {
        "status": str(cover.result.status), "bound": cover.result.bound, "objective": cover.result.objective,
        "acyclic": cover.decision is not None, "solve_seconds": cover.result.solve_seconds,
        "cut_rounds": cover.details.get("cut_rounds", [])}}
    # (details["work"] is set below, after the last solve)
    if best is not None and objective(problem, best) > lower + 1e-9 and config.time_limit_s is not None \
            and _left(config, clock).time_limit_s > 0.5:
        cheapest = min(t.cost for t in problem.bin_types) * problem.weights.bins
        proven = math.ceil(lower / cheapest - 1e-9) if cheapest > 0 and problem.weights.traffic == 0 else None
        again = _solve_slots(problem, _left(config, clock), best, variant, explain,
                             min_bins=max(proven or 0, min_bins or 0) or None)
        clock.charge(_spent(again))
        results.append(again.result)
        if again.decision is not None and objective(problem, again.decision) < objective(problem, best):
            best = again.decision
        lower = max(lower, again.result.bound if again.result.bound is not None else 0.0)
    details["work"] = clock.elapsed()
    if best is None:
        return Solved(combine(results, cover.result), None, cover.explanation or first.explanation, details)
    final = _closing(objective(problem, best), lower, results,
                     "column model with cycle cuts, slot model" + (", slot model" if len(results) > 2 else ""))
    return Solved(combine(results, final), best, [], details)


def _solve_slots(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None, variant: str,
                 explain: bool, *, min_bins: int | None = None, max_retiming: int | None = None,
                 min_retiming: int = 0, slots: int | None = None,
                 free: Collection[str] | None = None) -> Solved[PartitionDecision]:
    window = _window(problem, hint, slots) if variant == "ours" and free is None else None
    if variant == "ours":
        built = build(problem, config, hint, min_bins=min_bins, window=window, max_retiming=max_retiming,
                      min_retiming=min_retiming, slots=slots, free=free)
    else:
        built = build_table42(problem, config, hint)
    solution = solve_milp(built.builder, config)
    result = solution.result
    work = _work(built.builder, result, config)  # the solver's own outcome (the status is relabelled below)
    restricted = window is not None or free is not None
    decision = decode(problem, built, solution) if result.status.has_solution else None
    if decision is not None:
        result.objective = objective(problem, decision)  # the shared objective, also for table42
        if variant == "ours":
            certified = problem.weights.bins * built.bound.cost
            if restricted:  # a restricted search: only the combinatorial bound is global
                result.bound = certified
                result.status = Status.OPTIMAL if result.objective <= certified + 1e-9 else Status.FEASIBLE
            else:
                result.bound = max(result.bound if result.bound is not None else certified, certified)
                if result.status == Status.OPTIMAL:
                    result.bound = result.objective
        if result.bound is not None:
            result.bound = min(result.bound, result.objective)
        result.gap = relative_gap(result.objective, result.bound)
    if restricted and result.status == Status.INFEASIBLE:  # only the window is empty, not the problem
        result.status = Status.TIMEOUT_NO_SOLUTION
        result.message = "no solution in the window around the warm start"
    if decision is None and variant == "ours" and result.status != Status.INFEASIBLE:
        result.bound = problem.weights.bins * built.bound.cost  # the certified bound still holds
    explanation = []
    if result.status == Status.INFEASIBLE and explain:
        explanation = explain_infeasible(built.builder, config)
    details = {"model_size": built.builder.size(), "slots": built.slots, "variant": variant, "window": window,
               "work": work}
    if built.bound is not None:
        details["lower_bound"] = {"bins": built.bound.bins, "reason": built.bound.reason, "parts": built.bound.parts}
    return Solved(result, decision, explanation, details)


def _solve_columns(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None, explain: bool,
                   columns: list[Column], min_bins: int | None) -> Solved[PartitionDecision]:
    """The column model with lazy cycle cuts: its bound is certified at every round; its decision is None
    unless a cover is acyclic (then it is optimal when the round was solved to optimality). Rounds share
    the budget through a :class:`WorkClock` (:func:`_work`)."""
    clock = WorkClock(config)
    built = build_columns(problem, config, hint, columns=columns, min_bins=min_bins)
    certified = problem.weights.bins * built.bound.cost
    together = _together(built)
    rounds: list[dict[str, Any]] = []
    results: list[SolveResult] = []
    decision = None
    lower = certified
    while True:
        round_config = _left(config, clock)
        solution = solve_milp(built.builder, round_config)
        result = solution.result
        clock.charge(_work(built.builder, result, round_config))
        results.append(result)
        if result.status == Status.INFEASIBLE or not result.status.has_solution:
            if result.status != Status.INFEASIBLE and result.bound is not None:
                lower = max(lower, result.bound)
            break
        if result.status == Status.OPTIMAL:
            lower = max(lower, result.objective)
        elif result.bound is not None:
            lower = max(lower, result.bound)
        chosen = [key for key, var in built.x.items() if solution.is_one(var)]
        assignment = {n: b for b, (c, _) in enumerate(chosen) for n in built.columns[c].members}
        cycles = quotient_cycles(problem, assignment)
        rounds.append({"objective": result.objective, "bound": result.bound, "cycles": len(cycles),
                       "seconds": result.solve_seconds})
        if not cycles:
            types = {b: problem.bin_types[k].name for b, (_, k) in enumerate(chosen)}
            decision = complete(problem, assignment, types)
            break
        for cycle in cycles:
            _add_cycle_cut(built, together, cycle)
        if hint is not None and lower >= objective(problem, hint) - 1e-9:
            break  # the warm start is proven optimal
        left = clock.left()
        if left is not None and left < MIN_SOLVE_WORK:
            break
    last = results[-1]
    final = dataclasses.replace(last)
    final.solve_seconds = sum(r.solve_seconds for r in results)
    if final.status != Status.INFEASIBLE:
        final.bound = lower
    if decision is not None:
        value = objective(problem, decision)
        final.status = Status.OPTIMAL if value <= lower + 1e-9 else Status.FEASIBLE
        final.objective = value
        final.bound = min(lower, value)
        final.gap = relative_gap(value, final.bound)
    elif hint is not None and lower >= objective(problem, hint) - 1e-9 and final.status != Status.INFEASIBLE:
        decision = hint
        final.status, final.objective, final.bound, final.gap = Status.OPTIMAL, lower, lower, 0.0
    elif final.status.has_solution:  # only cyclic covers: only the bound counts
        final.status, final.objective, final.gap = Status.TIMEOUT_NO_SOLUTION, None, None
        final.limit_reached = True
    explanation = []
    if final.status == Status.INFEASIBLE and explain:
        explanation = explain_infeasible(built.builder, config)
    details = {"model_size": built.builder.size(), "columns": len(columns), "cut_rounds": rounds, "work": clock.elapsed()}
    return Solved(final, decision, explanation, details)


def _together(built: ColumnModel) -> Callable[[str, str], Any]:
    """together(u, v): the linear expression "u and v are in the same bin" (Σ of the columns with both)."""
    holding: dict[str, dict[int, list[Any]]] = {}
    for (c, _), var in built.x.items():
        for n in built.columns[c].members:
            holding.setdefault(n, {}).setdefault(c, []).append(var)

    def together(u: str, v: str) -> Any:
        both = holding.get(u, {}).keys() & holding.get(v, {}).keys()
        return linear_sum(var for c in sorted(both) for var in holding[u][c])

    return together


def _add_cycle_cut(built: ColumnModel, together, cycle: list[tuple[str, str]]) -> None:
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


def quotient_cycles(problem: PartitionProblem, assignment: dict[str, int], limit: int = 40) -> list[list[tuple[str, str]]]:
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


def _restrict(decision: PartitionDecision | None, names: list[str], clusters: set[str]) -> PartitionDecision | None:
    """The part of ``decision`` on items ``names`` (whose clusters are ``clusters``)."""
    if decision is None:
        return None
    keep = set(names)
    bins = sorted({b for n, b in decision.assignment.items() if n in keep})
    return PartitionDecision(
        {n: b for n, b in decision.assignment.items() if n in keep},
        {b: decision.bin_types[b] for b in bins},
        {b: t for b, t in decision.delays.items() if b in bins},
        {k: t for k, t in decision.source_delays.items() if k[2] in clusters},
        {k: v for k, v in decision.retiming.items() if k[2] in bins},
    )


CHUNK_ITEMS = 150  # an acyclic cluster with more items than this is solved in consecutive chunks ...
CHUNK_SIZE = 60  # ... of about this many items (whole bins of the warm start)


def _chunks(problem: PartitionProblem, hint: PartitionDecision) -> list[list[str]] | None:
    """The warm start's bins in a topological order of its quotient graph, cut into consecutive groups
    of about CHUNK_SIZE items; every order link runs from a group to the same or a later one."""
    bins = sorted(set(hint.assignment.values()))
    succ: dict[int, set[int]] = {b: set() for b in bins}
    for s, d in problem.order_links():
        p, q = hint.assignment[s], hint.assignment[d]
        if p != q:
            succ[p].add(q)
    try:
        topo = {b: k for k, b in enumerate(_topo(bins, {b: sorted(v) for b, v in succ.items()}))}
    except ValueError:
        return None
    # by the warm start's delay (its schedule is a topological order), so a chunk holds bins that run
    # together and the values it reads from earlier chunks are recent
    order = sorted(bins, key=lambda b: (hint.delays.get(b, 0), topo[b]))
    members: dict[int, list[str]] = {b: [] for b in bins}
    for n in problem.topological_items():
        members[hint.assignment[n]].append(n)
    groups: list[list[str]] = [[]]
    for b in order:
        if groups[-1] and len(groups[-1]) + len(members[b]) > CHUNK_SIZE:
            groups.append([])
        groups[-1].extend(members[b])
    return groups if len(groups) > 1 else None


def _solve_chunked(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision,
                   chunks: list[list[str]], explain: bool) -> Solved[PartitionDecision]:
    """A large acyclic cluster, chunk by chunk (:func:`_chunks`), each chunk solved as its own problem:
    links to other chunks are external, so its capacity and arity rows are those of the whole; chunks
    follow a topological order, so the joined quotient graph is acyclic. With retiming, the delays of the
    values a chunk reads from earlier chunks are fixed (``Retiming.fixed_sources``), so each chunk pays
    exactly the retiming of the links into it; the values it makes for later chunks are read at the warm
    start's delays (``Retiming.fixed_sinks``), so it pays for the links out of it too (the sum of the
    chunks' objectives counts a link between chunks twice); values from outside the actor get one delay at
    the end (as late as their first reader allows), so when several chunks read one such value the join may need
    more retiming than its chunks counted. Candidates: the join on the chunks' delays (when every
    precedence holds, :func:`_schedule_holds`) and the join rescheduled as a whole; the best is kept only
    when it beats the warm start. Only the combinatorial lower bound is global: the result is optimal
    only when it meets it."""
    clock = WorkClock(config)
    assignment: dict[str, int] = {}
    types: dict[int, str] = {}
    delays: dict[int, int] = {}
    sources: dict[tuple[str, str, str], int] = {}  # external values of the whole problem
    known: dict[tuple[str, str, str], int] = {}  # every value's delay so far (items' values: their bin's)
    results: list[SolveResult] = []
    parts = []
    clusters = {i.cluster for i in problem.items}
    cluster = {i.name: i.cluster for i in problem.items}
    left_items = len(problem.items)
    readers_after = [set().union(*chunks[k + 1:]) for k in range(len(chunks))]  # items of later chunks
    for k, names in enumerate(chunks):
        inside = set(names)
        sub = problem.subproblem(names, f"{problem.name}[chunk {k}]")
        local_hint = _restrict(hint, names, clusters)
        base = 0
        if problem.retiming is not None:
            reads = {(l.src, l.src_port, cluster[l.dst]) for l in sub.links
                     if l.forward and not l.order_only and l.dst in inside and l.src not in inside}
            fixed = {key: known[key] for key in reads if key in known}
            # this chunk's clock starts at its earliest fixed value or warm-start delay, whichever is first,
            # so the warm start's delays fit (the model's delays are ≥ 0)
            own = [hint.delays[hint.assignment[n]] for n in names] if hint.delays else []
            base = min([*fixed.values(), *own], default=0)
            # values read by later chunks: their readers at the warm start's delays
            later = {(l.src, l.src_port, hint.delays[hint.assignment[l.dst]]) for l in problem.links
                     if l.forward and not l.order_only and l.src in inside and l.dst in readers_after[k]} \
                if hint.delays else set()
            retiming = dataclasses.replace(
                problem.retiming, fixed_sources=tuple(sorted((key, t - base) for key, t in fixed.items())),
                fixed_sinks=tuple(sorted(((src, port), t - base) for src, port, t in later)))
            sub = dataclasses.replace(sub, retiming=retiming)
            try:
                local_hint = complete(sub, local_hint.assignment, local_hint.bin_types)  # on the fixed delays
            except ValueError:  # (the warm start's readers fit by construction; a safety net) no readers
                sub = dataclasses.replace(sub, retiming=dataclasses.replace(retiming, fixed_sinks=()))
                local_hint = complete(sub, local_hint.assignment, local_hint.bin_types)
        # the slot model only: a chunk's budget is short, and its proof would not make the join optimal
        solved = _solve_one(sub, _left(config, clock, len(names) / left_items), local_hint, "ours", False,
                            use_columns=False)
        clock.charge(_spent(solved))
        left_items -= len(names)
        results.append(solved.result)
        chosen = solved.decision
        if chosen is None or objective(sub, chosen) > objective(sub, local_hint):
            chosen = local_hint
        if problem.retiming is not None:  # the solver's delays are arbitrary where they cost nothing
            compact = complete(sub, chosen.assignment, chosen.bin_types)  # (ASAP meets what the model met)
            if objective(sub, compact) <= objective(sub, chosen):
                chosen = compact
        offset = len(types)
        renumber = {b: offset + j for j, b in enumerate(sorted(set(chosen.assignment.values())))}
        assignment.update({n: renumber[b] for n, b in chosen.assignment.items()})
        types.update({renumber[b]: chosen.bin_types[b] for b in renumber})
        if problem.retiming is not None:
            fixed_local = dict(sub.retiming.fixed_sources)
            drift = next((chosen.source_delays[key] - t for key, t in fixed_local.items()
                          if key in chosen.source_delays), 0)
            shift = base - drift  # this chunk's delays on the whole problem's clock
            for b, t in chosen.delays.items():
                if b in renumber:
                    delays[renumber[b]] = t + shift
            for n in names:
                for port in {l.src_port for l in sub.links if l.src == n}:
                    known[n, port, cluster[n]] = delays[assignment[n]]
        parts.append({"chunk": k, "items": len(names), "status": str(solved.result.status),
                      "objective": objective(sub, chosen), "bound": solved.result.bound,
                      "warm_start": objective(sub, local_hint)})
    if problem.retiming is not None:
        # a value from outside the problem starts as late as its first reader allows (fewest retiming bins)
        for p, q, _ in cross_arcs(problem, assignment):
            if isinstance(p, tuple):
                start = delays[q] - problem.retiming.hop_latency
                sources[p[1]] = min(sources.get(p[1], start), start)
        joined = PartitionDecision(assignment, types, delays, sources,
                                   required_retiming(problem, assignment, delays, sources))
    else:
        joined = PartitionDecision(assignment, types)
    # an order-only link between chunks carries no value, so no chunk fixed a delay for it: the chunks'
    # own delays are kept only when every precedence holds (the whole-actor reschedule always does)
    candidates = [joined] if quotient_acyclic(problem, assignment) and _schedule_holds(problem, joined) else []
    if problem.retiming is not None:
        candidates.append(complete(problem, assignment, types))  # rescheduled as a whole
    best = min([hint] + candidates, key=lambda d: objective(problem, d))
    value = objective(problem, best)
    lb = lower_bound(problem)
    bound = min(problem.weights.bins * lb.cost, value)
    status = Status.OPTIMAL if value <= bound + 1e-9 else Status.FEASIBLE
    final = SolveResult(status, value, bound, relative_gap(value, bound), backend=results[-1].backend,
                        solver_version=results[-1].solver_version,
                        limit_reached=status != Status.OPTIMAL and any(r.limit_reached for r in results),
                        message=f"{len(chunks)} chunks of about {CHUNK_SIZE} items solved in turn")
    details = {"variant": "ours", "chunks": parts, "work": clock.elapsed(),
               "lower_bound": {"bins": lb.bins, "reason": lb.reason}, "warm_start": objective(problem, hint),
               "candidates": [objective(problem, d) for d in candidates]}
    return Solved(combine(results, final), best, [], details)


def _schedule_holds(problem: PartitionProblem, decision: PartitionDecision) -> bool:
    """Every cross-bin value arrives before its bin starts (L later) and every order-only link between
    bins of one cluster keeps its order; trivially true without retiming (no schedule)."""
    if problem.retiming is None:
        return True
    lat, assign, delays = problem.retiming.hop_latency, decision.assignment, decision.delays
    for p, q, _ in cross_arcs(problem, assign):
        start = decision.source_delays.get(p[1]) if isinstance(p, tuple) else delays.get(p)
        if start is None or q not in delays or delays[q] < start + lat:
            return False
    cluster = {i.name: i.cluster for i in problem.items}
    return all(delays[assign[d]] >= delays[assign[s]] for s, d in problem.order_links()
               if assign[s] != assign[d] and cluster[s] == cluster[d])


def solve(problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None = None, *,
          variant: str = "ours", explain: bool = True, retiming_search: str = "auto") -> Solved[PartitionDecision]:
    """Solve ``problem``; clusters are solved one by one when no bin type has a finite count, and an
    acyclic cluster of more than CHUNK_ITEMS items in chunks (:func:`_solve_chunked`). ``retiming_search``
    picks phase B of retiming problems (:func:`_by_columns`)."""
    if variant not in VARIANTS:
        raise ConfigError(f"unknown partition variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    _by_columns(retiming_search, config)  # (validates the name)
    clusters = problem.clusters()
    separable = len(clusters) > 1 and all(t.count is None for t in problem.bin_types)
    if not separable:
        return _solve_one(problem, config, hint, variant, explain, search=retiming_search)
    clock = WorkClock(config)
    names = sorted(clusters, key=lambda c: (len(clusters[c]), c))
    results: list[SolveResult] = []
    parts: list[tuple[list[str], PartitionDecision]] = []
    details: dict[str, Any] = {"components": [], "variant": variant, "work": 0.0}
    lower = 0.0
    for k, c in enumerate(names):
        members = clusters[c]
        sub = problem.subproblem(members, f"{problem.name}/{c}")
        sub_config = config
        if config.time_limit_s is not None:
            sub_config = _left(config, clock, 1.0 / (len(names) - k))
        solved = _solve_one(sub, sub_config, _restrict(hint, members, {c}), variant, explain, search=retiming_search)
        clock.charge(_spent(solved))
        results.append(solved.result)
        details["components"].append({"cluster": c, "items": len(members), "status": str(solved.result.status),
                                      "objective": solved.result.objective, "bound": solved.result.bound,
                                      "solve_seconds": solved.result.solve_seconds,
                                      "lower_bound": solved.details.get("lower_bound", {}).get("bins")})
        certified = problem.weights.bins * lower_bound(sub).cost
        if solved.decision is None:
            fallback = _restrict(hint, members, {c})
            if fallback is None or solved.result.status == Status.INFEASIBLE:
                result = combine(results, solved.result)
                return Solved(result, None, [f"cluster {c}: {g}" for g in solved.explanation], details)
            solved_decision, bound = fallback, certified
        else:
            solved_decision = solved.decision
            bound = solved.result.bound if solved.result.bound is not None else certified
        parts.append((members, solved_decision))
        lower += bound
        details["work"] = clock.elapsed()
    decision = _join(problem, parts)
    value = objective(problem, decision)
    statuses = [r.status for r in results]
    status = Status.OPTIMAL if all(s == Status.OPTIMAL for s in statuses) else Status.FEASIBLE
    final = SolveResult(status, value, min(lower, value), relative_gap(value, min(lower, value)),
                        backend=results[-1].backend, solver_version=results[-1].solver_version,
                        limit_reached=any(r.limit_reached for r in results),
                        message=f"{len(names)} clusters solved separately")
    return Solved(combine(results, final), decision, [], details)


def _join(problem: PartitionProblem, parts: list[tuple[list[str], PartitionDecision]]) -> PartitionDecision:
    """Concatenate per-cluster decisions into one numbering (bins of cluster k after those of k−1)."""
    assignment: dict[str, int] = {}
    types: dict[int, str] = {}
    delays: dict[int, int] = {}
    sources: dict[tuple[str, str], int] = {}
    retiming: dict[tuple[str, str, int], int] = {}
    offset = 0
    position = {n: k for k, n in enumerate(problem.item_names)}
    for members, d in sorted(parts, key=lambda p: min(position[n] for n in p[0])):
        bins = sorted(set(d.assignment.values()))
        renumber = {b: offset + k for k, b in enumerate(bins)}
        for n, b in d.assignment.items():
            assignment[n] = renumber[b]
        for b in bins:
            types[renumber[b]] = d.bin_types[b]
            if b in d.delays:
                delays[renumber[b]] = d.delays[b]
        home = {problem.item(n).cluster for n in members}
        sources.update({k: t for k, t in d.source_delays.items() if k[2] in home})
        for (s, p, b), v in d.retiming.items():
            retiming[s, p, renumber[b]] = v
        offset += len(bins)
    if problem.retiming is None:
        return PartitionDecision(assignment, types)
    return PartitionDecision(assignment, types, delays, sources, retiming)


class Variant:
    """The formulation with a fixed variant, for :func:`~solvermap.mappers.pipeline.run_decision`."""

    NAME = NAME
    KIND = KIND

    def __init__(self, variant: str = "ours", retiming_search: str = "auto") -> None:
        if variant not in VARIANTS:
            raise ConfigError(f"unknown partition variant {variant!r}; choose one of {', '.join(VARIANTS)}")
        if retiming_search not in RETIMING_SEARCHES:
            raise ConfigError(f"unknown retiming search {retiming_search!r}; "
                              f"choose one of {', '.join(RETIMING_SEARCHES)}")
        self.variant = variant
        self.retiming_search = retiming_search

    def solve(self, problem: PartitionProblem, config: SolverConfig, hint: PartitionDecision | None = None) -> Solved:
        return solve(problem, config, hint, variant=self.variant, retiming_search=self.retiming_search)

    @staticmethod
    def diagnose(problem: PartitionProblem) -> str | None:
        return diagnose(problem)


__all__ = ["NAME", "KIND", "VARIANTS", "LowerBound", "lower_bound", "diagnose", "build", "build_table42", "decode",
           "solve", "Variant"]
