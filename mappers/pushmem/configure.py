"""Configuration generation: the mapping's decisions → the programs of every hardware unit (001:L146, L287).

The seed's generator "creates ... the compiler components that map a unified buffer abstraction to
configuration registers" (001:L146); this module is that component for our mapping. It reads the
decisions (schedule, shift-register plan, physical buffers with their bank functions and circular moduli,
MEM-tile placement, wide-fetch shifts) and emits a :class:`~solvermap.hardware.pushmem.config.Configuration`:

* a kernel per statement, firing at its scheduled cycles; its operands wired to global-buffer streams
  (input tensors), to taps or to TB streams; an update's accumulator wired to the port that carries the
  previous version of its elements (read at its first reduction step);
* the input wire of every unified buffer (``<buffer>.in``, one per version of a tensor with several
  producers) from its producer's kernel; output streams capture the values that are an output element's
  last write;
* wires and shift registers for the ``wire`` / ``sr`` edges of the plan, in distance order;
* per physical buffer: AGG captures at the memory's write times, AGG → SRAM writes one cycle after a
  word's last lane plus the wide-fetch shift, SRAM → TB fetches ``sram_read_latency`` + shift cycles
  before a visit's first lane, TB lanes at the read stream's times, release at the end of each visit.

Breaking one decision and configuring again is how tests build broken designs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from solvermap.formulations.problems.shift_registers import ROOT
from solvermap.hardware.pushmem.config import (Configuration, Firings, GlobalInput, GlobalOutput, Kernel, Limits, Memory,
                                               Operand, ReadStream, Tap, WriteStream)
from solvermap.ir.loopnest import Program
from solvermap.mappers.pushmem.dependences import tile_loop, tiled
from solvermap.mappers.pushmem.domains import flat, grid
from solvermap.mappers.pushmem.versions import analyse, first_step, last_step


@dataclass
class Mapping:
    """Everything the pipeline decided, as the configuration generator reads it."""

    program: Program
    schedule: Any  # Schedule
    latency: dict[str, int]
    buffers: list  # UnifiedBuffer
    edges: dict  # buffer → port → Edge (shift-register plan)
    distances: dict  # (buffer, port) → tap distance
    physical: list  # PhysicalBuffer (moduli and fragments set)
    tile_of_fragment: dict[str, int]
    row_base: dict[str, int]
    shifts: dict[str, int]  # wide-fetch stream → shift
    spec: Any  # PushMemTarget


def limits(spec) -> Limits:
    return Limits(spec.tile_words, spec.tile_accesses_per_cycle, spec.tile_write_ports, spec.tile_read_ports,
                  spec.sram_read_latency, spec.agg_words, spec.tb_words, spec.max_shift_register,
                  spec.dram_words_per_cycle, spec.glb_slots)


def _tile_dims(program: Program) -> dict[str, int | None]:
    """Per input tensor: the dimension indexed by exactly the tile loop in every access, if any (a tensor also
    read by a statement outside the tile loop is loaded whole)."""
    out: dict[str, int | None] = {}
    loop = tile_loop(program)
    inside = tiled(program, loop)
    for stmt in program.statements:
        for acc in stmt.reads:
            if program.tensor(acc.tensor).role != "input":
                continue
            dim = None
            if stmt.name in inside:
                for d, (row, off, div) in enumerate(zip(acc.coeffs, acc.offsets, acc.divisors)):
                    if row[0] == 1 and not any(row[1:]) and off == 0 and div == 1:
                        dim = d
                        break
            out[acc.tensor] = dim if out.get(acc.tensor, dim) == dim else None
    return out


def _kernels(m: Mapping) -> tuple[list[Kernel], list[GlobalInput], list[GlobalOutput], list[Tap]]:
    program = m.program
    tile_dims = _tile_dims(program)
    versions = analyse(program)
    buffers = {ub.name for ub in m.buffers}
    kernels, inputs, outputs, roots = [], [], [], []
    for stmt in program.statements:
        pts = grid(stmt)
        times = m.schedule.times(stmt.name, pts)
        order = np.argsort(times, kind="stable")
        times = times[order]
        pts = [p[order] for p in pts]
        operands = []
        for k, acc in enumerate(stmt.reads):
            elements = flat(program, acc, pts)
            if program.tensor(acc.tensor).role == "input":
                wire = f"{acc.tensor}@{stmt.name}.{k}"
                inputs.append(GlobalInput(wire, acc.tensor, Firings(times, elements), tile_dims.get(acc.tensor)))
                operands.append(Operand(acc.tensor, wire, elements))
            else:
                operands.append(Operand(acc.tensor, f"{acc.tensor}.{stmt.name}.{k}", elements,
                                        versions.reads[(stmt.name, k)].index))
        out = flat(program, stmt.write, pts)
        first = last = carry = None
        if stmt.accumulate:
            first, last = first_step(stmt, pts), last_step(stmt, pts)
            if stmt.name in versions.carry:
                carry = Operand(stmt.write.tensor, f"{stmt.write.tensor}.{stmt.name}.carry", out,
                                versions.carry[stmt.name].index)
        version = versions.of_write[stmt.name]
        kern = Kernel(stmt.name, stmt.expr, stmt.dtype, int(m.latency[stmt.name]), times, tuple(operands),
                      stmt.write.tensor, out, first, last, version.index, carry)
        kernels.append(kern)
        if program.tensor(stmt.write.tensor).role == "output":
            final = versions.final[stmt.name][order]
            if final.any():
                outputs.append(GlobalOutput(stmt.write.tensor, kern.wire,
                                            Firings(times[final] + kern.latency, out[final]), version.index))
        if version.buffer in buffers:
            roots.append(Tap(f"{version.buffer}.in", kern.wire, "wire"))
    return kernels, inputs, outputs, roots


def _taps(m: Mapping) -> list[Tap]:
    out = []
    for ub in m.buffers:
        edges = m.edges.get(ub.name, {})
        position = {r.name: i for i, r in enumerate(ub.reads)}
        ports = sorted((p for p, e in edges.items() if e.kind in ("wire", "sr")),
                       key=lambda p: (m.distances[(ub.name, p)], position[p]))
        for p in ports:
            e = edges[p]
            source = f"{ub.name}.in" if e.source == ROOT else e.source
            out.append(Tap(p, source, e.kind, int(e.delay)))
    return out


def _memory(pb, m: Mapping) -> Memory:
    spec = m.spec
    lat = spec.sram_read_latency
    source = f"{pb.buffer}.in" if pb.source == ROOT else pb.source
    words = pb.word(pb.write.elements)
    ids, pos = np.unique(words, return_inverse=True)
    ready = np.full(len(ids), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(ready, pos, pb.write.times)
    sram_t = ready + 1 + m.shifts.get(f"{pb.name}|agg", 0)
    order = np.argsort(sram_t, kind="stable")
    write = WriteStream(f"{pb.name}.w", source, Firings(pb.write.times, pb.write.elements), words,
                        pb.lane(pb.write.elements), sram_t[order], ids[order])
    reads = []
    for r in pb.reads:
        o = np.argsort(r.times, kind="stable")
        t, el = r.times[o], r.elements[o]
        w = pb.word(el)
        start = np.r_[True, w[1:] != w[:-1]] if len(w) else np.zeros(0, dtype=bool)
        release = np.r_[w[1:] != w[:-1], True] if len(w) else np.zeros(0, dtype=bool)
        fetch = t[start] - lat - m.shifts.get(f"{pb.name}|{r.name}", 0)
        reads.append(ReadStream(r.name, Firings(t, el), w, pb.lane(el), fetch, w[start], release))
    fragments = tuple((int(m.tile_of_fragment[f]), int(m.row_base.get(f, 0))) for f in pb.fragments)
    return Memory(pb.name, pb.tensor, spec.fetch_width, int(pb.modulus), fragments, (write,), tuple(reads), pb.version)


def configure(m: Mapping) -> Configuration:
    kernels, inputs, outputs, roots = _kernels(m)
    memories = tuple(_memory(pb, m) for pb in m.physical)
    return Configuration(m.program, tuple(kernels), tuple(inputs), tuple(outputs), tuple(roots) + tuple(_taps(m)),
                         memories, limits(m.spec))
