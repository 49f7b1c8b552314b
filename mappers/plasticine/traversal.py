"""The seed's traversal heuristics (004 L643–648, L670), baselines beside the solver.

Partitioning: a topological traversal of each VB's operations (forward from the sources or backward
from the sinks; breadth-first = FIFO ready list, depth-first = LIFO ready list, re-sorted whenever a new
partition starts, L648) fills the current partition until the next operation would break a limit
(stages, input/output arity with broadcasts counted once), then opens a new one. Because every link
goes from an earlier-or-same partition to a later-or-same one, no cycle is created (L643), in
O(V + E) partition updates.

Merging: VBs in topological order are added to the current PB while the union still fits some PB type
(domain = intersection of the members' domains, L670) and a bipartite check — can every group so far
get a PB type within the available counts (a max-flow b-matching) — still succeeds; at the end the
types come from that matching.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Callable

import networkx as nx

from solvermap.formulations.problems.partition import (
    BinType,
    PartitionDecision,
    PartitionProblem,
    complete,
)


class Arity:
    """Incremental resource and port use of a growing set of items (broadcast groups counted once)."""

    def __init__(self, problem: PartitionProblem) -> None:
        self.problem = problem

    def usage(self, members: set[str]) -> tuple[dict[str, float], dict[str, float], dict[str, int], dict[str, int]]:
        sums: dict[str, float] = {}
        maxes: dict[str, float] = {}
        for n in members:
            for r, v in self.problem.item(n).demand.items():
                sums[r] = sums.get(r, 0.0) + v
                maxes[r] = max(maxes.get(r, 0.0), v)
        ins, outs = self.problem.crossing(members)
        return sums, maxes, ins, outs

    def fits(self, members: set[str], bin_type: BinType) -> bool:
        if self.problem.feasible is not None and any((n, bin_type.name) not in self.problem.feasible for n in members):
            return False
        sums, maxes, ins, outs = self.usage(members)
        for r, v in sums.items():
            used = maxes[r] if bin_type.reduce_of(r) == "max" else v
            if used > bin_type.cap(r) + 1e-9:
                return False
        for kind, n in ins.items():
            if kind in bin_type.inputs and n > bin_type.inputs[kind]:
                return False
        for kind, n in outs.items():
            if kind in bin_type.outputs and n > bin_type.outputs[kind]:
                return False
        return True

    def domain(self, members: set[str]) -> list[str]:
        return [t.name for t in self.problem.bin_types if self.fits(members, t)]


def _orders(problem: PartitionProblem, names: list[str], strategy: str, backward: bool) -> Callable[[set[str]], list[str]]:
    """Ready-list traversal of ``names``; returns a function giving the next order of the remaining items."""
    position = {n: k for k, n in enumerate(problem.item_names)}
    succ: dict[str, list[str]] = {n: [] for n in names}
    pred: dict[str, list[str]] = {n: [] for n in names}
    keep = set(names)
    for s, d in problem.order_links():
        if s in keep and d in keep:
            succ[s].append(d)
            pred[d].append(s)
    if backward:
        succ, pred = pred, succ

    def order(remaining: set[str]) -> list[str]:
        indeg = {n: sum(1 for p in pred[n] if p in remaining) for n in remaining}
        ready = sorted((n for n in remaining if indeg[n] == 0), key=lambda n: position[n], reverse=backward)
        out = []
        if strategy == "bfs":
            heap = [(0, k, n) for k, n in enumerate(ready)]
            heapq.heapify(heap)
            stamp = len(heap)
            while heap:
                _, _, n = heapq.heappop(heap)
                out.append(n)
                for q in succ[n]:
                    if q in indeg:
                        indeg[q] -= 1
                        if indeg[q] == 0:
                            stamp += 1
                            heapq.heappush(heap, (stamp, stamp, q))
        else:  # dfs: the most recently enabled item first
            stack = list(reversed(ready))
            while stack:
                n = stack.pop()
                out.append(n)
                for q in reversed(succ[n]):
                    if q in indeg:
                        indeg[q] -= 1
                        if indeg[q] == 0:
                            stack.append(q)
        return out

    return order


def traversal_partition(problem: PartitionProblem, strategy: str = "dfs", backward: bool = False) -> PartitionDecision | None:
    """Greedy fill along a traversal order, per cluster (see the module docstring); one bin type."""
    bin_type = problem.bin_types[0]
    arity = Arity(problem)
    assignment: dict[str, int] = {}
    next_bin = 0
    for cluster, names in problem.clusters().items():
        order_of = _orders(problem, names, strategy, backward)
        remaining = set(names)
        bins: list[list[str]] = []
        current: set[str] = set()
        order = order_of(remaining)
        while order:
            n = order[0]
            trial = current | {n}
            if current and not arity.fits(trial, bin_type):
                bins.append(sorted(current))
                current = set()
                if strategy == "dfs":  # re-sort the remaining list for the new partition (L648)
                    order = order_of(remaining)
                continue
            current = trial
            remaining.discard(n)
            order.pop(0)
        if current:
            bins.append(sorted(current))
        if backward:
            bins.reverse()
        for members in bins:
            for n in members:
                assignment[n] = next_bin
            next_bin += 1
    return complete(problem, assignment, dict.fromkeys(range(next_bin), bin_type.name))


def partition_baselines(problem: PartitionProblem) -> dict[str, Callable[[PartitionProblem], PartitionDecision | None]]:
    """The four traversal orders of L648: the partition descriptor's baselines, by name."""
    from solvermap.mappers.decisions import PARTITION

    return {b.name: functools.partial(b.run, **b.kwargs) for b in PARTITION.baselines}


# ---------------------------------------------------------------------- merging


def assign_types(domains: list[list[str]], problem: PartitionProblem) -> list[str] | None:
    """A PB type per group within the available counts (bipartite b-matching by max flow), or None."""
    flow = nx.DiGraph()
    for k, dom in enumerate(domains):
        flow.add_edge("s", ("g", k), capacity=1)
        for t in dom:
            flow.add_edge(("g", k), ("t", t), capacity=1)
    for t in problem.bin_types:
        flow.add_edge(("t", t.name), "z", capacity=t.count if t.count is not None else len(domains))
    if not domains:
        return []
    value, paths = nx.maximum_flow(flow, "s", "z")
    if value < len(domains):
        return None
    out = []
    for k in range(len(domains)):
        chosen = next(t for t in domains[k] if paths[("g", k)].get(("t", t), 0) > 0)
        out.append(chosen)
    return out


def traversal_merge(problem: PartitionProblem, strategy: str = "bfs") -> PartitionDecision | None:
    """The traversal merger with a bipartite feasibility check at every step (L670)."""
    arity = Arity(problem)
    order = _orders(problem, problem.item_names, strategy, False)(set(problem.item_names))
    groups: list[set[str]] = []
    domains: list[list[str]] = []
    current: set[str] = set()
    current_dom: list[str] = []
    for n in order:
        trial = current | {n}
        dom = arity.domain(trial)
        if current and (not dom or assign_types(domains + [dom], problem) is None):
            groups.append(current)
            domains.append(current_dom)
            current, current_dom = {n}, arity.domain({n})
            if not current_dom:
                return None
            continue
        current, current_dom = trial, dom
        if not dom:
            return None
    if current:
        groups.append(current)
        domains.append(current_dom)
    types = assign_types(domains, problem)
    if types is None:
        return None
    assignment = {n: k for k, members in enumerate(groups) for n in members}
    return complete(problem, assignment, dict(enumerate(types)))


def unmerged(problem: PartitionProblem) -> PartitionDecision | None:
    """No merging: every VB on a PB of its own (types by matching)."""
    arity = Arity(problem)
    domains = [arity.domain({n}) for n in problem.item_names]
    if any(not d for d in domains):
        return None
    types = assign_types(domains, problem)
    if types is None:
        return None
    return complete(problem, {n: k for k, n in enumerate(problem.item_names)}, dict(enumerate(types)))


def merge_baselines(problem: PartitionProblem) -> dict[str, Callable[[PartitionProblem], PartitionDecision | None]]:
    """The merge descriptor's baselines, by name."""
    from solvermap.mappers.decisions import MERGE

    return {b.name: functools.partial(b.run, **b.kwargs) for b in MERGE.baselines}
