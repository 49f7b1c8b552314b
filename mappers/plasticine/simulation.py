"""From a VB graph (and a merge) to the dataflow simulator, and the analytical prediction beside it.

Units are VBs; a VB's pipeline latency is the stage count of the PB it runs on (PCU stages, PMU/DAG
address stages + one SRAM access); each channel has the consumer's input-buffer depth (b_d, Table 4.1).
VBs merged onto one PB talk in one cycle (L514); other links take the network delay.

The prediction is the roofline-style model of Fig 2.3 (L153–158): a pipelined dataflow graph at full
throughput needs ``max(busiest unit's firings, DRAM bytes / DRAM bytes per cycle, recurrences)`` cycles
plus the fill latency of its longest path (hops × (pipeline + link)); a recurrence is a loop closed by a
loop-carried token: its tokens × the loop's latency / its initial tokens.
"""

from __future__ import annotations

import math
from typing import Any

import networkx as nx

from solvermap.formulations.problems.partition import PartitionDecision
from solvermap.hardware.plasticine import PlasticineSpec
from solvermap.hardware.plasticine.dataflow_sim import Channel, SimGraph, SimResult, Unit, simulate
from solvermap.mappers.plasticine.lowering import VBGraph


def _latency(spec: PlasticineSpec, kind: str, pb_type: str) -> int:
    if kind == "memory":
        return spec.pmu.stages + 1
    if kind == "dram":
        return spec.dag.stages
    if kind == "host":
        return 0
    return {"pcu": spec.pcu.stages, "pmu": spec.pmu.stages, "dag": spec.dag.stages}.get(pb_type, spec.pcu.stages)


def pb_of(vbg: VBGraph, merge: PartitionDecision | None) -> dict[str, tuple[str, str]]:
    """VB → (PB id, PB type); without a merge every VB is its own PB of its natural type."""
    natural = {"compute": "pcu", "retime": "pcu", "memory": "pmu", "dram": "dag", "host": "host"}
    out = {}
    for name, vb in vbg.vbs.items():
        if merge is not None and name in merge.assignment:
            b = merge.assignment[name]
            out[name] = (f"pb{b}", merge.bin_types[b])
        else:
            out[name] = (name, natural[vb.kind])
    return out


def sim_graph(vbg: VBGraph, spec: PlasticineSpec, merge: PartitionDecision | None = None) -> SimGraph:
    """Units: one per VB, except memories, which get one unit per access context (a PMU's read and
    write contexts are triggered independently, L481–483) on the memory's PB."""
    pbs = pb_of(vbg, merge)
    units = []
    contexts: dict[str, dict[str, str]] = {}
    for name, vb in vbg.vbs.items():
        pb, kind = pbs[name]
        if vb.kind == "memory":
            contexts[name] = {}
            for e in vbg.edges:
                for vb_name, node in ((e.src, e.src_node), (e.dst, e.dst_node)):
                    if vb_name == name and node and node not in contexts[name]:
                        contexts[name][node] = f"{name}|{node}"
            for node, unit in contexts[name].items():
                units.append(Unit(unit, max(1, vb.firings_by_node.get(node, vb.firings)), _latency(spec, vb.kind, kind),
                                  "memory", pb))
            continue
        bytes_per = 64
        if vb.kind == "dram":
            bytes_per = 64 if any(e.kind == "vector" for e in vbg.edges if name in (e.src, e.dst)) else 4
        units.append(Unit(name, max(1, vb.firings), _latency(spec, vb.kind, kind), vb.kind, pb, bytes_per))

    def unit(vb_name: str, node: str) -> str:
        return contexts[vb_name][node] if vb_name in contexts else vb_name

    channels = tuple(Channel(unit(e.src, e.src_node), unit(e.dst, e.dst_node), spec.pcu.buffer_depth, e.src_every,
                             e.dst_every, e.init_tokens, e.kind, e.value) for e in vbg.edges)
    return SimGraph(tuple(units), channels, spec.dram.bytes_per_cycle(spec.clock_ghz), spec.dram.latency_cycles)


def run(vbg: VBGraph, spec: PlasticineSpec, merge: PartitionDecision | None = None, *, window: int = 2048) -> SimResult:
    return simulate(sim_graph(vbg, spec, merge), spec.network.link_cycles or 1, window=window)


def predicted_cycles(vbg: VBGraph, spec: PlasticineSpec) -> float:
    """Roofline bound (busiest unit, DRAM bytes), the recurrence bound of loop-carried tokens
    (tokens × loop latency / initial tokens), plus the fill latency of the longest path."""
    busiest = max((vb.firings for vb in vbg.vbs.values()), default=0)
    dram_bytes = 0.0
    for name, vb in vbg.vbs.items():
        if vb.kind == "dram":
            vector = any(e.kind == "vector" for e in vbg.edges if name in (e.src, e.dst))
            dram_bytes += vb.firings * (64 if vector else 4)
    bound = max(busiest, dram_bytes / spec.dram.bytes_per_cycle(spec.clock_ghz))
    sim = sim_graph(vbg, spec)
    latency = {u.name: u.latency + spec.network.link_cycles for u in sim.units}
    g = nx.DiGraph()
    g.add_nodes_from(latency)
    for c in sim.channels:
        if c.init_tokens == 0 and c.src != c.dst:
            g.add_edge(c.src, c.dst)
    if nx.is_directed_acyclic_graph(g):
        for c in sim.channels:  # recurrences closed by loop-carried tokens
            if c.init_tokens == 0 or c.src == c.dst or not nx.has_path(g, c.dst, c.src):
                continue
            path = nx.dag_longest_path(g.subgraph(nx.descendants(g, c.dst) & (nx.ancestors(g, c.src) | {c.src}) | {c.dst}),
                                       weight=None)
            loop = sum(latency[u] for u in path)
            firings = next(u.firings for u in sim.units if u.name == c.dst)
            tokens = math.ceil(firings / max(1, c.dst_every))
            bound = max(bound, tokens * loop / c.init_tokens)
        depth = nx.dag_longest_path_length(g)
    else:
        depth = nx.dag_longest_path_length(nx.condensation(g))
    fill = depth * (spec.pcu.stages + spec.network.link_cycles) + spec.dram.latency_cycles
    return float(bound + fill)


def validation(vbg: VBGraph, spec: PlasticineSpec, merge: PartitionDecision | None = None) -> dict[str, Any]:
    """Simulated vs predicted cycles and throughput of a (partitioned, maybe merged) VB graph."""
    result = run(vbg, spec, merge)
    predicted = predicted_cycles(vbg, spec)
    simulated = result.cycles
    out: dict[str, Any] = {
        "cycles": simulated,
        "throughput": result.throughput,
        "deadlock": result.deadlock,
        "predicted_cycles": predicted,
        "simulated_cycles": simulated,
        "cycles_rel_diff": (simulated - predicted) / predicted if predicted else None,
        "latency_s": simulated / (spec.clock_ghz * 1e9),
        "sim_window_cycles": result.window_cycles,
        "sim_scale": result.scale,
        "vbs": len(vbg.vbs),
        "retiming_vbs": vbg.retiming_vbs,
    }
    if result.deadlock:
        out["blocked"] = result.blocked[:5]
    return out
