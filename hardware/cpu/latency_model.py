"""Analytical latency of a tensorized kernel: the tuner's pre-filter (UNIT itself only profiles, 002:L205).

For a rewritten nest under a schedule, with U unrolled accumulators (002:L203: unrolling hides the
RAW hazard of the loop-carried accumulation) and one body iteration = one step of the innermost
reduction loop issuing U instructions:

    cycles/iteration = max( U / throughput,                          issue
                            latency,                                 RAW chain of each accumulator
                            (loads + spills) / load_ports + gathers·gather_cycles,   operand preparation
                            bytes/iteration / L2 bandwidth  if the reduction working set exceeds L1 )
                       + loop_overhead                               (the innermost loop's branch)
    total = iterations · cycles/iteration + regions · (U stores + per-region overhead)
    latency = max(total, tensor bytes / DRAM bandwidth) / frequency

``bytes/iteration`` counts a vector or gathered register as its width and a broadcast as its 32-bit
group; the reduction working set is that times the reduction trip count. ``loads`` counts the distinct operand registers per iteration (a register shared by several unrolled
points is loaded once, as the generator emits it); a ``lanewise`` operand costs one load per lane;
spills are charged when U + distinct registers exceed the register file. All parameters come from the
target's ``core`` block (assumptions listed in the preset).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solvermap.hardware.cpu import CoreModel
from solvermap.hardware.cpu.nest import RewrittenNest, Schedule, split_dp_loops
from solvermap.ir.loopnest import NUMPY_DTYPES


@dataclass(frozen=True)
class LatencyEstimate:
    seconds: float
    cycles: float
    cycles_per_iteration: float
    bound: str  # issue | latency | operands | l2 | dram
    unroll: int
    registers: int

    def to_json(self) -> dict:
        return {"seconds": self.seconds, "cycles": self.cycles, "cycles_per_iteration": self.cycles_per_iteration,
                "bound": self.bound, "unroll": self.unroll, "registers": self.registers}


def distinct_registers(nest: RewrittenNest, schedule: Schedule) -> tuple[int, dict[str, int]]:
    """Unrolled points U and, per source operand, how many distinct registers one iteration loads."""
    parts = split_dp_loops({l.var: l.extent for l in nest.dp_loops}, schedule)
    unrolled = [p for p in parts if p.role == "unroll"]
    U = math.prod(p.extent for p in unrolled)
    counts = {}
    for plan in nest.sources:
        # a register is shared by the unrolled points whose offsets coincide: count distinct offsets
        deltas = {0}
        for p in unrolled:
            step = plan.base_stride(p.var) * p.weight
            deltas = {d + step * k for d in deltas for k in range(p.extent)}
        counts[plan.operand] = len(deltas)
    return U, counts


def estimate(nest: RewrittenNest, schedule: Schedule, core: CoreModel) -> LatencyEstimate:
    U, counts = distinct_registers(nest, schedule)
    red_iterations = math.prod(l.extent for l in nest.reduction_loops)
    regions = nest.calls // (U * red_iterations)
    iterations = regions * red_iterations
    loads, gathers = 0.0, 0.0
    for plan in nest.sources:
        n = counts[plan.operand]
        if plan.action == "gather":
            gathers += n
        elif plan.action == "lanewise":
            loads += n * len(plan.lane_offsets)
        else:
            loads += n
    registers = U + sum(counts.values())
    spills = max(0, registers - core.vector_registers)
    bounds = {
        "issue": U / core.instruction_throughput,
        "latency": core.instruction_latency_cycles,
        "operands": (loads + 2 * spills) / core.load_ports + gathers * core.gather_cycles,
    }
    bytes_per_iteration = 0.0
    for plan in nest.sources:
        item = np.dtype(NUMPY_DTYPES[plan.layout.dtype]).itemsize
        register_bytes = len(plan.lane_offsets) * item  # the register's lanes (64 B for a zmm operand)
        per_register = {"broadcast": plan.group * item}.get(plan.action, register_bytes)
        bytes_per_iteration += counts[plan.operand] * per_register
    if red_iterations * bytes_per_iteration > core.l1_bytes:
        bounds["l2"] = bytes_per_iteration / core.l2_bandwidth_bytes_per_cycle
    bound = max(bounds, key=bounds.get)
    per_iteration = bounds[bound] + core.loop_overhead_cycles
    cycles = iterations * per_iteration + regions * (U + 2 * core.loop_overhead_cycles * len(nest.reduction_loops))
    tensor_bytes = sum(p.layout.size * np.dtype(NUMPY_DTYPES[p.layout.dtype]).itemsize for p in nest.operands.values())
    dram_cycles = tensor_bytes / core.dram_bandwidth_bytes_per_cycle
    if dram_cycles > cycles:
        cycles, bound = dram_cycles, "dram"
    return LatencyEstimate(cycles / (core.frequency_ghz * 1e9), cycles, per_iteration, bound, U, registers)
