"""The decision protocol: build model → solve → decode (the checker and baselines live elsewhere).

A formulation module exposes::

    NAME: str                                   # e.g. "partition"
    KIND: str                                   # "milp" | "cpsat" | "convex" (which backends apply)
    def solve(problem, config, hint=None) -> Solved

Most formulations are one model solved once; they write ``build`` and ``decode`` and define
``solve`` with :func:`one_shot`::

    def build(problem, config, hint) -> ModelBuilder | CpSatModel | ConvexModel
    def decode(problem, built, solution) -> Decision
    def solve(problem, config, hint=None): return one_shot(build, decode, problem, config, hint)

Iterative formulations (lexicographic objectives, no-good cuts, binary search on an initiation
interval) write ``solve`` themselves from the same pieces and sum the solve statistics with
:func:`combine`. An optional ``diagnose(problem) -> str | None`` names the element that makes a
problem infeasible before any model is built (e.g. "node n needs 5 vector inputs, a PCU has 4").
A formulation never imports a checker, a simulator or another formulation, and does no I/O.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from solvermap.formulations.solver import (
    ModelBuilder,
    SolveResult,
    SolverConfig,
    Status,
    explain_infeasible,
    relative_gap,
    solve_convex,
    solve_cpsat,
    solve_milp,
)

D = TypeVar("D")


@dataclass
class CpSatModel:
    """A native CP-SAT model plus the handles ``decode`` needs (``vars``), built at ``created``."""

    model: Any
    vars: Any = None
    created: float = field(default_factory=time.perf_counter)


@dataclass
class ConvexModel:
    """A cvxpy problem plus the handles ``decode`` needs (``vars``)."""

    problem: Any
    vars: Any = None
    created: float = field(default_factory=time.perf_counter)


@dataclass
class Solved(Generic[D]):
    """What a formulation returns: the solve record, the decoded decision (None without a solution),
    a group-level infeasibility explanation when infeasible, and formulation-specific details."""

    result: SolveResult
    decision: D | None
    explanation: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


def solve_model(built: Any, config: SolverConfig) -> tuple[SolveResult, Any]:
    """Dispatch a built model to the facade; returns the record and what ``decode`` reads."""
    if isinstance(built, ModelBuilder):
        solution = solve_milp(built, config)
        return solution.result, solution
    if isinstance(built, CpSatModel):
        result, solver = solve_cpsat(built.model, config, build_seconds=time.perf_counter() - built.created)
        return result, solver
    if isinstance(built, ConvexModel):
        result = solve_convex(built.problem, config, build_seconds=time.perf_counter() - built.created)
        return result, built.problem
    builder = getattr(built, "builder", None)
    if isinstance(builder, ModelBuilder):
        solution = solve_milp(builder, config)
        return solution.result, solution
    raise TypeError(f"cannot solve a {type(built).__name__}; expected ModelBuilder, CpSatModel or ConvexModel")


def one_shot(
    build: Callable[[Any, SolverConfig, Any], Any],
    decode: Callable[[Any, Any, Any], D],
    problem: Any,
    config: SolverConfig,
    hint: D | None = None,
    *,
    explain: bool = True,
) -> Solved[D]:
    """Build once, solve once, decode; on infeasibility explain which constraint groups conflict."""
    built = build(problem, config, hint)
    result, solution = solve_model(built, config)
    decision = decode(problem, built, solution) if result.status.has_solution else None
    explanation: list[str] = []
    builder = built if isinstance(built, ModelBuilder) else getattr(built, "builder", None)
    if result.status == Status.INFEASIBLE and explain and isinstance(builder, ModelBuilder):
        explanation = explain_infeasible(builder, config)
    details = {"model_size": builder.size()} if isinstance(builder, ModelBuilder) else {}
    return Solved(result, decision, explanation, details)


def rescaled(result: SolveResult, scale: float) -> SolveResult:
    """``result`` with objective and bound multiplied by ``scale`` (in place): for models that minimise a
    normalised objective because solver tolerances are absolute (energies of ~1e-10 J)."""
    for key in ("objective", "bound"):
        value = getattr(result, key)
        if value is not None:
            setattr(result, key, value * scale)
    return result


def combine(results: list[SolveResult], final: SolveResult | None = None) -> SolveResult:
    """One record for a sequence of solves: times and work summed, status/objective/bound from ``final``."""
    last = final or results[-1]
    return SolveResult(
        status=last.status,
        objective=last.objective,
        bound=last.bound,
        gap=relative_gap(last.objective, last.bound) if last.status.has_solution else None,
        build_seconds=sum(r.build_seconds for r in results),
        solve_seconds=sum(r.solve_seconds for r in results),
        backend=last.backend,
        solver_version=last.solver_version,
        limit_reached=any(r.limit_reached for r in results),
        message=last.message,
        work=sum(r.work for r in results),
        backstop_fired=any(r.backstop_fired for r in results + [last]),
    )
