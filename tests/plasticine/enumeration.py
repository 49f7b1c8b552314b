"""Brute-force optimum of small partition problems, judged by the independent checker.

Enumerates every set partition of the items (Bell number many), every type per block and — for
retiming problems — every delay vector in [0, L·(bins + external values)], keeps the decisions the
checker accepts and returns the best objective. Used only on instances of ≤ 6 items.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from solvermap.formulations.problems.partition import (
    PartitionDecision,
    PartitionProblem,
    objective,
    required_retiming,
)
from solvermap.hardware.checks.partition import check


def set_partitions(items: list[str]) -> Iterator[list[list[str]]]:
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in set_partitions(rest):
        for k in range(len(part)):
            yield part[:k] + [[first] + part[k]] + part[k + 1:]
        yield [[first]] + part


def optimum(problem: PartitionProblem, max_retiming: int | None = None) -> float | None:
    """The enumerated optimum (None: infeasible); ``max_retiming`` caps the retiming bins."""
    best = None
    names = problem.item_names
    type_names = [t.name for t in problem.bin_types]
    cluster = {i.name: i.cluster for i in problem.items}
    external = sorted({(l.src, l.src_port, cluster[l.dst]) for l in problem.links
                       if not l.order_only and l.forward and problem.is_item(l.dst)
                       and not (problem.is_item(l.src) and cluster[l.src] == cluster[l.dst])})
    for blocks in set_partitions(names):
        assignment = {n: b for b, block in enumerate(blocks) for n in block}
        for kinds in itertools.product(type_names, repeat=len(blocks)):
            types = dict(enumerate(kinds))
            plain = PartitionDecision(assignment, types)
            if problem.retiming is None:
                if check(problem, plain).ok:
                    value = objective(problem, plain)
                    best = value if best is None or value < best else best
                continue
            if not _rules_ok_without_schedule(problem, plain):
                continue
            value = _best_schedule(problem, assignment, types, len(blocks), external, max_retiming)
            if value is not None:
                best = value if best is None or value < best else best
    return best


def _best_schedule(problem, assignment, types, bins, external, max_retiming=None) -> float | None:
    """Best objective over every delay vector (bins, then external values) for a fixed assignment."""
    lat = problem.retiming.hop_latency
    arcs = set()
    for link in problem.links:
        if not link.forward or link.order_only or link.dst not in assignment:
            continue
        q = assignment[link.dst]
        cl = problem.item(link.dst).cluster
        inside = link.src in assignment and problem.item(link.src).cluster == cl
        p = assignment[link.src] if inside else bins + external.index((link.src, link.src_port, cl))
        if p != q:
            arcs.add((p, q, link.src, link.src_port))
    order = [(assignment[s], assignment[d]) for s, d in problem.order_links() if assignment[s] != assignment[d]]
    horizon = lat * (bins + len(external))
    best_vector = None
    best_cost = None
    for delays in itertools.product(range(horizon + 1), repeat=bins + len(external)):
        if any(delays[q] < delays[p] + lat for p, q, _, _ in arcs) or any(delays[q] < delays[p] for p, q in order):
            continue
        cost = sum(problem.retiming.required(delays[q] - delays[p] - lat) for p, q, _, _ in
                   {(p, q, s, port) for p, q, s, port in arcs})
        if max_retiming is not None and cost > max_retiming:
            continue
        if best_cost is None or cost < best_cost:
            best_cost, best_vector = cost, delays
    if best_vector is None:
        return None
    d = dict(enumerate(best_vector[:bins]))
    sources = dict(zip(external, best_vector[bins:]))
    decision = PartitionDecision(assignment, types, d, sources, required_retiming(problem, assignment, d, sources))
    return objective(problem, decision) if check(problem, decision).ok else None


def _rules_ok_without_schedule(problem: PartitionProblem, decision: PartitionDecision) -> bool:
    report = check(problem, decision)
    return not (report.rules() - {"schedule", "retiming"})
