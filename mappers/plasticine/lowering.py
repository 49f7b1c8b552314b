"""Lowering between the VBDFG and the shared partition model, and the VB graph after partitioning.

* :func:`partition_problem` — compute partitioning (seed 004 §4.3.2, L633–652) as a
  :class:`~solvermap.formulations.problems.partition.PartitionProblem`: items are the operations, one
  cluster per actor (SARA partitions each VB on its own, L635); a PCU is the bin (stages, vector /
  scalar / control ports, L637); links are the VBDFG edges (a value = its broadcast group); edges to
  other actors, memories and streams are external; loop-carried edges count for arity only; acyclic;
  retiming with L = PCU stages + one link and b_d = the PCU input buffer depth (Table 4.1).
  When a path leaves an actor and comes back to it (through a memory or another actor), an
  order-only link keeps the per-actor solves exact (no cycle through the outside).
* :func:`vb_graph` — the VBs after partitioning: one per partition, one per memory (storage and all its
  access contexts, L553), one per DRAM stream, retiming VBs inserted on links that need them.
* :func:`merge_problem` — global merging (Tables 4.3/4.4, L670): VBs into PCU / PMU / DAG with a
  feasibility relation (memories only on PMUs, streams only on DAGs, integer scalar VBs on any PB,
  L559), sum resources (stages, SRAM bytes, banks, streams), the max resource ``lanes``, ports, counts,
  acyclic. Links into a memory are excluded from acyclicity because its read and write contexts are
  triggered independently (L481–483).
* :func:`merge_relaxation` — the same merge before partitioning, relaxed to one item per operation, memory
  and stream and no links: every partition-and-merge packs those items into the PBs within their counts,
  so its type-exclusive counts (:func:`~solvermap.formulations.partition.bounds.count_shortfall`) refuse a
  VBDFG too large for the array before any partition or merge model is built.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from solvermap.formulations.problems.partition import (
    BinType,
    Item,
    Link,
    PartitionDecision,
    PartitionProblem,
    Retiming,
    Weights,
)
from solvermap.hardware.plasticine import PlasticineSpec
from solvermap.ir.graph import DataflowGraph, NodeKind
from solvermap.ir.workloads.plasticine_vbdfg import actor_of, firings_of


def op_stages(spec: PlasticineSpec, op: str) -> int:
    """Pipeline stages one operation occupies (a cross-lane reduction takes ``reduce_stages``, every other
    operation what the target's op table says: one stage unless a preset says otherwise)."""
    return spec.op_stages(op)


def pcu_type(spec: PlasticineSpec, *, count: int | None = None) -> BinType:
    return BinType("pcu", {"stages": spec.pcu.stages, "lanes": spec.pcu.lanes}, {"lanes": "max"},
                   inputs=spec.pcu.inputs.by_kind(), outputs=spec.pcu.outputs.by_kind(), count=count,
                   cost=1.0)


# ---------------------------------------------------------------------- compute partitioning


def partition_problem(graph: DataflowGraph, spec: PlasticineSpec, *, retiming: bool = True) -> PartitionProblem:
    ops = [n for n in graph.nodes(NodeKind.OP)]
    items = tuple(Item(n.name, {"stages": op_stages(spec, n.op)}, cluster=n.attrs["actor"]) for n in ops)
    is_op = {n.name for n in ops}
    links = []
    for e in graph.edges():
        if e.src == e.dst:
            continue  # accumulator register inside the pipeline
        if e.src not in is_op and e.dst not in is_op:
            continue
        links.append(Link(e.src, e.dst, e.src_port, str(e.kind), forward=not e.loop_carried))
    links += _order_links(graph, is_op)
    return PartitionProblem(items, (pcu_type(spec),), tuple(links), acyclic=True,
                            retiming=Retiming(spec.hop_latency, spec.pcu.buffer_depth) if retiming else None,
                            weights=Weights(bins=1.0, retiming=1.0 if retiming else 0.0),
                            name=f"partition:{graph.name}")


def _order_links(graph: DataflowGraph, is_op: set[str]) -> list[Link]:
    """u → v (same actor) when a forward path from u leaves the actor and re-enters it at v."""
    forward = graph.forward_digraph()
    actor = {n: actor_of(graph, n) for n in graph.nx.nodes}
    out = []
    for u in sorted(is_op):
        home = actor[u]
        starts = [w for w in forward.successors(u) if actor[w] != home]
        seen = set(starts)
        queue = deque(starts)
        while queue:
            w = queue.popleft()
            for z in forward.successors(w):
                if z not in seen:
                    seen.add(z)
                    queue.append(z)
        for v in sorted(seen):
            if v != u and actor.get(v) == home and v in is_op:
                out.append(Link(u, v, "order", "order", order_only=True))
    return out


# ---------------------------------------------------------------------- the VB graph


@dataclass(frozen=True)
class VB:
    name: str
    kind: str  # compute | retime | memory | dram | host
    members: tuple[str, ...]
    demand: dict[str, float]
    firings: int
    integer: bool = False  # only integer scalar operations: fits PMU / DAG address pipelines
    firings_by_node: dict[str, int] = field(default_factory=dict)  # memory VBs: firings of each context


@dataclass(frozen=True)
class VBEdge:
    src: str
    dst: str
    value: str  # the broadcast group: "<node>:<port>"
    kind: str
    forward: bool = True
    init_tokens: int = 0
    src_every: int = 1
    dst_every: int = 1
    src_node: str = ""  # the IR node that produces the value (a memory context for memory VBs)
    dst_node: str = ""  # the IR node that receives it


@dataclass
class VBGraph:
    vbs: dict[str, VB]
    edges: list[VBEdge]
    retiming_vbs: int = 0
    notes: dict[str, Any] = field(default_factory=dict)

    def count(self, kind: str) -> int:
        return sum(1 for v in self.vbs.values() if v.kind == kind)


def vb_graph(graph: DataflowGraph, spec: PlasticineSpec, partition: PartitionDecision | None) -> VBGraph:
    """VBs after partitioning (``partition`` None: one VB per actor, the VBDFG as allocated)."""
    vb_of: dict[str, str] = {}
    members: dict[str, list[str]] = {}
    for n in graph.nodes():
        if n.kind == NodeKind.OP:
            base = n.attrs["actor"]
            name = f"{base}/p{partition.assignment[n.name]}" if partition is not None else base
        elif n.kind == NodeKind.MEMORY:
            name = n.attrs.get("memory", n.name)
        else:
            name = n.name
        vb_of[n.name] = name
        members.setdefault(name, []).append(n.name)
    vbs: dict[str, VB] = {}
    for name, nodes in members.items():
        first = graph.node(nodes[0])
        if first.kind == NodeKind.OP:
            ops = [graph.node(m) for m in nodes]
            demand = {"stages": float(sum(op_stages(spec, o.op) for o in ops)),
                      "lanes": float(max(o.attrs.get("lanes", 1) for o in ops))}
            integer = all(o.attrs.get("int") and o.attrs.get("lanes", 1) == 1 for o in ops)
            vbs[name] = VB(name, "compute", tuple(nodes), demand, firings_of(graph, nodes[0]), integer)
        elif first.kind == NodeKind.MEMORY:
            store = next((graph.node(m) for m in nodes if graph.node(m).op == "sram"), first)
            vbs[name] = VB(name, "memory", tuple(nodes), {"sram_bytes": store.resource("sram_bytes"),
                                                          "banks": store.resource("banks", 1)},
                           max(firings_of(graph, m) for m in nodes),
                           firings_by_node={m: firings_of(graph, m) for m in nodes})
        elif first.op == "host":
            vbs[name] = VB(name, "host", tuple(nodes), {}, 1)
        else:
            vbs[name] = VB(name, "dram", tuple(nodes), {"dram_streams": 1.0}, firings_of(graph, nodes[0]))
    edges: dict[tuple[str, str, str, str], VBEdge] = {}
    for e in graph.edges():
        s, d = vb_of[e.src], vb_of[e.dst]
        if s == d:
            continue
        value = f"{e.src}:{e.src_port}"
        context = e.dst if vbs[d].kind == "memory" else ""  # memory contexts fire independently
        key = (value, d, context, "lc" if e.loop_carried else "fw")
        if key not in edges:
            edges[key] = VBEdge(s, d, value, str(e.kind), not e.loop_carried, e.init_tokens,
                                int(e.attrs.get("src_every", 1)), int(e.attrs.get("dst_every", 1)), e.src, e.dst)
    out = VBGraph(vbs, list(edges.values()))
    if partition is not None and partition.retiming:
        _insert_retiming(out, graph, partition)
    return out


def _insert_retiming(vbg: VBGraph, graph: DataflowGraph, partition: PartitionDecision) -> None:
    """Retiming VBs on the links the partition says need them (a chain of r forwarding VBs)."""
    bins_vb: dict[int, str] = {}
    for op, b in partition.assignment.items():
        bins_vb[b] = f"{graph.node(op).attrs['actor']}/p{b}"
    for (src, port, b), count in sorted(partition.retiming.items()):
        if count <= 0:
            continue
        value = f"{src}:{port}"
        dst_vb = bins_vb[b]
        hit = [e for e in vbg.edges if e.value == value and e.dst == dst_vb and e.forward]
        if not hit:
            continue
        edge = hit[0]
        vbg.edges.remove(edge)
        prev = edge.src
        lanes = 16.0 if edge.kind == "vector" else 1.0
        for k in range(count):
            name = f"retime:{value}->{dst_vb}#{k}"
            vbg.vbs[name] = VB(name, "retime", (), {"stages": 1.0, "lanes": lanes},
                               vbg.vbs[dst_vb].firings, integer=edge.kind != "vector")
            vbg.edges.append(VBEdge(prev, name, value if k == 0 else f"{name}:out", edge.kind, True, 0,
                                    edge.src_every, 1, edge.src_node if k == 0 else prev, name))
            prev = name
        vbg.edges.append(VBEdge(prev, dst_vb, f"{prev}:out", edge.kind, True, 0, 1, edge.dst_every, prev,
                                edge.dst_node))
        vbg.retiming_vbs += count


# ---------------------------------------------------------------------- merging


def merge_types(spec: PlasticineSpec) -> tuple[BinType, BinType, BinType]:
    pcu = pcu_type(spec, count=spec.pcu.count)
    pmu = BinType("pmu", {"stages": spec.pmu.stages, "lanes": 1, "sram_bytes": spec.pmu.capacity_bytes,
                          "banks": spec.pmu.banks}, {"lanes": "max"},
                  inputs=spec.pmu.inputs.by_kind(), outputs=spec.pmu.outputs.by_kind(), count=spec.pmu.count, cost=1.0)
    dag = BinType("dag", {"stages": spec.dag.stages, "lanes": 1, "dram_streams": 1}, {"lanes": "max"},
                  inputs=spec.dag.inputs.by_kind(), outputs=spec.dag.outputs.by_kind(), count=spec.dag.count, cost=1.0)
    return pcu, pmu, dag


def merge_problem(vbg: VBGraph, spec: PlasticineSpec, name: str = "merge") -> PartitionProblem:
    items = []
    feasible = set()
    for vb in vbg.vbs.values():
        if vb.kind == "host":
            continue
        items.append(Item(vb.name, dict(vb.demand)))
        if vb.kind == "memory":
            feasible.add((vb.name, "pmu"))
        elif vb.kind == "dram":
            feasible.add((vb.name, "dag"))
        else:
            feasible.add((vb.name, "pcu"))
            if vb.integer:
                feasible.update({(vb.name, "pmu"), (vb.name, "dag")})
    memory = {vb.name for vb in vbg.vbs.values() if vb.kind == "memory"}
    links = []
    for e in vbg.edges:
        links.append(Link(e.src, e.dst, e.value, e.kind, forward=e.forward and e.dst not in memory))
    return PartitionProblem(tuple(items), merge_types(spec), tuple(links), frozenset(feasible), acyclic=True,
                            weights=Weights(bins=1.0, retiming=0.0), name=name)


def merge_relaxation(graph: DataflowGraph, spec: PlasticineSpec) -> PartitionProblem:
    """The merge of every partition of ``graph``, relaxed: an item per operation (its stages and lanes; a PCU
    only unless it is an integer scalar operation, as :func:`vb_graph` decides for a VB: a VB holding any
    other operation fits only a PCU), per memory (PMU only) and per DRAM stream (DAG only), no links. A
    merged mapping puts every operation, memory and stream on a PB of the types this allows within the
    capacities and counts (retiming VBs only add PCU stages), so a bound or refusal of this problem holds
    for the merge of any partition."""
    items, feasible = [], set()
    for n in graph.nodes(NodeKind.OP):
        name = f"op:{n.name}"
        items.append(Item(name, {"stages": float(op_stages(spec, n.op)), "lanes": float(n.attrs.get("lanes", 1))}))
        integer = n.attrs.get("int") and n.attrs.get("lanes", 1) == 1
        feasible.update({(name, "pcu"), (name, "pmu"), (name, "dag")} if integer else {(name, "pcu")})
    for vb in vb_graph(graph, spec, None).vbs.values():
        if vb.kind in ("memory", "dram"):
            name = f"{vb.kind}:{vb.name}"
            items.append(Item(name, dict(vb.demand)))
            feasible.add((name, "pmu" if vb.kind == "memory" else "dag"))
    return PartitionProblem(tuple(items), merge_types(spec), (), frozenset(feasible),
                            name=f"merge relaxation:{graph.name}")
