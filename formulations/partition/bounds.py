"""Certified lower bounds on the bins of a partition problem, and the diagnosis of infeasible ones.

Bounds    Σ κ w ≥ LB = max of: resource bound ⌈Σ c / C⌉; arity bound ⌈#external inputs (outputs) of kind k /
          In (Out)⌉; big-item bound (items that pairwise exceed a capacity); chain bound max_i ⌈anc(i)/C⌉ +
          ⌈desc(i)/C⌉ − 1 (ancestors fill a prefix of slots, descendants a suffix), which also fixes the slot
          model's domains dom(i) = [⌈anc(i)/C⌉ − 1, S − ⌈desc(i)/C⌉]; type-exclusive bound Σ_τ ⌈demand of the
          items only τ can hold / C_τ⌉ (several types); one bin per cluster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from solvermap.formulations.partition.settings import SETTINGS
from solvermap.formulations.problems.partition import BinType, PartitionProblem


@dataclass(frozen=True)
class LowerBound:
    """A certified lower bound on the bins' cost, with the argument that gives it."""

    bins: int  # lower bound on the number of bins
    cost: float  # lower bound on Σ cost (bins × cheapest cost)
    reason: str
    parts: dict[str, int] = field(default_factory=dict)


def sum_resources(problem: PartitionProblem) -> dict[str, float]:
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
    if n > SETTINGS.reachability_items:
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


def chain_counts(problem: PartitionProblem, order: list[str]) -> tuple[list[int], list[int]] | None:
    """Per item (in ``order``): bins needed by its ancestors (incl. itself) and by its descendants."""
    if not problem.acyclic:
        return None
    anc = _reachability(problem, order)
    if anc is None:
        return None
    n = len(order)
    need_up = np.ones(n, dtype=np.int64)
    need_down = np.ones(n, dtype=np.int64)
    for r, cap in sum_resources(problem).items():
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
    for r, cap in sum_resources(problem).items():
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
    sums = sum_resources(problem)
    for i in problem.items:
        if any(i.demand.get(r, 0.0) > cap / 2 + 1e-9 for r, cap in sums.items()):
            big += 1
    parts["items over half a bin"] = big
    if problem.acyclic:
        order = order or problem.topological_items()
        chains = chain_counts(problem, order)
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


def exclusive_needs(problem: PartitionProblem) -> list[tuple[BinType, int, int]]:
    """Per bin type that some items fit alone: (the type, how many items only it can hold, the bins of it
    those items need at least: their total demand of each sum resource over its capacity). Every solution
    puts those items into bins of that type, so the count is certified; the diagnosis refuses a type whose
    count is below it, the type-exclusive bound sums it over the types (bins of different types are
    disjoint)."""
    only: dict[str, list] = {}
    for item in problem.items:
        types = problem.feasible_types(item.name)
        if len(types) == 1:
            only.setdefault(types[0].name, []).append(item)
    out = []
    for t in problem.bin_types:
        items = only.get(t.name)
        if not items:
            continue
        need = 1
        for r in sorted({r for i in items for r in i.demand}):
            if t.reduce_of(r) == "sum" and t.cap(r) > 0:
                need = max(need, math.ceil(sum(i.demand.get(r, 0.0) for i in items) / t.cap(r) - 1e-9))
        out.append((t, len(items), need))
    return out


def _type_exclusive_bound(problem: PartitionProblem) -> int:
    """Items that fit exactly one type need bins of that type; bins of different types are disjoint."""
    return sum(need for _, _, need in exclusive_needs(problem))


def count_shortfall(problem: PartitionProblem) -> str | None:
    """The first bin type whose count is below what the items only it can hold need (:func:`exclusive_needs`),
    as one line; None when every count suffices for that argument."""
    for t, items, need in exclusive_needs(problem):
        if t.count is not None and need > t.count:
            return (f"{items} items fit only a {t.name} and need at least {need} of them "
                    f"(their total demand), the target has {t.count}")
    return None


def diagnose(problem: PartitionProblem) -> str | None:
    """Name the item that fits no bin type and the limit it breaks, or a count that is too small."""
    for item in problem.items:
        if not problem.feasible_types(item.name):
            reasons = []
            for t in problem.bin_types:
                why = problem.intrinsic_violations(item.name, t)
                reasons.append(f"{why[0]}" if why else f"does not fit a {t.name}")
            return f"node '{item.name}' fits no {'/'.join(t.name for t in problem.bin_types)}: {'; '.join(reasons)}"
    shortfall = count_shortfall(problem)
    if shortfall:
        return shortfall
    counted = [t for t in problem.bin_types if t.count is not None]
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

