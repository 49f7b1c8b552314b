"""Unified-buffer extraction (seed 001 D5, 001:L216-L218).

Every intermediate tensor becomes a unified buffer (UB); a tensor with several producers (an init and
its updates) becomes one UB per version (:mod:`.versions`), and so does a version of an output tensor
that a later statement reads (an init the update accumulates onto). Every memory reference becomes a
port with an iteration domain (the statement's box; an update's carry: its first reduction step), an
access map (the index expression) and a cycle-accurate schedule (from the ``schedule`` decision). Ports are stored extensionally as NumPy arrays — one entry
per operation: the cycle and the flat element index — which is exact for the box domains of this IR.

The input port's time is the cycle the value becomes available (issue + latency of the producer); an
output port's time is the issue cycle of the reading operation. The *distance* of an output port is
read time − availability of the value it reads; when it is the same for every operation the port can
be fed by a shift register or a delay line (001:L256).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvermap.formulations.problems.scheduling import Schedule
from solvermap.ir.loopnest import Program
from solvermap.mappers.pushmem.dependences import version_reads
from solvermap.mappers.pushmem.domains import grid, indices
from solvermap.mappers.pushmem.versions import analyse, first_step


@dataclass(eq=False)
class Port:
    name: str
    statement: str
    access: str
    times: np.ndarray  # int64 cycle of each operation using the port
    elements: np.ndarray  # int64 flat element index of each operation

    def distance(self, avail: np.ndarray) -> int | None:
        d = self.times - avail[self.elements]
        return int(d[0]) if len(d) and bool(np.all(d == d[0])) else None


@dataclass(eq=False)
class UnifiedBuffer:
    name: str  # the tensor, or ``tensor~producer`` for one version of a tensor with several producers
    tensor: str
    version: int  # the producer's position among the tensor's producers
    shape: tuple[int, ...]
    write: Port
    reads: list[Port] = field(default_factory=list)

    @property
    def avail(self) -> np.ndarray:
        """Per flat element: the cycle its value becomes available (−1: never written)."""
        out = np.full(int(np.prod(self.shape)), -1, dtype=np.int64)
        out[self.write.elements] = self.write.times
        return out

    def summary(self) -> dict:
        av = self.avail
        return {"buffer": self.name, "tensor": self.tensor, "shape": list(self.shape), "ports": 1 + len(self.reads),
                "distances": {p.name: p.distance(av) for p in self.reads}}


def extract_buffers(program: Program, schedule: Schedule, latency: dict[str, int]) -> list[UnifiedBuffer]:
    versions = analyse(program)
    stmt = {s.name: s for s in program.statements}
    out: dict[str, UnifiedBuffer] = {}
    for v in versions.of_write.values():
        t = program.tensor(v.tensor)
        if t.role == "output" and not any(r.buffer == v.buffer for *_, r in version_reads(program, versions)):
            continue  # streamed to the global buffer, read by nobody on the array
        s = stmt[v.producer]
        pts = grid(s)
        times = schedule.times(s.name, pts) + latency[s.name]
        flat = np.ravel_multi_index(indices(s.write, pts), t.shape)
        if s.accumulate:  # the PE accumulates; the buffer sees the final value once
            last = np.full(t.size, -1, dtype=np.int64)
            np.maximum.at(last, flat, times)
            flat = np.nonzero(last >= 0)[0]
            times = last[flat]
        order = np.argsort(times, kind="stable")
        out[v.buffer] = UnifiedBuffer(v.buffer, v.tensor, v.index, t.shape,
                                      Port(f"{v.buffer}.in", s.name, s.write.text(), times[order], flat[order]))
    for c, label, acc, mask, v in version_reads(program, versions):
        pts = grid(c)
        times = schedule.times(c.name, pts)
        if mask is not None:
            sel = first_step(c, pts)
            pts, times = [g[sel] for g in pts], times[sel]
        ub = out[v.buffer]
        flat = np.ravel_multi_index(indices(acc, pts), ub.shape)
        order = np.argsort(times, kind="stable")
        k = label.removeprefix("#")
        ub.reads.append(Port(f"{acc.tensor}.{c.name}.{k}", c.name, acc.text(), times[order], flat[order]))
    return list(out.values())
