"""Analytical latency of a tensorized kernel: the tuner's pre-filter (UNIT itself only profiles, 002:L205).

For a rewritten nest under a schedule, with U unrolled accumulators (002:L203: unrolling hides the
RAW hazard of the loop-carried accumulation) and one body iteration = one step of the innermost
reduction loop issuing U instructions:

    cycles/iteration = max( U / throughput,                          issue
                            latency,                                 RAW chain of each accumulator
                            (loads + spills) / load_ports + gathers·gather_cycles,   operand preparation
                            bytes/iteration / L2 bandwidth  if the reduction working set exceeds L1 )
                       + loop_overhead                               (the innermost loop's branch)
    total = Σ_blocks iterations · cycles/iteration + regions · (U stores + per-region overhead)
    latency = max(total, tensor bytes / DRAM bandwidth) / frequency

A schedule whose unroll factor leaves a residue has two kinds of blocks (full ones and the last,
partial one per enclosing iteration); each is costed with its own U and registers. With a reduction
block, the L1 test uses the iterations of one block, and every block after the first reloads its U
accumulators.

``bytes/iteration`` counts a vector or gathered register as its width and a broadcast as its 32-bit
group; the reduction working set is that times the reduction trip count. ``loads`` counts the distinct operand registers per iteration (a register shared by several unrolled
points is loaded once, as the generator emits it); a ``lanewise`` operand costs one load per lane;
spills are charged when the live registers (U accumulators, the resident operand's registers and one
register of the other operand, :func:`live_registers`) exceed the register file. All parameters come from the
target's ``core`` block (assumptions listed in the preset).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solvermap.hardware.cpu import CoreModel
from solvermap.hardware.cpu.nest import RewrittenNest, Schedule, blocks, split_dp_loops
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


def distinct_registers(nest: RewrittenNest, schedule: Schedule, tail: bool = False) -> tuple[int, dict[str, int]]:
    """Unrolled points U of a full block (of the partial block with ``tail``) and, per source operand,
    how many distinct registers one iteration loads."""
    parts = split_dp_loops({l.var: l.extent for l in nest.dp_loops}, schedule)
    unrolled = [p for p in parts if p.role == "unroll"]
    extents = [p.tail if tail and p.tail else p.extent for p in unrolled]
    U = math.prod(extents)
    counts = {}
    for plan in nest.sources:
        # a register is shared by the unrolled points whose offsets coincide: count distinct offsets
        deltas = {0}
        for p, extent in zip(unrolled, extents):
            step = plan.base_stride(p.var) * p.weight
            deltas = {d + step * k for d in deltas for k in range(extent)}
        counts[plan.operand] = len(deltas)
    return U, counts


def live_registers(U: int, counts: dict[str, int]) -> int:
    """Vector registers live in one body iteration as the generator emits it: U accumulators, the
    registers of the operand with fewer distinct ones (resident) and one register of each other operand
    (loaded right before its instructions)."""
    if not counts:
        return U
    return U + min(counts.values()) + len(counts) - 1


def _iteration(nest: RewrittenNest, U: int, counts: dict[str, int], core: CoreModel,
               block_iterations: int) -> tuple[float, str, int]:
    """Cycles of one body iteration, the bound that sets it, and the registers it needs."""
    loads, gathers = 0.0, 0.0
    for plan in nest.sources:
        n = counts[plan.operand]
        if plan.action == "gather":
            gathers += n
        elif plan.action == "lanewise":
            loads += n * len(plan.lane_offsets)
        else:
            loads += n
    registers = live_registers(U, counts)
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
    if block_iterations * bytes_per_iteration > core.l1_bytes:
        bounds["l2"] = bytes_per_iteration / core.l2_bandwidth_bytes_per_cycle
    bound = max(bounds, key=bounds.get)
    return bounds[bound] + core.loop_overhead_cycles, bound, registers


def estimate(nest: RewrittenNest, schedule: Schedule, core: CoreModel) -> LatencyEstimate:
    parts = split_dp_loops({l.var: l.extent for l in nest.dp_loops}, schedule)
    red_iterations = math.prod(l.extent for l in nest.reduction_loops)
    block_iterations, passes = red_iterations, 1
    if schedule.reduction_block and nest.reduction_loops:
        first = nest.reduction_loops[0].extent
        block_iterations = red_iterations // first * min(schedule.reduction_block, first)
        passes = -(-first // schedule.reduction_block)
    cycles, main = 0.0, None
    for k, (regions, _points) in enumerate(blocks(parts)):
        U, counts = distinct_registers(nest, schedule, tail=k > 0)
        per_iteration, bound, registers = _iteration(nest, U, counts, core, block_iterations)
        cycles += regions * red_iterations * per_iteration + regions * passes * (
            (2 if passes > 1 else 1) * U + 2 * core.loop_overhead_cycles * len(nest.reduction_loops))
        if main is None:
            main = (per_iteration, bound, U, registers)
    per_iteration, bound, U, registers = main
    tensor_bytes = sum(p.layout.size * np.dtype(NUMPY_DTYPES[p.layout.dtype]).itemsize for p in nest.operands.values())
    dram_cycles = tensor_bytes / core.dram_bandwidth_bytes_per_cycle
    if dram_cycles > cycles:
        cycles, bound = dram_cycles, "dram"
    return LatencyEstimate(cycles / (core.frequency_ghz * 1e9), cycles, per_iteration, bound, U, registers)
