"""Independent checker of a fusion decision (seed 000 L468–470, L1131–1136).

Rules (stable names):
  partition            every op in exactly one group; no unknown op
  same-parent          a group's ops share their parent (L468 (2))
  same-dimensions      a group's ops share their replication grid (L468 (2))
  one-to-one           an edge inside a group is one-to-one (L468 (3))
  convexity            no path leaves a group and re-enters it (L468 (3): the fused node stays acyclic, L470)
  promise-pattern      a PROMISE layer is exactly one group holding all its ops (L1136)
  promise-eligibility  PROMISE only for layers that match the pattern with dot length ≥ 64 (L1133, L1248)
  gpu-capacity         a GPU group has at most max_group_ops ops (L466)
  device               every layer has a device in {gpu, promise}
"""

from __future__ import annotations

import networkx as nx

from solvermap.formulations.problems.fusion import GPU, PROMISE, FusionDecision, FusionProblem
from solvermap.results import CheckReport


def check(problem: FusionProblem, decision: FusionDecision) -> CheckReport:
    report = CheckReport()
    ops = {op.name: op for op in problem.ops}
    seen: dict[str, int] = {}
    for i, group in enumerate(decision.groups):
        for name in group:
            if name not in ops:
                report.add("partition", f"group {i} holds unknown op {name!r}")
            elif name in seen:
                report.add("partition", f"op {name!r} is in groups {seen[name]} and {i}")
            else:
                seen[name] = i
    for name in ops:
        if name not in seen:
            report.add("partition", f"op {name!r} is in no group")
    for layer in problem.parents:
        if decision.device.get(layer) not in (GPU, PROMISE):
            report.add("device", f"layer {layer!r} has device {decision.device.get(layer)!r}")
    graph = nx.DiGraph()
    graph.add_nodes_from(ops)
    graph.add_edges_from((e.src, e.dst) for e in problem.edges)
    for i, group in enumerate(decision.groups):
        members = [ops[n] for n in group if n in ops]
        if not members:
            continue
        parents = {op.parent for op in members}
        if len(parents) > 1:
            report.add("same-parent", f"group {i} {list(group)} spans parents {sorted(parents)}")
        if len({op.replication for op in members}) > 1:
            report.add("same-dimensions", f"group {i} {list(group)} mixes replication grids")
        inside = set(group)
        for e in problem.edges:
            if e.src in inside and e.dst in inside and e.pattern != "one_to_one":
                report.add("one-to-one", f"group {i} internalizes {e.pattern} edge {e.src}->{e.dst}")
        outside = graph.subgraph(n for n in ops if n not in inside)
        for u in inside:
            for v in graph.successors(u):
                if v in inside:
                    continue
                reach = nx.descendants(outside, v) | {v}
                back = [w for w in inside if any(graph.has_edge(r, w) for r in reach)]
                if back:
                    report.add("convexity", f"group {i}: path {u} -> {v} -> ... -> {back[0]} leaves and re-enters")
                    break
        device = decision.device.get(members[0].parent, GPU)
        if device == GPU and len(members) > problem.max_group_ops:
            report.add("gpu-capacity", f"GPU group {i} has {len(members)} ops > {problem.max_group_ops}")
    group_of = decision.group_of()
    for layer in problem.parents:
        if decision.device.get(layer) != PROMISE:
            continue
        if not problem.promise_eligible.get(layer, False):
            report.add("promise-eligibility", f"layer {layer!r} cannot run on PROMISE")
        names = [op.name for op in problem.members(layer)]
        groups = {group_of.get(n) for n in names}
        if len(groups) != 1 or len(decision.groups[next(iter(groups))] if None not in groups else ()) != len(names):
            report.add("promise-pattern", f"PROMISE layer {layer!r} is split over groups {sorted(map(str, groups))}")
    return report
