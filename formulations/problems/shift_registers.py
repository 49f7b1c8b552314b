"""Shift-register introduction (seed 001 D6, 001:L256): problem, decision and objective.

Per unified buffer: the input port (root) writes every value once; each output port either has a
constant *distance* D_k (read time − availability, the same for every operation) or not. A constant-
distance port can be a *tap* on a delay line of the input stream: fed from the root or from another tap j
with D_j ≤ D_k through a wire (δ = 0), a shift register of δ = D_k − D_j stages (δ ≤ the SR limit), or a
memory delay line (δ ≥ the SRAM-path minimum). A port without constant distance is *random*: served by
the buffer's root memory through its address generator. Every tap carries the whole input stream
delayed, so the seed's superset condition holds by construction.

Objective (area, µm²): register_area · Σ SR stages + port_area · Σ memory read ports
+ Σ_memories (tile_area + word_area · words),
where a memory fed from tap j holds the largest delay of its memory edges (and the random ports'
lifetime words when j is the root). ``words(δ)`` is the largest number of input values in any δ-cycle
window (exact, from the input port's times).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ROOT = ""  # the input port as a source


@dataclass(frozen=True)
class TapPort:
    name: str
    distance: int | None  # None: not constant → random port


@dataclass(frozen=True, eq=False)
class BufferPorts:
    buffer: str
    ports: tuple[TapPort, ...]
    min_memory_delay: int
    random_words: int  # lifetime words the root memory needs for random ports (0: none)
    write_times: np.ndarray = field(repr=False)  # sorted availability times of the input port
    port_streams: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)  # name → (times, elements)
    avail: np.ndarray = field(default=None, repr=False)  # per flat element availability (−1: never written)

    def words(self, delay: int) -> int:
        """Largest number of input values inside any window of ``delay`` cycles."""
        if delay <= 0 or len(self.write_times) == 0:
            return 0
        t = self.write_times
        return int(np.max(np.searchsorted(t, t + delay, side="left") - np.arange(len(t))))


@dataclass(frozen=True)
class ShiftRegisterProblem:
    buffers: tuple[BufferPorts, ...]
    max_shift_register: int
    register_area: float
    word_area: float
    memory_area: float
    port_area: float = 0.0  # a memory read port: its transpose buffer (tb_words registers)
    name: str = "shift_registers"


@dataclass(frozen=True)
class Edge:
    source: str  # ROOT or a port name
    kind: str  # wire | sr | mem | random
    delay: int  # stages (sr), cycles (mem), 0 (wire/random)


@dataclass(frozen=True)
class ShiftRegisterPlan:
    edges: Mapping[str, Mapping[str, Edge]]  # buffer → port → edge
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        return {b: {p: [e.source or "<in>", e.kind, e.delay] for p, e in ports.items()} for b, ports in self.edges.items()}


def memories_of(buffer: BufferPorts, edges: Mapping[str, Edge]) -> dict[str, int]:
    """Memory source (ROOT or tap) → words it must hold (largest delay window / random lifetimes)."""
    out: dict[str, int] = {}
    for port, e in edges.items():
        if e.kind == "mem":
            out[e.source] = max(out.get(e.source, 0), buffer.words(e.delay))
        elif e.kind == "random":
            out[ROOT] = max(out.get(ROOT, 0), buffer.random_words)
    return out


def objective(problem: ShiftRegisterProblem, plan: ShiftRegisterPlan) -> float:
    cost = 0.0
    for b in problem.buffers:
        edges = plan.edges.get(b.buffer, {})
        cost += problem.register_area * sum(e.delay for e in edges.values() if e.kind == "sr")
        cost += problem.port_area * sum(1 for e in edges.values() if e.kind in ("mem", "random"))
        for words in memories_of(b, edges).values():
            cost += problem.memory_area + problem.word_area * words
    return round(cost, 6)


def counts(plan: ShiftRegisterPlan) -> dict[str, int]:
    sr = sum(e.delay for ports in plan.edges.values() for e in ports.values() if e.kind == "sr")
    chains = sum(1 for ports in plan.edges.values() for e in ports.values() if e.kind == "sr")
    mems = sum(len({e.source for e in ports.values() if e.kind in ("mem", "random")}) for ports in plan.edges.values())
    return {"sr_stages": sr, "sr_edges": chains, "memories": mems}
