"""Affine / pipeline scheduling: problem, decision and objective (shared by every target that needs it).

A *stage* (a statement, an HLS loop body, a kernel) runs its iteration points ``i`` at cycles
``t_s(i) = q_s · i + d_s``: the rates ``q_s`` are fixed before the model (rate matching, or dense
per-stage rates), except for *coarse* dimensions, whose rate is the shared initiation interval ``II`` of
a coarse-grained pipeline (seed 001:L224-L226). The model chooses the delays ``d_s`` (and ``II``).

Everything the model needs is a difference constraint with an optional ``II`` term, precomputed by the
target's dependence analysis from exact dependence offsets::

    Precedence   d[after] − d[before] ≥ const + ii_coef · II      (dependences, buffer-slot reuse)
    StageEnd     T ≥ d[stage] + const + ii_coef · II              (completion time)
    BufferTerm   W[tensor] ≥ d[consumer] − d[producer] + const + ii_coef · II,  cost weight · W

The problem also carries the loop-nest program and stage latencies so that the independent checker can
re-derive every dependence from the program itself.

Objective (the scalar that formulation, baselines and checker share): the completion time ``T`` in
cycles; the formulation breaks ties by the buffer-size proxy Σ weight·W (lexicographic, 001:L232).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Precedence:
    before: str
    after: str
    const: int
    ii_coef: int = 0
    kind: str = "dependence"  # dependence | buffer-slots
    label: str = ""


@dataclass(frozen=True)
class StageEnd:
    stage: str
    const: int
    ii_coef: int = 0


@dataclass(frozen=True)
class BufferTerm:
    tensor: str
    producer: str
    consumer: str
    const: int
    ii_coef: int = 0
    weight: float = 1.0


@dataclass(frozen=True)
class ScheduleProblem:
    stages: tuple[str, ...]
    rates: Mapping[str, tuple[int | None, ...]]  # None marks a coarse dimension (rate = II)
    latency: Mapping[str, int]
    precedences: tuple[Precedence, ...]
    ends: tuple[StageEnd, ...]
    buffers: tuple[BufferTerm, ...] = ()
    ii_bounds: tuple[int, int] | None = None  # coarse pipelines only: [lower, upper] for II
    horizon: int = 1_000_000
    pipeline: str = "stencil"  # stencil | dnn (001:L222)
    slots: int = 0  # buffer slots per coarse tile (2 = double buffering); 0 = not a coarse pipeline
    program: Any = None  # solvermap.ir.loopnest.Program, for the checker and simulator
    name: str = "schedule"
    notes: Mapping[str, Any] = field(default_factory=dict)

    @property
    def coarse(self) -> bool:
        return self.ii_bounds is not None


@dataclass(frozen=True)
class Schedule:
    """t_s(i) = rates[s] · i + delays[s]; ``ii`` is the coarse initiation interval (None: no coarse loop)."""

    rates: Mapping[str, tuple[int, ...]]
    delays: Mapping[str, int]
    completion: int
    ii: int | None = None
    source: str = ""
    slots: int = 0  # buffer slots per coarse tile the schedule respects (0: whole-tensor buffers)

    def times(self, stage: str, grid: list[np.ndarray]) -> np.ndarray:
        q = self.rates[stage]
        t = np.full(len(grid[0]) if grid else 1, self.delays[stage], dtype=np.int64)
        for rate, axis in zip(q, grid):
            t = t + int(rate) * axis
        return t

    def to_json(self) -> dict[str, Any]:
        return {"rates": {k: list(v) for k, v in self.rates.items()}, "delays": dict(self.delays),
                "completion": self.completion, "ii": self.ii, "source": self.source,
                "slots": self.slots}


def resolve_rates(problem: ScheduleProblem, ii: int | None) -> dict[str, tuple[int, ...]]:
    """Concrete rates: coarse dimensions take ``ii``."""
    out = {}
    for s, q in problem.rates.items():
        if any(r is None for r in q) and ii is None:
            raise ValueError(f"stage {s} has a coarse dimension but no II was given")
        out[s] = tuple(int(ii if r is None else r) for r in q)
    return out


def completion_of(problem: ScheduleProblem, delays: Mapping[str, int], ii: int | None) -> int:
    """T = max over StageEnd of d + const + ii_coef·II."""
    return max(int(delays[e.stage]) + e.const + e.ii_coef * int(ii or 0) for e in problem.ends)


def buffer_cost(problem: ScheduleProblem, delays: Mapping[str, int], ii: int | None) -> float:
    words: dict[str, float] = {}
    for b in problem.buffers:
        value = delays[b.consumer] - delays[b.producer] + b.const + b.ii_coef * int(ii or 0)
        words[b.tensor] = max(words.get(b.tensor, 0.0), float(value))
    weight = {b.tensor: b.weight for b in problem.buffers}
    return sum(weight[t] * max(0.0, w) for t, w in words.items())


def objective(problem: ScheduleProblem, schedule: Schedule) -> float:
    """Completion time in cycles (the scalar shared by solver, baselines and checker)."""
    return float(schedule.completion)
