"""Problem adapters: unified buffers → shift-register problem; SR plan → memories (streams) for banking.

A *memory* is what remains after shift-register introduction: an SRAM fed by one stream (the input
port, or a tap on its delay line) and read by memory-delay taps (the whole delayed stream) and random
ports (their own operations). Each stream is a (times, elements) pair.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvermap.formulations.problems.shift_registers import ROOT, BufferPorts, ShiftRegisterPlan, ShiftRegisterProblem, TapPort
from solvermap.mappers.pushmem.buffers import UnifiedBuffer
from solvermap.mappers.pushmem.storage import max_live


def shift_register_problem(buffers: list[UnifiedBuffer], spec, mem_latency: dict[str, int]) -> ShiftRegisterProblem:
    out = []
    for ub in buffers:
        avail = ub.avail
        ports, streams, random_reads = [], {}, []
        for p in ub.reads:
            d = p.distance(avail)
            ports.append(TapPort(p.name, d))
            streams[p.name] = (p.times, p.elements)
            if d is None:
                random_reads.append(p)
        words = 0
        if random_reads:
            last = np.full(len(avail), -1, dtype=np.int64)
            for p in random_reads:
                np.maximum.at(last, p.elements, p.times)
            el = np.nonzero(last >= 0)[0]
            words = max_live(avail[el], last[el])
        out.append(BufferPorts(ub.name, tuple(ports), int(mem_latency.get(ub.name, 0)), words,
                               np.sort(ub.write.times), streams, avail))
    costs = spec.costs
    return ShiftRegisterProblem(tuple(out), spec.max_shift_register, costs.register_area_um2, costs.sram_word_area_um2,
                                spec.design().mem_area_um2, spec.tb_words * costs.register_area_um2)


@dataclass(eq=False)
class Stream:
    name: str
    kind: str  # write | read
    times: np.ndarray
    elements: np.ndarray


@dataclass(eq=False)
class Memory:
    name: str
    buffer: str  # the unified buffer (a tensor, or one version of it)
    shape: tuple[int, ...]
    source: str  # ROOT or the tap port feeding it
    write: Stream
    reads: list[Stream] = field(default_factory=list)
    tensor: str = ""  # the tensor whose values it holds
    version: int = 0  # which of the tensor's producers wrote them

    @property
    def streams(self) -> list[Stream]:
        return [self.write, *self.reads]


def tap_distances(problem: ShiftRegisterProblem) -> dict[tuple[str, str], int]:
    return {(b.buffer, p.name): p.distance for b in problem.buffers for p in b.ports if p.distance is not None}


def memories(buffers: list[UnifiedBuffer], problem: ShiftRegisterProblem, plan: ShiftRegisterPlan) -> list[Memory]:
    dist = tap_distances(problem)
    out = []
    for ub in buffers:
        edges = plan.edges.get(ub.name, {})
        by_source: dict[str, list[str]] = {}
        for port, e in edges.items():
            if e.kind in ("mem", "random"):
                by_source.setdefault(e.source, []).append(port)
        el = ub.write.elements
        for src, ports in sorted(by_source.items()):
            d_src = 0 if src == ROOT else dist[(ub.name, src)]
            name = ub.name + ("" if src == ROOT else f"@{src.split('.', 1)[1]}")
            mem = Memory(name, ub.name, ub.shape, src, Stream(f"{name}.w", "write", ub.write.times + d_src, el),
                         tensor=ub.tensor, version=ub.version)
            for port in sorted(ports):
                e = edges[port]
                if e.kind == "mem":
                    mem.reads.append(Stream(f"{port}", "read", ub.write.times + d_src + e.delay, el))
                else:
                    p = next(r for r in ub.reads if r.name == port)
                    mem.reads.append(Stream(f"{port}", "read", p.times, p.elements))
            out.append(mem)
    return out
