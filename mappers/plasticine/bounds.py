"""Certified lower bounds of a Plasticine mapping's metrics before any decision is solved.

From the memory decomposition (a deterministic transform) and the VB graph as allocated (one VB per actor,
memory and stream), without partitioning, merging, placing or routing:

cycles      Let F be the most firings of any simulated unit. Partitioning splits an actor into VBs that fire
            as often as the actor; memories fire per access context; retiming VBs as their consumer; so F is
            the busiest unit's firing count in every mapping, and a unit fires at most once per cycle. Both
            simulators run a window in which the busiest unit fires w = min(F, window) times (f = w / F)
            and report ``fill + steady / f (+ drain)``, with ``steady ≥ w − 1`` cycles between its first and
            last firing. Let D be the DRAM bytes over the DRAM bytes per cycle (every stream moves
            ``firings × (64 or 4)`` bytes, a vector or a scalar stream, as ``simulation.sim_graph``).

            * Without a network model (``dataflow_sim``): ``max(F, D) · (1 − 1/window)``. The F term is
              proven (the reported cycles are at least ``(w − 1) / f``). The D term is exact for an
              unscaled run; in a window run the DRAM traffic during the busiest unit's fill is extrapolated
              once, not 1/f times, so it holds when that traffic is small against the rest — verified on
              every design of the 96-design method-comparison space (``studies/dse_methods``: ``bound_violations``
              0; ``tests/search/test_pruning.py``), not proven.
            * With a network (``noc_sim``, which paces every stream at its share of the bandwidth and does
              not scale the drain): ``max(F (1 − 1/w), (1 − 1/n) W / r + F − F/w − w)``, proven: the
              window lasts at least ``(1 − 1/n) W / r`` cycles (W the window's DRAM bytes, n a stream's
              window firings, the most of any stream) and the scaled-back steady part adds ``(w − 1)(1/f − 1)``. The plain D term
              does not hold there: the NoC co-simulation reports fewer cycles than D when DRAM traffic falls
              into its unscaled fill and drain (outer product on an 8x8 hybrid array, 2 channels: 106,012
              reported, D = 109,440).
pcus_used   ``⌈Σ stages of the non-integer operations / PCU stages⌉``: a VB holding a vector or float
            operation fits only a PCU (merge feasibility, L559), and a PCU holds at most ``stages`` stages.
pmus_used   ``max(⌈Σ SRAM bytes / PMU capacity⌉, ⌈Σ banks / PMU banks⌉)`` over the memories (PMU only).
dags_used   the number of DRAM streams (one per DAG, L489).
            (These three are the type-exclusive counts of :func:`.lowering.merge_relaxation`, the same code
            that refuses a too-large VBDFG before partitioning.)
pbs_used, area_mm2, power_w (PBs used, ``cost``), latency_s, energy_j (power × latency): from those; with
            a routed network the end-to-end values add the network's area and energy, never less.
network_area_mm2  exact: every switch and router of the mesh counts (``network_cost``, assumption NT9), so
            it depends on the target alone; ``area_mm2`` then adds it to the PBs' bound.

A PCU, PMU or DAG bound above the array's count proves that no merge exists (``infeasible``).
"""

from __future__ import annotations

import math

from solvermap.formulations.partition.bounds import exclusive_needs
from solvermap.hardware.plasticine import cost, network_cost
from solvermap.mappers.pipeline import Context, LowerBounds
from solvermap.mappers.plasticine import decomposition, lowering, network, simulation

WINDOW = 2048  # the dataflow simulator's window (simulation.run); the NoC's is decisions.vc.sim_window


def _window(ctx: Context) -> int:
    from solvermap.mappers.decisions import VC

    window = WINDOW
    if getattr(ctx.target.network, "type", None) is not None:
        window = min(window, ctx.options_for(VC).sim_window)
    return window


def _cycles(sim, spec, window: int, *, networked: bool) -> float:
    """The module docstring's cycle bound of the simulated units ``sim``."""
    firings = max((u.firings for u in sim.units), default=0)
    streams = [u for u in sim.units if u.kind == "dram"]
    rate = spec.dram.bytes_per_cycle(spec.clock_ghz)
    if not networked:
        dram = sum(u.firings * u.bytes_per_firing for u in streams)
        return max(firings, dram / rate) * (1.0 - 1.0 / window)
    w = min(firings, window)
    scale = w / firings if firings else 1.0
    counts = [max(1, math.ceil(u.firings * scale)) for u in streams]
    window_bytes = sum(n * u.bytes_per_firing for n, u in zip(counts, streams))
    dram = (1.0 - 1.0 / max(counts)) * window_bytes / rate if streams else 0.0
    if scale == 1.0:
        return max(float(firings), dram)
    return max(firings * (1.0 - 1.0 / w), dram + firings - firings / w - w)


def lower_bounds(ctx: Context) -> LowerBounds:
    """The module docstring's bounds for ``ctx.workload`` on ``ctx.target``."""
    spec = ctx.target
    graph, _ = decomposition.decompose(ctx.workload.ir, spec)
    sim = simulation.sim_graph(lowering.vb_graph(graph, spec, None), spec)
    cycles = _cycles(sim, spec, _window(ctx), networked=getattr(spec.network, "type", None) is not None)

    # the type-exclusive counts of the merge relaxation (one item per operation, memory and stream)
    needs = {t.name: need for t, _, need in exclusive_needs(lowering.merge_relaxation(graph, spec))}
    used = {kind: needs.get(kind, 0) for kind in ("pcu", "pmu", "dag")}
    over = [f"{need} {kind}s needed, {getattr(spec, kind).count} on the array" for kind, need in used.items()
            if need > getattr(spec, kind).count]
    seconds = cycles / (spec.clock_ghz * 1e9)
    power = cost.power_w(spec, used)
    metrics = {"cycles": cycles, "latency_s": seconds, "pcus_used": used["pcu"], "pmus_used": used["pmu"],
               "dags_used": used["dag"], "pbs_used": sum(used.values()), "area_mm2": cost.area_mm2(spec, used),
               "power_w": power, "energy_j": power * seconds}
    exact = frozenset()
    if spec.network.type is not None:
        mesh = network.mesh_of(spec)
        metrics["network_area_mm2"] = network_cost.area_mm2(spec.network, mesh.rows * mesh.cols)["total"]
        metrics["area_mm2"] += metrics["network_area_mm2"]
        exact = frozenset({"network_area_mm2"})
    return LowerBounds({k: float(v) for k, v in metrics.items()}, "; ".join(over), exact)
