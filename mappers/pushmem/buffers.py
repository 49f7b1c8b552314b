"""Unified-buffer extraction (seed 001 D5, 001:L216-L218).

Every intermediate tensor becomes a unified buffer (UB); every memory reference becomes a port with an
iteration domain (the statement's box), an access map (the index expression) and a cycle-accurate
schedule (from the ``schedule`` decision). Ports are stored extensionally as NumPy arrays — one entry
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
from solvermap.mappers.pushmem.dependences import grid, indices, temp_producers


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
    tensor: str
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
        return {"tensor": self.tensor, "shape": list(self.shape), "ports": 1 + len(self.reads),
                "distances": {p.name: p.distance(av) for p in self.reads}}


def extract_buffers(program: Program, schedule: Schedule, latency: dict[str, int]) -> list[UnifiedBuffer]:
    producers = temp_producers(program)
    out: dict[str, UnifiedBuffer] = {}
    for tname, stmt in producers.items():
        t = program.tensor(tname)
        pts = grid(stmt)
        times = schedule.times(stmt.name, pts) + latency[stmt.name]
        flat = np.ravel_multi_index(indices(stmt.write, pts), t.shape)
        if stmt.accumulate:  # the PE accumulates; the buffer sees the final value once
            last = np.full(t.size, -1, dtype=np.int64)
            np.maximum.at(last, flat, times)
            flat = np.nonzero(last >= 0)[0]
            times = last[flat]
        order = np.argsort(times, kind="stable")
        out[tname] = UnifiedBuffer(tname, t.shape, Port(f"{tname}.in", stmt.name, stmt.write.text(), times[order], flat[order]))
    for stmt in program.statements:
        pts = None
        for k, acc in enumerate(stmt.reads):
            if acc.tensor not in out:
                continue
            pts = grid(stmt) if pts is None else pts
            ub = out[acc.tensor]
            times = schedule.times(stmt.name, pts)
            flat = np.ravel_multi_index(indices(acc, pts), ub.shape)
            order = np.argsort(times, kind="stable")
            ub.reads.append(Port(f"{acc.tensor}.{stmt.name}.{k}", stmt.name, acc.text(), times[order], flat[order]))
    return list(out.values())
