"""Plasticine / SARA pipeline (seed 004 §4.1–4.4): decompose → partition → merge, then simulate.

0. A dataflow graph without actors (a DOT/GraphML/XML/JSON DFG) is first lowered to a VBDFG by
   :func:`entry_graph` (:mod:`.dfg_lowering`), an ONNX model or layer-shape file by :mod:`.from_model`;
   a graph that names its actors enters as it is.
1. ``decompose`` (transform, §4.3.1): shard virtual memories that exceed a PMU's capacity or banks,
   rewrite BI/BO and insert request-merge and response actors (:mod:`.decomposition`).
2. ``partition`` (decision, §4.3.2, Table 4.2): split every actor into PCU-sized partitions with
   broadcast-aware arity, no new cycles and retiming; the shared model
   :mod:`solvermap.formulations.partition` (``--set decisions.partition.variant=table42`` for the seed's
   literal formulation); baselines: the four traversal orders of L648 (:mod:`.traversal`).
   Objective = partitions + retiming partitions. Validation: dataflow simulation of the partitioned
   VB graph, each VB on its own PB.
   Before it, unless the run stops after partitioning, the merge's type-exclusive counts of the graph
   (:func:`.lowering.merge_relaxation`) refuse a graph that no partition can merge onto the array.
3. ``merge`` (decision, §4.4, Tables 4.3/4.4): pack VBs onto PCUs / PMUs / DAGs jointly with the type
   assignment, within the available counts; same shared model; baselines: the traversal merger with the
   bipartite feasibility check, and no merging. Objective = PBs used.

``Pipeline.bounds`` (:mod:`.bounds`) gives certified lower bounds of cycles, PBs used, area and power
before any solve, for the design-space search's pruning. ``Pipeline.validate`` simulates the merged mapping (:mod:`solvermap.hardware.plasticine.dataflow_sim`)
and reports cycles, throughput, PBs used by type, area and power of the used PBs, and predicted vs
simulated cycles.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from solvermap.errors import InfeasibleError, InputError, UnknownError

from solvermap.formulations import partition as partition_model
from solvermap.formulations.problems.partition import PartitionDecision
from solvermap.hardware.plasticine import cost
from solvermap.mappers.decisions import MERGE, PARTITION
from solvermap.mappers.pipeline import Context, Pipeline, decide, run_decision, transform
from solvermap.ir.graph import DataflowGraph
from solvermap.mappers.plasticine import decomposition, dfg_lowering, from_model, lowering, simulation, traversal
from solvermap.mappers.plasticine.bounds import lower_bounds
from solvermap.mappers.plasticine.network import NETWORK_STEPS, end_to_end, size_estimate
from solvermap.results import DecisionRecord


def entry_graph(ctx: Context) -> DataflowGraph:
    """The VBDFG a workload enters the pipeline as. An ONNX model or layer-shape file is lowered layer by
    layer (:mod:`.from_model`); a graph that names its actors (the built-in apps, or a file that names them)
    is one already and is only checked; any other dataflow graph is lowered by the generic DFG lowering
    (:mod:`.dfg_lowering`: one actor per loop, op costs from the op table)."""
    graph = ctx.workload.ir
    if from_model.is_model(graph):  # an ONNX model or layer-shape file: lowered to a VBDFG
        lowered = from_model.lower(ctx.workload)
        ctx.say(f"decompose: model lowered to {len(lowered.attrs['actors'])} actors")
        return lowered
    if not isinstance(graph, DataflowGraph):
        raise InputError("", "workload", f"the plasticine pipeline maps dataflow graphs, got {type(graph).__name__}")
    if not dfg_lowering.needs_lowering(graph):
        return dfg_lowering.check_actors(graph)
    lowered = dfg_lowering.lower(graph, ctx.target, ctx.workload.params)
    actors = lowered.attrs["actors"]
    fired = ", ".join(f"{name} x{actor['firings']}" for name, actor in actors.items())
    ctx.say(f"lower: {len(graph)} DFG nodes -> {len(actors)} actors ({fired})")
    return lowered


def decompose_step(ctx: Context) -> None:
    graph, shards = decomposition.decompose(entry_graph(ctx), ctx.target)
    ctx.state["vbdfg"] = graph
    ctx.state["shards"] = [{"memory": s.memory, "partitions": s.partitions, "reason": s.reason} for s in shards]
    if shards:
        ctx.say(f"decompose: {len(shards)} memories sharded "
                f"({', '.join(f'{s.memory}x{s.partitions}' for s in shards)})")
    return None


def partition_step(ctx: Context) -> DecisionRecord:
    graph = ctx.state.get("vbdfg") or ctx.workload.ir
    spec = ctx.target
    if ctx.focus != PARTITION.name:  # merge will run: refuse a graph too large for the array before partitioning
        shortfall = partition_model.count_shortfall(lowering.merge_relaxation(graph, spec))
        if shortfall:
            raise InfeasibleError(f"{MERGE.name}: infeasible: {shortfall} (counted before partitioning: "
                                  "one item per operation, memory and stream)")
    problem = lowering.partition_problem(graph, spec, retiming=ctx.options_for(PARTITION).retiming)

    def validate(p, decision):
        vbg = lowering.vb_graph(graph, spec, decision)
        out = simulation.validation(vbg, spec)
        out["partitions"] = len(decision.bins)
        out["retiming_partitions"] = decision.retiming_bins
        return out

    decision, record = run_decision(ctx, PARTITION, problem, validate=validate)
    record.details["lower_bound"] = partition_model.lower_bound(problem).__dict__ | {
        "certified": record.solver.bound}
    record.details["items"] = len(problem.items)
    record.details["actors"] = len(problem.clusters())
    record.details["shards"] = ctx.state.get("shards", [])
    ctx.state["vbgraph"] = lowering.vb_graph(graph, spec, decision)
    return record


def merge_step(ctx: Context) -> DecisionRecord:
    spec = ctx.target
    vbg = ctx.state["vbgraph"]
    problem = lowering.merge_problem(vbg, spec, name=f"merge:{ctx.workload.name}")

    def validate(p, decision):
        out = simulation.validation(vbg, spec, decision)
        out.update(_usage(spec, decision))
        return out

    try:
        decision, record = run_decision(ctx, MERGE, problem, validate=validate)
    except UnknownError as exc:
        raise UnknownError(f"merge: {_count_pressure(problem, exc)}") from None
    record.details["vbs"] = len(problem.items)
    return record


def _count_pressure(problem, unknown: UnknownError) -> str:
    """Why no packing was found (the model was neither solved nor proven infeasible within its budget):
    the PB counts against what the traversal mergers need without counts and the certified bounds."""
    free = dataclasses.replace(problem, bin_types=tuple(dataclasses.replace(t, count=None)
                                                        for t in problem.bin_types))
    counts = {t.name: t.count for t in problem.bin_types if t.count is not None}
    need: dict[str, int] = {}
    merged = traversal.traversal_merge(free, "dfs")
    if merged is not None:
        for t in merged.bin_types.values():
            need[t] = need.get(t, 0) + 1
    over = [f"{need[t]} {t}" for t in counts if need.get(t, 0) > counts[t]]
    only = {}
    for item in problem.items:
        types = problem.feasible_types(item.name)
        if len(types) == 1:
            only.setdefault(types[0].name, []).append(item.name)
    scarce = max(counts, key=lambda t: (need.get(t, 0) / max(counts[t], 1), t)) if counts else None
    parts = [f"no packing of the {len(problem.items)} VBs onto "
             + " / ".join(f"{c} {t}" for t, c in counts.items())
             + f" PBs found ({str(unknown).removeprefix('merge: ')})"]
    if over:
        parts.append(f"the traversal merger needs {', '.join(over)} (limit {scarce} count {counts[scarce]})")
    if scarce in only:
        parts.append(f"{len(only[scarce])} VBs fit only a {scarce} (e.g. node '{only[scarce][0]}')")
    bound = partition_model.lower_bound(problem)
    parts.append(f"at least {bound.bins} PBs in total ({bound.reason})")
    parts.append(f"raise the {scarce} count or the solver budget")
    return "; ".join(parts)


def _usage(spec, decision: PartitionDecision) -> dict[str, Any]:
    used: dict[str, int] = {"pcu": 0, "pmu": 0, "dag": 0}
    for b in set(decision.assignment.values()):
        used[decision.bin_types[b]] = used.get(decision.bin_types[b], 0) + 1
    return {
        "pbs_used": sum(used.values()),
        "pcus_used": used["pcu"],
        "pmus_used": used["pmu"],
        "dags_used": used["dag"],
        "pcu_utilization": used["pcu"] / spec.pcu.count if spec.pcu.count else None,
        "pmu_utilization": used["pmu"] / spec.pmu.count if spec.pmu.count else None,
        "area_mm2": cost.area_mm2(spec, used),
        "power_w": cost.power_w(spec, used),
    }


def validate(ctx: Context) -> dict[str, Any]:
    """End-to-end: simulate the merged mapping; the metric keys of DEVELOPERS.md."""
    spec = ctx.target
    vbg = ctx.state["vbgraph"]
    merge = ctx.state.get("merge")
    out = simulation.validation(vbg, spec, merge)
    if merge is not None:
        out.update(_usage(spec, merge))
        out["energy_j"] = out["power_w"] * out["latency_s"]
    if "vc" in ctx.state:  # placed and routed: the NoC co-simulation (mappers/plasticine/network.py)
        out.update(end_to_end(ctx, out))
    return out


PIPELINE = Pipeline(
    family="plasticine",
    description="SARA on Plasticine: memory decomposition, PB partitioning and merging, dataflow simulation",
    steps=(
        transform("decompose", "shard memories that exceed a PMU (capacity, banks); BI/BO, merge and response actors",
                  decompose_step, provides=("vbdfg", "shards")),
        decide(PARTITION, partition_step, needs=("vbdfg", "shards"), provides=("vbgraph",)),
        decide(MERGE, merge_step, needs=("vbgraph",)),
        *NETWORK_STEPS,  # place → split → route → vc (mappers/plasticine/network.py)
    ),
    validate=validate,
    default_workload="dotproduct",
    bounds=lower_bounds,  # certified, before any solve (bounds.py)
    estimate=size_estimate,
)
