"""PROMISE swing selection under a mismatch-probability budget (seed 000 §4.3.4, L780–809): problem, decision.

Tasks t (PROMISE AbstractTasks) each take a swing level s ∈ 1..7. Two sources for the accuracy cost of a swing:

``sakr`` (DNNs, L792–807)
    Eq. 4.2 gives the output precision a swing guarantees: b(t,s) = the largest integer B with
    2.6·f(s)/√N_t < 1/2^(B+1). Sakr's bound p_m ≤ Δ_A²E_A + Δ_W²E_W, with Δ = 2^−(B−1), is split over the tasks:
    q(t,s) = E_A,t · 4^(1 − b(t,s)). The budget is p_m − 4^(1 − B_W)·E_W with B_W = 7 (L805). The per-task split is
    an assumption (digest §3.5): the seed states only the aggregate bound.
``measured`` (single-task kernels and a check for DNNs, L809)
    q(t,s) = the decision-mismatch rate that the functional simulator measures with task t at swing s and
    every other task exact. The budget is p_m.

``energy[t][s]`` is the task's energy at swing s. ``verify(levels)`` is an optional joint functional check:
it returns the mismatch measured with every task at its chosen swing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

LEVELS = tuple(range(1, 8))


def precision_bits(dot_length: int, f: float) -> int:
    """Largest B with 2.6·f/√N < 2^−(B+1) (eq. 4.2); may be ≤ 0 for very noisy swings."""
    value = math.log2(math.sqrt(dot_length) / (2.6 * f)) - 1.0
    return math.ceil(value) - 1


def sakr_cost(e_a: float, bits: int) -> float:
    return e_a * 4.0 ** (1 - bits)


@dataclass(frozen=True)
class SwingProblem:
    tasks: tuple[str, ...]
    energy: Mapping[str, Mapping[int, float]]
    q: Mapping[str, Mapping[int, float]]
    budget: float
    source: str = "sakr"  # or "measured"
    p_m: float = 0.01
    dot_length: Mapping[str, int] = field(default_factory=dict)
    f: tuple[float, ...] = ()
    e_a: Mapping[str, float] = field(default_factory=dict)
    e_w: float = 0.0
    weight_bits: int = 7
    verify: Callable[[Mapping[str, int]], float] | None = field(default=None, compare=False)
    max_candidates: int = 30


@dataclass(frozen=True)
class SwingDecision:
    levels: Mapping[str, int]
    mismatch_bound: float = 0.0  # Σ q of the chosen swings
    measured_mismatch: float | None = None


def objective(problem: SwingProblem, decision: SwingDecision) -> float:
    return sum(problem.energy[t][int(decision.levels[t])] for t in problem.tasks)


def bound(problem: SwingProblem, levels: Mapping[str, int]) -> float:
    return sum(problem.q[t][int(levels[t])] for t in problem.tasks)
