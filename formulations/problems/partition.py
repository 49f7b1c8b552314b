"""Capacity-limited partitioning and heterogeneous bin packing: problem, decision and objective.

One problem type serves every "put items into bins under capacity" decision of the project:

* SARA compute partitioning (seed 004 Table 4.2, L599–608, L635–652): items are the operations of a
  virtual block, bins are PCU-sized partitions; broadcast-aware vector/scalar input and output arity,
  acyclic quotient graph, retiming partitions when a delay gap exceeds the input buffer depth.
* SARA global merging (Tables 4.3/4.4, L615–623, L670): items are VBs, bins are physical blocks of
  several types (PCU, PMU, DAG) with a feasibility relation, sum- and max-reduced resources and
  available counts; the type of every bin is chosen jointly with the assignment.
* PUMA grouping of crossbar blocks into cores/tiles (capacity, cut traffic) and push-memory packing of
  buffers onto memory tiles (plain bin packing, no links).

Terms
    item        something to place; ``demand`` is a named resource vector (``stages``, ``sram_bytes`` ...).
    bin type    ``capacity`` per resource, ``reduction`` per resource (``sum``: demands add up, the
                default; ``max``: the largest demand must fit, e.g. SIMD lanes), per-kind ``inputs`` /
                ``outputs`` arity limits, ``count`` available (None = unlimited) and ``cost``.
                A resource missing from ``capacity`` has capacity 0; a link kind missing from
                ``inputs``/``outputs`` is unlimited for that type.
    link        ``src → dst`` carrying the value ``(src, src_port)`` (its *broadcast group*: one produced
                value read by many consumers is one logical link and uses one input of a bin and one
                output of its producer's bin, seed L637, Fig 4.4(a)). An endpoint that is not an item is
                *external*: an external source always enters the consumer's bin; an external consumer
                always takes an output of the producer's bin. ``forward=False`` marks a loop-carried
                (back) edge: it counts toward arity but not toward acyclicity or retiming (seed L637).
                ``order_only`` links constrain acyclicity only (no value, no port).
    cluster     items of different clusters never share a bin (SARA partitions each VB separately).

Acyclicity (``acyclic=True``): the quotient graph whose nodes are bins and whose arcs are the forward
links between different bins has no cycle (an actor fires atomically on all inputs, so a new cycle
deadlocks; seed L637).

Retiming (``retiming=Retiming(hop_latency L, buffer_depth b_d)``, needs ``acyclic``): every used bin b
has a delay t_b (cycle of its first firing in a static schedule). Schedules are per cluster (VBs talk
with arbitrary latency, seed L495): a value whose source is not an item of the consumer's cluster is
*external* to that cluster and gets one delay per (source, port, cluster) — ``source_delays``.
A forward data link from bin p (or an external source) into bin q ≠ p needs t_q ≥ t_p + L (an
order-only link needs t_q ≥ t_p). The value
waits ``skew = t_q − t_p − L`` cycles in q's input buffer of depth b_d; when skew > b_d the link needs
``ceil((skew − b_d) / (b_d + L))`` retiming bins, each adding one buffer and one hop (seed L641–650:
"Retiming can introduce new VBs"; the per-link count is our reading of Table 4.2's retiming term).

Objective (scalar, minimised, shared by formulation, baselines and checker)::

    weights.bins · Σ_used-bins cost(type) + weights.retiming · Σ retiming bins
      + weights.traffic · Σ_groups traffic · |consumer bins other than the producer's|
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from solvermap.errors import InputError

REDUCTIONS = ("sum", "max")

GroupKey = tuple[str, str]  # (source, source port): one produced value
SourceKey = tuple[str, str, str]  # (source, source port, consumer cluster): an external value's delay slot


@dataclass(frozen=True)
class Item:
    name: str
    demand: Mapping[str, float] = field(default_factory=dict)
    cluster: str = ""


@dataclass(frozen=True)
class BinType:
    name: str
    capacity: Mapping[str, float] = field(default_factory=dict)
    reduction: Mapping[str, str] = field(default_factory=dict)  # resource -> "sum" (default) | "max"
    inputs: Mapping[str, int] = field(default_factory=dict)  # link kind -> max distinct incoming values
    outputs: Mapping[str, int] = field(default_factory=dict)  # link kind -> max distinct outgoing values
    count: int | None = None
    cost: float = 1.0

    def reduce_of(self, resource: str) -> str:
        return self.reduction.get(resource, "sum")

    def cap(self, resource: str) -> float:
        return float(self.capacity.get(resource, 0.0))


@dataclass(frozen=True)
class Link:
    src: str
    dst: str
    src_port: str = "out"
    kind: str = "vector"
    forward: bool = True
    order_only: bool = False
    traffic: float = 1.0

    @property
    def group(self) -> GroupKey:
        return (self.src, self.src_port)


@dataclass(frozen=True)
class Retiming:
    hop_latency: int  # L: cycles from a bin's firing to its consumer's input (pipeline + network)
    buffer_depth: int  # b_d: input buffer depth of a bin
    # delays of external values fixed from outside, ((source, port, cluster), delay) pairs: a part of a
    # larger problem whose earlier parts are already scheduled (see formulations.partition._solve_chunked)
    fixed_sources: tuple[tuple[SourceKey, int], ...] = ()
    # readers outside the problem at fixed delays, (((item, port), delay) pairs: the value of ``item`` is
    # read by a later part of the larger problem at ``delay`` (same clock as ``fixed_sources``), so the
    # item runs at most ``delay`` − L and pays the retiming of that link
    fixed_sinks: tuple[tuple[tuple[str, str], int], ...] = ()

    def required(self, skew: int) -> int:
        """Retiming bins needed for a link whose value waits ``skew`` cycles."""
        if skew <= self.buffer_depth:
            return 0
        return math.ceil((skew - self.buffer_depth) / (self.buffer_depth + self.hop_latency))


@dataclass(frozen=True)
class Weights:
    bins: float = 1.0
    retiming: float = 1.0
    traffic: float = 0.0


@dataclass(frozen=True)
class Group:
    """A broadcast group: one produced value and the links that read it."""

    key: GroupKey
    kind: str
    source_is_item: bool
    consumers: tuple[str, ...]  # consumer items (deduplicated, in link order)
    external_consumer: bool  # some consumer is not an item
    forward_consumers: tuple[str, ...]  # consumer items reached by a forward data link
    traffic: float


@dataclass(frozen=True)
class PartitionProblem:
    items: tuple[Item, ...]
    bin_types: tuple[BinType, ...]
    links: tuple[Link, ...] = ()
    feasible: frozenset[tuple[str, str]] | None = None  # allowed (item, bin type); None = all
    acyclic: bool = False
    retiming: Retiming | None = None
    weights: Weights = Weights()
    name: str = "partition"

    def __post_init__(self) -> None:
        self.validate()

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        where = self.name
        names = [i.name for i in self.items]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise InputError(where, f"item '{dup}'", "duplicate item name")
        types = [t.name for t in self.bin_types]
        if not types:
            raise InputError(where, "bin_types", "at least one bin type is needed")
        if len(set(types)) != len(types):
            raise InputError(where, "bin_types", "duplicate bin type name")
        for t in self.bin_types:
            for res, how in t.reduction.items():
                if how not in REDUCTIONS:
                    raise InputError(where, f"bin type '{t.name}'.reduction.{res}", f"unknown reduction {how!r}")
            if t.count is not None and t.count < 0:
                raise InputError(where, f"bin type '{t.name}'.count", "negative count")
            if t.cost < 0:
                raise InputError(where, f"bin type '{t.name}'.cost", "negative cost")
        item_set = set(names)
        kinds: dict[GroupKey, str] = {}
        for link in self.links:
            if link.src not in item_set and link.dst not in item_set:
                raise InputError(where, f"link '{link.src}'->'{link.dst}'", "neither end is an item")
            if link.src == link.dst:
                raise InputError(where, f"link '{link.src}'->'{link.dst}'", "self link")
            if not link.order_only:
                seen = kinds.setdefault(link.group, link.kind)
                if seen != link.kind:
                    raise InputError(where, f"group '{link.src}.{link.src_port}'",
                                     f"one value carried as both {seen} and {link.kind}")
        if self.feasible is not None:
            for item, kind in self.feasible:
                if item not in item_set or kind not in types:
                    raise InputError(where, "feasible", f"unknown pair ({item}, {kind})")
        if self.retiming is not None and not self.acyclic:
            raise InputError(where, "retiming", "retiming needs acyclic=True (delays order the bins)")
        if self.retiming is not None and (self.retiming.hop_latency < 1 or self.retiming.buffer_depth < 0):
            raise InputError(where, "retiming", "hop_latency must be >= 1 and buffer_depth >= 0")

    # ------------------------------------------------------------------ derived structure
    @property
    def item_names(self) -> list[str]:
        return [i.name for i in self.items]

    def item(self, name: str) -> Item:
        return self._item_map()[name]

    def _item_map(self) -> dict[str, Item]:
        cache = self.__dict__.get("_items_by_name")
        if cache is None:
            cache = {i.name: i for i in self.items}
            object.__setattr__(self, "_items_by_name", cache)
        return cache

    def bin_type(self, name: str) -> BinType:
        for t in self.bin_types:
            if t.name == name:
                return t
        raise KeyError(name)

    def is_item(self, name: str) -> bool:
        return name in self._item_map()

    def groups(self) -> list[Group]:
        """Broadcast groups of the data links, in first-link order."""
        cache = self.__dict__.get("_groups")
        if cache is not None:
            return cache
        order: list[GroupKey] = []
        members: dict[GroupKey, list[Link]] = {}
        for link in self.links:
            if link.order_only:
                continue
            if link.group not in members:
                order.append(link.group)
                members[link.group] = []
            members[link.group].append(link)
        items = self._item_map()
        out = []
        for key in order:
            links = members[key]
            consumers = list(dict.fromkeys(l.dst for l in links if l.dst in items))
            forward = list(dict.fromkeys(l.dst for l in links if l.dst in items and l.forward))
            out.append(Group(key, links[0].kind, key[0] in items, tuple(consumers),
                             any(l.dst not in items for l in links), tuple(forward),
                             max(l.traffic for l in links)))
        object.__setattr__(self, "_groups", out)
        return out

    def crossing(self, members: Collection[str]) -> tuple[Counter[str], Counter[str]]:
        """Per link kind, the distinct values entering and leaving a bin that holds ``members`` (a broadcast
        counts once; a value leaves when some consumer is outside the bin or is not an item)."""
        touches = self.__dict__.get("_touches")
        if touches is None:  # item -> the groups it reads or writes
            touches = {}
            for k, g in enumerate(self.groups()):
                for c in g.consumers:
                    touches.setdefault(c, []).append(k)
                if g.source_is_item:
                    touches.setdefault(g.key[0], []).append(k)
            object.__setattr__(self, "_touches", touches)
        groups = self.groups()
        ins: Counter[str] = Counter()
        outs: Counter[str] = Counter()
        for k in {k for n in members for k in touches.get(n, ())}:
            g = groups[k]
            inside = g.source_is_item and g.key[0] in members
            if not inside and any(c in members for c in g.consumers):
                ins[g.kind] += 1
            if inside and (g.external_consumer or any(c not in members for c in g.consumers)):
                outs[g.kind] += 1
        return ins, outs

    def external_source(self, group: Group, reader: str) -> SourceKey | None:
        """The delay slot of ``group``'s value as item ``reader`` reads it: None when the source is an item
        of the reader's cluster (the value has that item's delay), else (source, port, reader's cluster),
        an external value scheduled on that cluster's clock."""
        items = self._item_map()
        cluster = items[reader].cluster
        if group.source_is_item and items[group.key[0]].cluster == cluster:
            return None
        return (group.key[0], group.key[1], cluster)

    def external_sources(self) -> list[SourceKey]:
        """Every external value read by a forward link, sorted (one delay each)."""
        return sorted({k for g in self.groups() for d in g.forward_consumers
                       if (k := self.external_source(g, d)) is not None})

    def order_links(self) -> list[tuple[str, str]]:
        """Item→item links that constrain acyclicity (forward, both ends items), deduplicated."""
        items = self._item_map()
        return list(dict.fromkeys((l.src, l.dst) for l in self.links
                                  if l.forward and l.src in items and l.dst in items))

    def feasible_types(self, item: str) -> list[BinType]:
        """Bin types that can hold ``item``: allowed pair, every demand fits, unavoidable arity fits."""
        return [t for t in self.bin_types if not self.intrinsic_violations(item, t)]

    def intrinsic_violations(self, item: str, bin_type: BinType) -> list[str]:
        """Why ``item`` fits no bin of ``bin_type`` whatever shares it (empty when it may fit)."""
        reasons = []
        if self.feasible is not None and (item, bin_type.name) not in self.feasible:
            reasons.append(f"is not allowed on {bin_type.name}")
        for res, amount in self.item(item).demand.items():
            if amount > bin_type.cap(res) + 1e-9:
                reasons.append(f"needs {amount:g} {res}, a {bin_type.name} has {bin_type.cap(res):g}")
        ins, outs = self.unavoidable_arity(item)
        for kind, n in ins.items():
            limit = bin_type.inputs.get(kind)
            if limit is not None and n > limit:
                reasons.append(f"needs {n} {kind} inputs, a {bin_type.name} has {limit}")
        for kind, n in outs.items():
            limit = bin_type.outputs.get(kind)
            if limit is not None and n > limit:
                reasons.append(f"needs {n} {kind} outputs, a {bin_type.name} has {limit}")
        return reasons

    def unavoidable_arity(self, item: str) -> tuple[dict[str, int], dict[str, int]]:
        """Input / output values per kind that ``item``'s bin carries whatever shares it: values from
        external sources it reads, and values it sends to external consumers (co-locating producers
        or consumers can remove any other link)."""
        table = self.__dict__.get("_unavoidable")
        if table is None:  # one pass over the groups for every item
            table = {}
            for g in self.groups():
                if not g.source_is_item:
                    for c in g.consumers:
                        ins = table.setdefault(c, ({}, {}))[0]
                        ins[g.kind] = ins.get(g.kind, 0) + 1
                if g.source_is_item and g.external_consumer:
                    outs = table.setdefault(g.key[0], ({}, {}))[1]
                    outs[g.kind] = outs.get(g.kind, 0) + 1
            object.__setattr__(self, "_unavoidable", table)
        ins, outs = table.get(item, ({}, {}))
        return dict(ins), dict(outs)

    def topological_items(self) -> list[str]:
        """Items in a deterministic topological order of the order links (Kahn, smallest position first)."""
        position = {n: k for k, n in enumerate(self.item_names)}
        succ: dict[str, list[str]] = {n: [] for n in position}
        indeg = dict.fromkeys(position, 0)
        for s, d in self.order_links():
            succ[s].append(d)
            indeg[d] += 1
        import heapq

        ready = [(position[n], n) for n, deg in indeg.items() if deg == 0]
        heapq.heapify(ready)
        out = []
        while ready:
            _, n = heapq.heappop(ready)
            out.append(n)
            for d in succ[n]:
                indeg[d] -= 1
                if indeg[d] == 0:
                    heapq.heappush(ready, (position[d], d))
        if len(out) != len(position):
            stuck = sorted(set(position) - set(out), key=position.get)[0]
            raise InputError(self.name, f"item '{stuck}'", "forward links form a cycle; mark the back edge forward=False")
        return out

    def subproblem(self, names: Iterable[str], name: str | None = None) -> PartitionProblem:
        """The problem restricted to ``names``; links to other items become external."""
        keep = set(names)
        items = tuple(i for i in self.items if i.name in keep)
        links = tuple(l for l in self.links if l.src in keep or l.dst in keep)
        feasible = None if self.feasible is None else frozenset(p for p in self.feasible if p[0] in keep)
        return PartitionProblem(items, self.bin_types, links, feasible, self.acyclic, self.retiming, self.weights,
                                name or self.name)

    def clusters(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for i in self.items:
            out.setdefault(i.cluster, []).append(i.name)
        return out


@dataclass(frozen=True)
class PartitionDecision:
    """Bins numbered 0..k−1; ``delays``/``source_delays``/``retiming`` only for retiming problems.

    ``source_delays`` maps (source, source port, consumer cluster) of an external value to its delay;
    ``retiming`` maps (source, source port, consumer bin) to the retiming bins inserted on that link.
    """

    assignment: Mapping[str, int]
    bin_types: Mapping[int, str]
    delays: Mapping[int, int] = field(default_factory=dict)
    source_delays: Mapping[SourceKey, int] = field(default_factory=dict)
    retiming: Mapping[tuple[str, str, int], int] = field(default_factory=dict)

    @property
    def bins(self) -> list[int]:
        return sorted(set(self.assignment.values()))

    def members(self) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for item, b in self.assignment.items():
            out.setdefault(b, []).append(item)
        return out

    @property
    def retiming_bins(self) -> int:
        return int(sum(self.retiming.values()))

    def to_json(self) -> dict[str, Any]:
        return {
            "assignment": dict(self.assignment),
            "bin_types": {str(b): t for b, t in self.bin_types.items()},
            "delays": {str(b): t for b, t in self.delays.items()},
            "source_delays": [{"source": s, "port": p, "cluster": c, "delay": t}
                              for (s, p, c), t in self.source_delays.items()],
            "retiming": [{"source": s, "port": p, "bin": b, "bins": n} for (s, p, b), n in self.retiming.items()],
        }


# ---------------------------------------------------------------------- scoring


def bins_cost(problem: PartitionProblem, decision: PartitionDecision) -> float:
    used = set(decision.assignment.values())
    return float(sum(problem.bin_type(decision.bin_types[b]).cost for b in used))


def cut_traffic(problem: PartitionProblem, decision: PartitionDecision) -> float:
    total = 0.0
    for g in problem.groups():
        home = decision.assignment.get(g.key[0]) if g.source_is_item else None
        bins = {decision.assignment[c] for c in g.consumers} - {home}
        total += g.traffic * len(bins)
    return total


def objective(problem: PartitionProblem, decision: PartitionDecision) -> float:
    """The scalar every solver, baseline and study compares (see module docstring)."""
    w = problem.weights
    value = w.bins * bins_cost(problem, decision)
    if w.retiming:
        value += w.retiming * decision.retiming_bins
    if w.traffic:
        value += w.traffic * cut_traffic(problem, decision)
    return value


# ---------------------------------------------------------------------- schedules for retiming problems


def cross_arcs(problem: PartitionProblem, assignment: Mapping[str, int]) -> list[tuple[Any, int, GroupKey]]:
    """Forward data arcs into bins: (producer bin, or ('ext', source key) when the value is external to
    the consumer's cluster, consumer bin, group), deduplicated. Same-bin arcs are left out."""
    arcs = []
    for g in problem.groups():
        for c in g.forward_consumers:
            q = assignment[c]
            key = problem.external_source(g, c)
            if key is None:
                src_bin: Any = assignment[g.key[0]]
                if src_bin == q:
                    continue
            else:
                src_bin = ("ext", key)
            arcs.append((src_bin, q, g.key))
    return list(dict.fromkeys(arcs))


def schedule(problem: PartitionProblem, assignment: Mapping[str, int]) -> tuple[dict[int, int], dict[SourceKey, int]]:
    """A retiming-aware static schedule of the bins (delays) for a given assignment.

    The better (fewer retiming bins) of ASAP and ALAP; external sources are always scheduled as late as
    their first consumer allows. Raises ValueError when the quotient graph has a cycle, or when fixed
    delays (``Retiming.fixed_sources`` / ``fixed_sinks``) leave no schedule.
    """
    assert problem.retiming is not None
    lat = problem.retiming.hop_latency
    arcs = cross_arcs(problem, assignment)
    nodes: list[Any] = sorted(set(assignment.values()))
    nodes += list(dict.fromkeys(a[0] for a in arcs if isinstance(a[0], tuple)))
    succ: dict[Any, dict[Any, int]] = {n: {} for n in nodes}  # successor -> minimum delay difference
    for p, q, _ in arcs:
        succ[p][q] = lat
    clusters = {i.name: i.cluster for i in problem.items}
    for s, d in problem.order_links():  # order-only precedence: no value, no latency
        p, q = assignment[s], assignment[d]
        if p != q and clusters[s] == clusters[d]:
            succ[p].setdefault(q, 0)
    fixed = {("ext", key): t for key, t in problem.retiming.fixed_sources}
    for i, ((src, _), t) in enumerate(problem.retiming.fixed_sinks):
        if src in assignment:
            nodes.append(("sink", i))
            succ[("sink", i)] = {}
            succ[assignment[src]][("sink", i)] = lat
            fixed["sink", i] = t
    order = _topo(nodes, {n: list(v) for n, v in succ.items()})
    asap = {n: fixed.get(n, 0) for n in nodes}
    for n in order:
        for q, gap in succ[n].items():
            if q not in fixed:
                asap[q] = max(asap[q], asap[n] + gap)
    alap = dict(asap)
    for n in reversed(order):
        if succ[n] and n not in fixed:
            alap[n] = min(alap[q] - gap for q, gap in succ[n].items())
    best = None
    for times in (asap, alap):
        if fixed and any(times[q] < times[p] + gap for p in nodes for q, gap in succ[p].items()):
            continue  # fixed delays (sources, readers outside) this schedule cannot meet
        times = dict(times)
        for n in nodes:  # external sources always as late as their first consumer allows
            if isinstance(n, tuple) and succ[n] and n not in fixed:
                times[n] = min(times[q] - gap for q, gap in succ[n].items())
        # from 0, unless some delays are fixed (then on their clock)
        shift = 0 if fixed else -min(times.values(), default=0)
        delays = {b: times[b] + shift for b in nodes if not isinstance(b, tuple)}
        sources = {n[1]: times[n] + shift for n in nodes if isinstance(n, tuple) and n[0] == "ext"}
        cost = sum(required_retiming(problem, assignment, delays, sources).values())
        if best is None or cost < best[0]:
            best = (cost, delays, sources)
    if best is None:  # ASAP is the earliest schedule: when it misses a reader outside, every schedule does
        raise ValueError("no schedule of this assignment meets the fixed delays")
    return best[1], best[2]


def required_retiming(problem: PartitionProblem, assignment: Mapping[str, int], delays: Mapping[int, int],
                      source_delays: Mapping[SourceKey, int]) -> dict[tuple[str, str, int], int]:
    """Retiming bins each cross link needs under ``delays`` (links that need none are omitted)."""
    assert problem.retiming is not None
    lat = problem.retiming.hop_latency
    out: dict[tuple[str, str, int], int] = {}
    for p, q, key in cross_arcs(problem, assignment):
        start = source_delays[p[1]] if isinstance(p, tuple) else delays[p]
        need = problem.retiming.required(delays[q] - start - lat)
        if need:
            slot = (key[0], key[1], q)
            out[slot] = max(out.get(slot, 0), need)
    for i, ((src, port), t) in enumerate(problem.retiming.fixed_sinks):  # readers outside: slot −(i + 1)
        if src in assignment and (need := problem.retiming.required(t - delays[assignment[src]] - lat)):
            out[src, port, -(i + 1)] = need
    return out


def complete(problem: PartitionProblem, assignment: Mapping[str, int], bin_types: Mapping[int, str], *,
             delays: Mapping[int, int] | None = None,
             source_delays: Mapping[SourceKey, int] | None = None) -> PartitionDecision:
    """A decision from an assignment: bins renumbered 0..k−1 in first-use order, schedule and retiming added.
    The schedule is :func:`schedule`'s unless ``delays`` (per bin of ``assignment``) and ``source_delays``
    give one; the retiming is what that schedule needs."""
    order = list(dict.fromkeys(assignment[n] for n in problem.item_names if n in assignment))
    renumber = {b: k for k, b in enumerate(order)}
    assign = {n: renumber[b] for n, b in assignment.items()}
    types = {renumber[b]: bin_types[b] for b in order}
    if problem.retiming is None:
        return PartitionDecision(assign, types)
    if delays is None:
        delays, sources = schedule(problem, assign)
    else:
        delays, sources = {renumber[b]: t for b, t in delays.items() if b in renumber}, dict(source_delays or {})
    return PartitionDecision(assign, types, delays, sources, required_retiming(problem, assign, delays, sources))


def _topo(nodes: list[Any], succ: Mapping[Any, list[Any]]) -> list[Any]:
    indeg = dict.fromkeys(nodes, 0)
    for n in nodes:
        for q in succ[n]:
            indeg[q] += 1
    ready = [n for n in nodes if indeg[n] == 0]
    out = []
    while ready:
        n = ready.pop(0)
        out.append(n)
        for q in succ[n]:
            indeg[q] -= 1
            if indeg[q] == 0:
                ready.append(q)
    if len(out) != len(nodes):
        raise ValueError("the quotient graph has a cycle")
    return out
