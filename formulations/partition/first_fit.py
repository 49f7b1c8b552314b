"""A constructive start for large acyclic problems that no baseline packs (:func:`first_fit`).

Order     items in the problem's topological order (:meth:`PartitionProblem.topological_items`), so every
          order-link predecessor of an item is placed before it.
Candidates the bins of the item's neighbours already placed (most shared values first: joining one removes
          a link from both bins' arity), then the ``settings.first_fit_recent`` bins opened last; several
          bins stay open, unlike the traversal merger (seed 004 L670), which grows one group along its
          traversal and closes it at the first item that does not fit it.
Joins     the first candidate of the same cluster whose type the item may take (allowed pair), whose sum
          resources stay within capacity and max resources within the type's capacity, whose input and
          output arity per link kind stay within the type's limits (a value counts once; a value is
          counted as leaving while any consumer is outside the bin, placed or not, so the final bin
          is exactly the one last checked), and whose quotient graph stays acyclic: joining bin b adds
          the arcs c → b from the bins c of the item's predecessors, a cycle iff b already reaches one
          of them (descendant and ancestor sets of every bin kept as bit sets).
Opens     else a new bin of a type the item fits, within the type's count, the type with the most slack
          first: count − bins used − the bins the unplaced items only that type can hold still need at
          least (their total demand of each sum resource over its capacity, and the items over half of
          it, each a bin of its own); flexible items so go to the type with room to spare.
Returns   None when an item fits no candidate and no type has a bin left: the heuristic failed, nothing
          is proven.

Each step is O(candidates × bin size) plus the bit-set update of a new quotient arc, so the whole is
roughly linear in the items for bins of bounded size.
"""

from __future__ import annotations

import math
from collections import Counter

from solvermap.formulations.partition.settings import SETTINGS
from solvermap.formulations.problems.partition import BinType, PartitionDecision, PartitionProblem, complete


class _Bins:
    """Open bins: members, type, resource use, and the quotient graph's reachability as bit sets."""

    def __init__(self, problem: PartitionProblem) -> None:
        self.problem = problem
        self.members: list[set[str]] = []
        self.types: list[BinType] = []
        self.sums: list[Counter[str]] = []
        self.desc: list[int] = []  # bit c set: bin c is reachable from this bin (not itself)
        self.anc: list[int] = []  # bit c set: this bin is reachable from bin c
        self.where: dict[str, int] = {}

    def fits(self, b: int, item: str) -> bool:
        t, members = self.types[b], self.members[b]
        problem = self.problem
        if problem.feasible is not None and (item, t.name) not in problem.feasible:
            return False
        for r, v in problem.item(item).demand.items():
            used = v if t.reduce_of(r) == "max" else self.sums[b][r] + v
            if used > t.cap(r) + 1e-9:
                return False
        ins, outs = problem.crossing(members | {item})
        return all(n <= t.inputs.get(kind, n) for kind, n in ins.items()) and \
            all(n <= t.outputs.get(kind, n) for kind, n in outs.items())

    def open(self, t: BinType) -> int:
        self.members.append(set())
        self.types.append(t)
        self.sums.append(Counter())
        self.desc.append(0)
        self.anc.append(0)
        return len(self.members) - 1

    def add(self, b: int, item: str, preds: set[int]) -> None:
        self.members[b].add(item)
        self.sums[b].update(self.problem.item(item).demand)
        self.where[item] = b
        for c in preds - {b}:
            if (self.desc[c] >> b) & 1:
                continue
            above, below = self.anc[c] | (1 << c), self.desc[b] | (1 << b)
            for a in _bits(above):
                self.desc[a] |= below
            for d in _bits(below):
                self.anc[d] |= above

    def acyclic_with(self, b: int, preds: set[int]) -> bool:
        mask = 0
        for c in preds - {b}:
            mask |= 1 << c
        return not (self.desc[b] & mask)


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _exclusive_left(problem: PartitionProblem, names: list[str]) -> dict[str, tuple[Counter[str], int]]:
    """Per type: the summed demand of the items of ``names`` that only it can hold, and how many of them
    are over half of one of its sum resources."""
    out: dict[str, tuple[Counter[str], int]] = {t.name: (Counter(), 0) for t in problem.bin_types}
    for n in names:
        types = problem.feasible_types(n)
        if len(types) == 1:
            t = types[0]
            sums, big = out[t.name]
            sums.update(problem.item(n).demand)
            out[t.name] = (sums, big + _over_half(problem, n, t))
    return out


def _over_half(problem: PartitionProblem, item: str, t: BinType) -> int:
    return int(any(t.reduce_of(r) == "sum" and t.cap(r) > 0 and v > t.cap(r) / 2 + 1e-9
                   for r, v in problem.item(item).demand.items()))


def _still_needed(t: BinType, sums: Counter[str], big: int) -> int:
    need = big
    for r, v in sums.items():
        if t.reduce_of(r) == "sum" and t.cap(r) > 0:
            need = max(need, math.ceil(v / t.cap(r) - 1e-9))
    return need


def first_fit(problem: PartitionProblem) -> PartitionDecision | None:
    """A packing by first fit over several open bins in topological order (module docstring), or None."""
    if not problem.acyclic:
        return None
    order = problem.topological_items()
    bins = _Bins(problem)
    neighbours: dict[str, Counter[str]] = {n: Counter() for n in order}
    preds: dict[str, list[str]] = {n: [] for n in order}
    for link in problem.links:
        if link.src in neighbours and link.dst in neighbours:
            neighbours[link.src][link.dst] += 1
            neighbours[link.dst][link.src] += 1
    for s, d in problem.order_links():
        preds[d].append(s)
    feasible = {n: problem.feasible_types(n) for n in order}
    left = _exclusive_left(problem, order)
    used: Counter[str] = Counter()
    cluster = {i.name: i.cluster for i in problem.items}
    recent: list[int] = []
    for n in order:
        if not feasible[n]:
            return None
        pred_bins = {bins.where[p] for p in preds[n]}
        shared: Counter[int] = Counter()
        for m, k in neighbours[n].items():
            if m in bins.where:
                shared[bins.where[m]] += k
        candidates = [b for b, _ in sorted(shared.items(), key=lambda e: (-e[1], -e[0]))]
        candidates += [b for b in reversed(recent) if b not in shared]
        chosen = next((b for b in candidates if cluster[next(iter(bins.members[b]))] == cluster[n]
                       and bins.acyclic_with(b, pred_bins) and bins.fits(b, n)), None)
        if len(feasible[n]) == 1:  # no longer waiting for a bin of its only type
            t = feasible[n][0]
            sums, big = left[t.name]
            sums.subtract(problem.item(n).demand)
            left[t.name] = (sums, big - _over_half(problem, n, t))
        if chosen is None:
            room = [(t.count - used[t.name] - _still_needed(t, *left[t.name]) if t.count is not None else math.inf,
                     -t.cost, -k, t) for k, t in enumerate(problem.bin_types)
                    if t in feasible[n] and (t.count is None or used[t.name] < t.count)]
            if not room:
                return None
            t = max(room, key=lambda e: e[:3])[3]
            chosen = bins.open(t)
            used[t.name] += 1
            recent = (recent + [chosen])[-SETTINGS.first_fit_recent:]
        bins.add(chosen, n, pred_bins)
    return complete(problem, dict(bins.where), {b: t.name for b, t in enumerate(bins.types)})
