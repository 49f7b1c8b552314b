"""The solve-strategy layer: one budget of deterministic work over many solves, sequences of solves with one
certified bound, and one large-neighbourhood search. Every formulation that solves more than once uses it
(partition's phases, chunks and neighbourhood search; grid placement's :func:`~solvermap.formulations.placement.improve`;
PUMA's hierarchical placement and its certified bound).

Work (the unit of every budget) is what the solves report (``SolveResult.work``, :mod:`.solver.config`):
CP-SAT's deterministic time; for HiGHS, SCIP, Gurobi and CBC max(nodes / 1,000, simplex iterations /
25,000) (:func:`~solvermap.formulations.solver.lp_work`); convex solves their iterations / 100. One solve is
charged :func:`spent_by`: its reported work, at least ``MIN_SOLVE_WORK`` (building and loading a model is
not free, so a run of many tiny solves still ends) and at most its work budget — its whole budget when a
limit stopped it.
Nothing here reads the wall clock to decide an answer: a deterministic :class:`Budget` counts only charged
work (each solve keeps the facade's own wall-clock backstop, and a solve it stopped marks the budget's
``backstop_fired``). A config with ``deterministic=False`` counts wall seconds instead.

API
    ``Budget(config)``            the budget ``config.budget()`` (None = unlimited): ``work_limit`` when given, else
                                  ``time_limit_s``, in work units (wall seconds when not deterministic)
    ``budget.share(f, floor, cap)`` ``config`` limited to f × what is left (at least ``floor``, at most ``cap``),
                                  through ``config.with_budget`` (a share never keeps the parent's ``work_limit``)
    ``budget.portion(f, floor)``  ``config`` limited to f × the total, never more than is left
    ``budget.charge(work)`` / ``budget.charge_solve(result, given)``   spend work
    ``budget.left()`` / ``budget.elapsed()`` / ``budget.exhausted(floor)``
    ``sequence(results, value, bound, message)``  one record for solves that together give ``value`` with
                                  the certified lower bound ``bound`` (optimal when they meet)
    ``lns(budget, start, value, neighbourhoods, solve, ...)``  fix-and-optimise from ``start``
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from solvermap.formulations.solver.config import BACKSTOP_MESSAGE, SolveResult, SolverConfig, Status, relative_gap

D = TypeVar("D")
N = TypeVar("N")

MIN_SOLVE_WORK = 0.05  # work charged for any solve at least: the order of building and loading a small model


def spent_by(result: SolveResult, given: SolverConfig, floor: float = MIN_SOLVE_WORK) -> float:
    """The work one solve under ``given`` is charged: its reported work, at least ``floor`` (default
    ``MIN_SOLVE_WORK``) and at most its work budget — exactly the budget when a limit stopped it (the work
    limit, or the backstop: then charged as if by the limit); a node limit does not stop simplex iterations,
    so a count may exceed the budget, and a solve never costs more than it was given. Wall seconds when not
    deterministic. A caller that re-solves models it built once (a column generation's master and pricing
    problems) may pass a smaller ``floor``: building is then not paid again at every solve."""
    if not given.deterministic:
        return result.solve_seconds
    work = result.work
    budget = given.work_budget()
    if budget is not None:
        work = budget if result.limit_reached else min(work, budget)
    return max(floor, work)


class Budget:
    """One budget (``config.budget()`` work units; None = unlimited) spent by many solves. Deterministic
    configs count only charged work, so the split between solves — and the answer — does not depend on
    machine load; non-deterministic configs count wall seconds."""

    def __init__(self, config: SolverConfig) -> None:
        self.config = config
        self.total: float | None = config.budget()
        self.deterministic = config.deterministic
        self.start = time.perf_counter()
        self.spent = 0.0
        self.backstop_fired = False

    def charge(self, work: float) -> None:
        """Spend ``work`` (never refunds)."""
        self.spent += max(0.0, float(work))

    def charge_solve(self, result: SolveResult, given: SolverConfig, floor: float = MIN_SOLVE_WORK) -> float:
        """Spend what one solve under ``given`` is charged (:func:`spent_by`, at least ``floor``); returns it."""
        work = spent_by(result, given, floor)
        self.charge(work)
        self.backstop_fired = self.backstop_fired or result.backstop_fired
        return work

    def elapsed(self) -> float:
        return self.spent if self.deterministic else time.perf_counter() - self.start

    def left(self) -> float | None:
        """Work left (None: unlimited). Never the wall clock when deterministic: each solve has its own
        backstop (the facade's), and a budget cut short by wall time would make the answer depend on load."""
        if self.total is None:
            return None
        return self.total - self.elapsed()

    def exhausted(self, floor: float = MIN_SOLVE_WORK) -> bool:
        left = self.left()
        return left is not None and left < floor

    def share(self, fraction: float = 1.0, *, floor: float = MIN_SOLVE_WORK, cap: float | None = None,
              config: SolverConfig | None = None) -> SolverConfig:
        """``config`` (default: the budget's) limited to ``fraction`` of what is left, at least ``floor`` and
        at most ``cap``; unchanged when the budget is unlimited."""
        base = config or self.config
        left = self.left()
        if left is None:
            return base
        work = left * fraction if cap is None else min(left * fraction, cap)
        return base.with_budget(max(floor, work))

    def portion(self, fraction: float, *, floor: float = 0.2, config: SolverConfig | None = None) -> SolverConfig:
        """``config`` limited to ``fraction`` of the total, never more than is left (at least ``floor``)."""
        base = config or self.config
        if self.total is None:
            return base
        return base.with_budget(max(floor, min(self.total * fraction, self.left())))


def sequence(results: list[SolveResult], value: float | None, bound: float | None, message: str = "",
             *, backend: SolveResult | None = None, rel_tol: float = 0.0) -> SolveResult:
    """One record for a sequence of solves (minimisation) whose best answer costs ``value`` and whose certified
    lower bound is ``bound`` (None: none known): optimal when they meet within 1e-9 (or ``rel_tol`` ×
    max(1, |value|)), the bound capped at the value; feasible otherwise; no answer: timeout-no-solution.
    Times and work summed; a limit reached when any solve reached one; the backstop fired when any solve's
    did. ``backend``: the record whose backend is named (default the last)."""
    last = backend or results[-1]
    out_bound = bound if bound is not None and math.isfinite(bound) else None
    if value is None:
        status = Status.TIMEOUT_NO_SOLUTION
    elif out_bound is None:
        status = Status.FEASIBLE
    else:
        out_bound = min(out_bound, value)
        status = Status.OPTIMAL if value <= out_bound + max(1e-9, rel_tol * max(1.0, abs(value))) else Status.FEASIBLE
    fired = any(r.backstop_fired for r in results)
    notes = "; ".join(m for m in (message, BACKSTOP_MESSAGE if fired and BACKSTOP_MESSAGE not in message else "") if m)
    return SolveResult(status, value, out_bound, relative_gap(value, out_bound) if status.has_solution else None,
                       build_seconds=sum(r.build_seconds for r in results),
                       solve_seconds=sum(r.solve_seconds for r in results),
                       backend=last.backend, solver_version=last.solver_version,
                       limit_reached=any(r.limit_reached for r in results), message=notes,
                       work=sum(r.work for r in results), backstop_fired=fired)


# ------------------------------------------------------------------------------ large-neighbourhood search


@dataclass
class LnsState(Generic[D]):
    """The search as its neighbourhood generator sees it between rounds: the incumbent, its value, the
    rounds run, how the last round ended (``improved`` | ``kept`` | ``no-solution`` | ``skipped``), the
    trajectory (work, value) of improvements and every solve's record."""

    best: D
    value: float
    rounds: int = 0
    outcome: str = ""
    spent: bool = False
    trajectory: list[tuple[float, float]] = field(default_factory=list)
    results: list[SolveResult] = field(default_factory=list)


@dataclass
class Step(Generic[D]):
    """What one neighbourhood solve gives :func:`lns`: a whole candidate (None without one), the record."""

    candidate: D | None
    result: SolveResult


def lns(budget: Budget, start: D, value: Callable[[D], float], neighbourhoods: Callable[[LnsState[D]], Iterator[N]],
        solve: Callable[[N, SolverConfig], Step[D] | None], *, step_cap: Callable[[N], float | None] | float | None = None,
        floor: float = MIN_SOLVE_WORK, lower: float = -math.inf, rounds: int | None = None) -> LnsState[D]:
    """Large-neighbourhood search (fix and optimise) from ``start``: for each neighbourhood the generator
    yields (it sees the :class:`LnsState` and may react to the last round's outcome), ``solve`` re-solves it
    under a share of the budget — what is left, at least ``floor`` and at most ``step_cap`` — and returns the
    whole candidate (or None: nothing to solve, a skipped round); a strictly better candidate becomes the
    incumbent. Stops when the generator ends, the incumbent reaches ``lower``, less than ``floor`` is left
    (``spent``) or after ``rounds`` rounds. Each solve is charged :func:`spent_by`."""
    state = LnsState(start, value(start))
    state.trajectory.append((0.0, state.value))
    for hood in neighbourhoods(state):
        if state.value <= lower + 1e-9:
            break
        left = budget.left()
        if left is not None and left < floor:
            state.spent = True
            break
        if rounds is not None and state.rounds >= rounds:
            break
        state.rounds += 1
        cap = step_cap(hood) if callable(step_cap) else step_cap
        if left is None:
            config = budget.config if cap is None else budget.config.with_(time_limit_s=cap)
        else:
            config = budget.config.with_(time_limit_s=max(floor, left if cap is None else min(left, cap)))
        step = solve(hood, config)
        if step is None:
            state.outcome = "skipped"
            continue
        budget.charge_solve(step.result, config)
        state.results.append(step.result)
        if step.candidate is None:
            state.outcome = "no-solution"
            continue
        found = value(step.candidate)
        if found < state.value - 1e-9 * max(1.0, abs(state.value)):
            state.best, state.value, state.outcome = step.candidate, found, "improved"
            state.trajectory.append((budget.elapsed(), found))
        else:
            state.outcome = "kept"
    return state


def lns_result(state: LnsState[Any], budget: Budget, bound: float | None, message: str,
               *, rel_tol: float = 0.0) -> SolveResult:
    """The record of a search (:func:`lns`): its incumbent with ``bound`` (a neighbourhood proves nothing
    globally: pass a bound known from elsewhere, or None), solve times and work summed; a limit reached
    when the budget ran out."""
    results = state.results or [SolveResult(Status.FEASIBLE, backend=budget.config.milp_backend())]
    record = sequence(results, state.value, bound, message, rel_tol=rel_tol)
    record.limit_reached = state.spent
    record.backstop_fired = record.backstop_fired or budget.backstop_fired
    return record
