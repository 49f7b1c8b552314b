"""Push-memory pipeline (seed 001): Halide-style affine programs → unified buffers → MEM tiles.

    unroll           small reduction loops of untiled programs into the PE expression (transform,
                     Halide unroll(r), 001:L210); option max_taps
    schedule         cycle-accurate affine schedule (stencil: rate matching + delay ILP; DNN: coarse
                     pipeline, binary search on II)                 baseline: sequential (Table VI)
    buffers          unified-buffer extraction (transform, D5)
    shift_registers  min-cost arborescence of taps: wire / SR / memory delay line (D6)
                                                                    baselines: all-memory, sr-chain
    bank             bank functions under 4 accesses per tile per cycle (D7)
                                                                    baselines: cyclic, embarrassing
    storage          physical buffers, circular-buffer storage minimisation (transform, D9)
    memtile          fragments (chaining, D10) packed on MEM tiles (shared bin-packing model)
                                                                    baselines: one-per-tile, first-fit
    wide_fetch       AGG → SRAM → TB shifts: one SRAM access per tile per cycle (D8)
                                                                    baseline: no-shift
    validate         configuration of every unit (configure.py) executed by the cycle simulator, bit-exact
                     against the NumPy golden model of the workload as written; Table II cost

Reductions written as Halide writes them (an init statement and ``+=`` updates on one tensor) are
versions of one unified buffer (:mod:`.versions`); a reduction loop that stays (too many iterations to
unroll, a float sum, or a tiled program) accumulates in its PE one step per cycle.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pydantic import Field

from solvermap.errors import InfeasibleError, InputError
from solvermap.formulations.problems import banking as banking_problems
from solvermap.formulations.problems import shift_registers as sr_problems
from solvermap.formulations.problems import wide_fetch as fetch_problems
from solvermap.hardware.checks import storage as storage_check
from solvermap.hardware.pushmem.cost import cost, pe_tiles
from solvermap.hardware.pushmem.simulator import simulate
from solvermap.ir.loopnest import Program, evaluate, random_inputs
from solvermap.mappers.decisions import BANK, MEMTILE, SCHEDULE, SHIFT_REGISTERS, WIDE_FETCH
from solvermap.mappers.pipeline import Context, Pipeline, StepOptions, decide, run_decision, transform
from solvermap.mappers.pushmem.banking_adapter import banking_problem
from solvermap.mappers.pushmem.baselines import sequential_schedule
from solvermap.mappers.pushmem.buffers import extract_buffers
from solvermap.mappers.pushmem.configure import Mapping, configure
from solvermap.mappers.pushmem.dependences import schedule_problem
from solvermap.mappers.pushmem.fetch_adapter import wide_fetch_problem
from solvermap.mappers.pushmem.from_model import LayerwisePipeline
from solvermap.mappers.pushmem.physical import memtile_problem, minimise_storage, physical_buffers
from solvermap.mappers.pushmem.ports import memories, shift_register_problem, tap_distances
from solvermap.mappers.pushmem.unroll import unroll_reductions


class UnrollOptions(StepOptions):
    max_taps: int = Field(64, ge=0, le=4096, description="unroll an integer reduction of an untiled program when its "
                          "reduction loops run at most this many iterations (0: keep every reduction loop)")


def _workload_program(ctx: Context) -> Program:
    ir = ctx.workload.ir
    if not isinstance(ir, Program):
        raise InputError(ctx.workload.name, "workload", "the pushmem pipeline needs an affine loop-nest program")
    return ir


def _program(ctx: Context) -> Program:
    """The program the mapping implements: the workload after the unroll step."""
    return ctx.state["program"]


def _unroll(ctx: Context):
    ctx.state["program"] = unroll_reductions(_workload_program(ctx), ctx.options_for("unroll", UnrollOptions).max_taps)
    return None


def _schedule(ctx: Context):
    spec, program = ctx.target, _program(ctx)
    problem = schedule_problem(program, fetch_width=spec.fetch_width, sram_read_latency=spec.sram_read_latency,
                               fetch_slack=spec.fetch_slack, op_latency=spec.pe_op_latency)
    seq = sequential_schedule(problem)
    ctx.state["sequential_schedule"] = seq

    def validate(p, s):
        return {"cycles": s.completion, "sequential_cycles": seq.completion, "pipeline": p.pipeline, "ii": s.ii,
                "speedup": round(seq.completion / max(1, s.completion), 3)}

    schedule, record = run_decision(ctx, SCHEDULE, problem, validate=validate)
    ctx.state["latency"] = dict(problem.latency)
    ctx.state["mem_latency"] = dict(problem.notes["mem_latency"])
    return record


def _buffers(ctx: Context):
    ctx.state["buffers"] = extract_buffers(_program(ctx), ctx.state["schedule"], ctx.state["latency"])
    return None


def _shift_registers(ctx: Context):
    problem = shift_register_problem(ctx.state["buffers"], ctx.target, ctx.state["mem_latency"])

    def validate(p, plan):
        return sr_problems.counts(plan)

    plan, record = run_decision(ctx, SHIFT_REGISTERS, problem, validate=validate)
    ctx.state["memories"] = memories(ctx.state["buffers"], problem, plan)
    ctx.state["tap_distances"] = tap_distances(problem)
    return record


def _bank(ctx: Context):
    problem = banking_problem(ctx.state["memories"], ctx.target, max_banks=ctx.options_for(BANK).max_banks)

    def validate(p, b):
        return {"memories": len(p.memories), "banks": int(banking_problems.objective(p, b)),
                "peak_accesses": {m.name: banking_problems.peak_bank_load(m, b.functions[m.name]) for m in p.memories}}

    banks, record = run_decision(ctx, BANK, problem, validate=validate)
    physical = physical_buffers(ctx.state["memories"], banks, ctx.target.fetch_width)
    ctx.state["moduli"] = minimise_storage(physical)
    ctx.state["physical"] = physical
    ctx.state["storage_check"] = storage_check.check(physical, ctx.state["moduli"])
    return record


def _memtile(ctx: Context):
    problem = memtile_problem(ctx.state["physical"], ctx.target)

    def validate(p, d):
        return {"tiles": len(d.bins), "fragments": len(p.items),
                "sram_words": int(sum(pb.words for pb in ctx.state["physical"]))}

    decision, record = run_decision(ctx, MEMTILE, problem, validate=validate)
    tile_of = dict(decision.assignment)
    rows: dict[int, int] = {}
    base = {}
    for item in problem.items:
        t = tile_of[item.name]
        base[item.name] = rows.get(t, 0)
        rows[t] = rows.get(t, 0) + int(item.demand["words"]) // ctx.target.fetch_width
    ctx.state["tile_of_fragment"], ctx.state["row_base"] = tile_of, base
    return record


def _wide_fetch(ctx: Context):
    problem = wide_fetch_problem(ctx.state["physical"], ctx.state["tile_of_fragment"], ctx.target)

    def validate(p, d):
        return {"streams": len(p.streams), "agg_tb_words": fetch_problems.objective(p, d)}

    try:
        decision, record = run_decision(ctx, WIDE_FETCH, problem, validate=validate)
    except InfeasibleError as exc:
        kept = [s.name for s in _program(ctx).statements if any(loop.kind == "reduction" for loop in s.loops)]
        if not kept or _program(ctx).attrs.get("coarse_loops"):
            raise
        raise InfeasibleError(f"{exc} (the reduction loops of {', '.join(kept)} stay in their PEs, and window reads that "
                              "cross wide words at irregular cycles leave no constant AGG/TB shift free; unrolled "
                              "(--set decisions.unroll.max_taps=N) they become constant-distance taps)") from None
    return record


def mapping_of(ctx: Context) -> Mapping:
    plan = ctx.state["shift_registers"]
    return Mapping(_program(ctx), ctx.state["schedule"], ctx.state["latency"], ctx.state["buffers"], dict(plan.edges),
                   ctx.state["tap_distances"], ctx.state["physical"], ctx.state["tile_of_fragment"], ctx.state["row_base"],
                   dict(ctx.state["wide_fetch"].shifts), ctx.target)


def validate(ctx: Context) -> dict[str, Any]:
    program, spec = _program(ctx), ctx.target
    written = _workload_program(ctx)
    inputs = random_inputs(written, ctx.seed)
    reference = evaluate(written, inputs)  # the workload as written, not as unrolled
    sim = simulate(configure(mapping_of(ctx)), inputs, {t.name: reference[t.name] for t in written.outputs})
    schedule = ctx.state["schedule"]
    physical = ctx.state["physical"]
    plan = ctx.state["shift_registers"]
    sr = sr_problems.counts(plan)
    tiles = len(set(ctx.state["tile_of_fragment"].values()))
    pes = pe_tiles(program)
    metrics = cost(spec, word_accesses=sim.counts["word_accesses"], sr_shifts=sim.counts["sr_shifts"],
                   pe_ops=sim.counts["pe_ops"], mem_tiles=tiles, pes=pes, sr_stages=sr["sr_stages"], cycles=sim.cycles)
    by_variant = {v: round(cost(spec, word_accesses=sim.counts["word_accesses"], sr_shifts=sim.counts["sr_shifts"],
                                pe_ops=sim.counts["pe_ops"], mem_tiles=tiles, pes=pes, sr_stages=sr["sr_stages"],
                                cycles=sim.cycles, variant=v)["energy_j"], 15) for v in spec.designs}
    sram_words = int(sum(pb.words for pb in physical))
    storage = ctx.state["storage_check"]
    return {
        "cycles": sim.cycles,
        "predicted_cycles": schedule.completion,
        "simulated_cycles": sim.cycles,
        "cycles_rel_diff": abs(sim.cycles - schedule.completion) / max(1, schedule.completion),
        "stall_cycles": sim.stall_cycles,
        "sequential_cycles": ctx.state["sequential_schedule"].completion,
        "sram_words": sram_words,
        "simulated_peak_sram_words": sim.sram_words,
        "bit_exact": sim.bit_exact,
        "mismatches": sim.mismatches,
        "port_conflicts": sim.port_conflicts,
        "data_hazards": sim.data_hazards,
        "capacity_violations": sim.capacity_violations,
        "hazards": {k: v for k, v in sim.hazards.items() if v},
        "storage_check_ok": storage.ok,
        "shift_registers": sr["sr_edges"],
        "sr_stages": sr["sr_stages"],
        "memories": len(ctx.state["memories"]),
        "banks": len(physical),
        "tiles_used": tiles,
        "pes_used": pes,
        "throughput": float(np.prod(program.outputs[0].shape)) / max(1, sim.cycles),
        "agg_peak_words": sim.agg_peak,
        "tb_peak_words": sim.tb_peak,
        **{k: metrics[k] for k in ("energy_j", "memory_energy_j", "area_mm2", "latency_s", "power_w")},
        "energy_j_by_memory_design": by_variant,
    }


PIPELINE = LayerwisePipeline(  # a model or layer-shape file: this pipeline once per layer (from_model.py)
    family="pushmem",
    description="Halide-style affine programs on push-memory CGRAs (seed 001): unified buffers, scheduling, "
                "shift registers, banking, memory tiles, wide fetch",
    steps=(
        transform("unroll", "small integer reductions of untiled programs unrolled into the PE expression", _unroll,
                  options=UnrollOptions, provides=("program",)),
        decide(SCHEDULE, _schedule, needs=("program",), provides=("sequential_schedule", "latency", "mem_latency")),
        transform("buffers", "unified-buffer extraction", _buffers, needs=("program", "schedule", "latency"),
                  provides=("buffers",)),
        decide(SHIFT_REGISTERS, _shift_registers, needs=("buffers", "mem_latency"), provides=("memories", "tap_distances")),
        decide(BANK, _bank, needs=("memories",), provides=("moduli", "physical", "storage_check")),
        decide(MEMTILE, _memtile, needs=("physical",), provides=("tile_of_fragment", "row_base")),
        decide(WIDE_FETCH, _wide_fetch, needs=("program", "physical", "tile_of_fragment")),
    ),
    validate=validate,
    default_workload="harris",
)
