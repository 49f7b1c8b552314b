"""Independent checker for partitioning / merging / bin-packing decisions.

Re-derives every rule from the problem's raw items, bin types and links (it does not use the
formulation, nor the problem's derived helpers). Rule names (stable, asserted by mutation tests):

``assignment``     every item in exactly one bin; bins are non-negative integers; no unknown items
``bin-type``       every used bin has a known type, and the (item, type) pair is allowed
``capacity``       per bin: Σ demand ≤ capacity for sum resources, max demand ≤ capacity for max resources
``input-arity``    per bin and link kind: distinct values entering the bin ≤ the type's input limit
                   (a value read by several items of the bin counts once — a broadcast counts once)
``output-arity``   per bin and link kind: distinct values leaving the bin ≤ the type's output limit
``type-count``     bins of a type ≤ the type's available count
``cluster``        a bin holds items of one cluster only
``acyclic``        the quotient graph of forward links between bins has no cycle
``schedule``       (retiming) every used bin and every external value (per consumer cluster) has a
                   delay; a forward data link into another bin arrives no earlier than its producer's
                   delay + hop latency; an order-only link needs t_q ≥ t_p (schedules are per cluster)
``retiming``       (retiming) each cross link declares at least ⌈(skew − b_d)/(b_d + L)⌉ retiming bins
``fixed-delays``   (retiming, a part of a larger problem) the fixed source delays keep their differences
                   (one common offset); an item read outside at a fixed delay runs at least L before it,
                   and that link declares its retiming bins under slot −(k + 1) for the k-th reader
"""

from __future__ import annotations

import math

import networkx as nx

from solvermap.formulations.problems.partition import PartitionDecision, PartitionProblem
from solvermap.results import CheckReport


def check(problem: PartitionProblem, decision: PartitionDecision) -> CheckReport:
    report = CheckReport()
    items = {i.name: i for i in problem.items}
    types = {t.name: t for t in problem.bin_types}
    assign = dict(decision.assignment)

    # assignment --------------------------------------------------------------------------------
    for name in items:
        if name not in assign:
            report.add("assignment", f"item '{name}' is in no bin")
    for name, b in assign.items():
        if name not in items:
            report.add("assignment", f"unknown item '{name}'")
        if not isinstance(b, int) or b < 0:
            report.add("assignment", f"item '{name}' has bad bin {b!r}")
    assign = {n: b for n, b in assign.items() if n in items and isinstance(b, int) and b >= 0}
    contents: dict[int, list[str]] = {}
    for name, b in assign.items():
        contents.setdefault(b, []).append(name)

    # bin-type ----------------------------------------------------------------------------------
    for b, members in sorted(contents.items()):
        kind = decision.bin_types.get(b)
        if kind not in types:
            report.add("bin-type", f"bin {b} has unknown type {kind!r}")
            continue
        if problem.feasible is not None:
            for n in members:
                if (n, kind) not in problem.feasible:
                    report.add("bin-type", f"item '{n}' may not go on a {kind} (bin {b})")

    # capacity ----------------------------------------------------------------------------------
    for b, members in sorted(contents.items()):
        t = types.get(decision.bin_types.get(b, ""))
        if t is None:
            continue
        resources = sorted({r for n in members for r in items[n].demand})
        for r in resources:
            values = [items[n].demand.get(r, 0.0) for n in members]
            used = max(values) if t.reduction.get(r, "sum") == "max" else sum(values)
            cap = t.capacity.get(r, 0.0)
            if used > cap + 1e-9:
                report.add("capacity", f"bin {b} ({t.name}) uses {used:g} {r}, capacity {cap:g}")

    # arity (broadcast groups re-derived from the links) -----------------------------------------
    values: dict[tuple[str, str], dict] = {}
    for link in problem.links:
        if link.order_only:
            continue
        v = values.setdefault((link.src, link.src_port), {"kind": link.kind, "dst": []})
        v["dst"].append(link.dst)
    for b, members in sorted(contents.items()):
        t = types.get(decision.bin_types.get(b, ""))
        if t is None:
            continue
        inside = set(members)
        incoming: dict[str, int] = {}
        outgoing: dict[str, int] = {}
        for (src, _port), v in values.items():
            readers_here = any(d in inside for d in v["dst"])
            if readers_here and src not in inside:
                incoming[v["kind"]] = incoming.get(v["kind"], 0) + 1
            if src in inside and any(d not in inside for d in v["dst"]):
                outgoing[v["kind"]] = outgoing.get(v["kind"], 0) + 1
        for kind, n in sorted(incoming.items()):
            limit = t.inputs.get(kind)
            if limit is not None and n > limit:
                report.add("input-arity", f"bin {b} ({t.name}) reads {n} {kind} values, limit {limit}")
        for kind, n in sorted(outgoing.items()):
            limit = t.outputs.get(kind)
            if limit is not None and n > limit:
                report.add("output-arity", f"bin {b} ({t.name}) sends {n} {kind} values, limit {limit}")

    # type-count ----------------------------------------------------------------------------------
    per_type: dict[str, int] = {}
    for b in contents:
        kind = decision.bin_types.get(b)
        per_type[kind] = per_type.get(kind, 0) + 1
    for kind, n in sorted(per_type.items(), key=lambda kv: str(kv[0])):
        t = types.get(kind)
        if t is not None and t.count is not None and n > t.count:
            report.add("type-count", f"{n} bins of type {kind}, only {t.count} available")

    # cluster --------------------------------------------------------------------------------------
    for b, members in sorted(contents.items()):
        found = {items[n].cluster for n in members}
        if len(found) > 1:
            report.add("cluster", f"bin {b} mixes clusters {sorted(found)}")

    # acyclic ----------------------------------------------------------------------------------------
    if problem.acyclic:
        succ: dict[int, set[int]] = {b: set() for b in contents}
        for link in problem.links:
            if link.forward and link.src in assign and link.dst in assign:
                p, q = assign[link.src], assign[link.dst]
                if p != q:
                    succ[p].add(q)
        cycle = _find_cycle(succ)
        if cycle:
            report.add("acyclic", "bins form a cycle " + " -> ".join(map(str, cycle)))

    # schedule and retiming ---------------------------------------------------------------------------
    if problem.retiming is not None and problem.acyclic:
        _check_schedule(problem, decision, assign, contents, report)
    return report


def _check_schedule(problem, decision, assign, contents, report) -> None:
    """Schedules are per cluster: a value whose source is not an item of the consumer's cluster is
    external to it and starts at its (source, port, cluster) delay."""
    lat, depth = problem.retiming.hop_latency, problem.retiming.buffer_depth
    cluster = {i.name: i.cluster for i in problem.items}
    for b in sorted(contents):
        if b not in decision.delays:
            report.add("schedule", f"bin {b} has no delay")
    declared = dict(decision.retiming)
    needed: dict[tuple[str, str, int], int] = {}
    for link in problem.links:
        if not link.forward or link.dst not in assign:
            continue
        q = assign[link.dst]
        if q not in decision.delays:
            continue
        internal = link.src in assign and cluster[link.src] == cluster[link.dst]
        if internal:
            p = assign[link.src]
            if p == q or p not in decision.delays:
                continue
            start = decision.delays[p]
        else:
            if link.order_only:
                continue
            key = (link.src, link.src_port, cluster[link.dst])
            if key not in decision.source_delays:
                report.add("schedule", f"external value {link.src}.{link.src_port} has no delay in cluster '{key[2]}'")
                continue
            start = decision.source_delays[key]
        gap = 0 if link.order_only else lat
        if decision.delays[q] < start + gap:
            report.add("schedule", f"{link.src}->{link.dst}: bin {q} at {decision.delays[q]} before its input "
                                   f"is ready at {start} + {gap}")
            continue
        if link.order_only:
            continue
        skew = decision.delays[q] - start - lat
        need = 0 if skew <= depth else math.ceil((skew - depth) / (depth + lat))
        slot = (link.src, link.src_port, q)
        needed[slot] = max(needed.get(slot, 0), need)
    for slot, need in sorted(needed.items()):
        if declared.get(slot, 0) < need:
            report.add("retiming", f"value {slot[0]}.{slot[1]} into bin {slot[2]} waits beyond the buffer: needs "
                                   f"{need} retiming bins, declares {declared.get(slot, 0)}")
    _check_fixed(problem, decision, assign, declared, report)


def _check_fixed(problem, decision, assign, declared, report) -> None:
    """Fixed delays from a larger problem hold up to one common offset (a decision may shift its clock)."""
    retiming = problem.retiming
    lat, depth = retiming.hop_latency, retiming.buffer_depth
    offsets = {decision.source_delays[key] - t for key, t in retiming.fixed_sources if key in decision.source_delays}
    if len(offsets) > 1:
        report.add("fixed-delays", f"fixed source delays shifted unevenly (offsets {sorted(offsets)})")
        return
    offset = offsets.pop() if offsets else 0
    for k, ((src, port), t) in enumerate(retiming.fixed_sinks):
        if src not in assign or assign[src] not in decision.delays:
            continue
        start = decision.delays[assign[src]] - offset
        if start + lat > t:
            report.add("fixed-delays", f"{src}.{port} is read outside at {t} but ready only at {start} + {lat}")
            continue
        skew = t - start - lat
        need = 0 if skew <= depth else math.ceil((skew - depth) / (depth + lat))
        if declared.get((src, port, -(k + 1)), 0) < need:
            report.add("fixed-delays", f"{src}.{port} read outside at {t} waits beyond the buffer: needs {need} "
                                       f"retiming bins, declares {declared.get((src, port, -(k + 1)), 0)}")


def _find_cycle(succ: dict[int, set[int]]) -> list[int]:
    """A cycle of the bin graph as [b0, b1, ..., b0] (depth first from the smallest bin), or []."""
    graph = nx.DiGraph()
    graph.add_nodes_from(sorted(succ))
    graph.add_edges_from((p, q) for p in sorted(succ) for q in sorted(succ[p]))
    try:
        edges = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return []
    return [p for p, _ in edges] + [edges[-1][1]]
