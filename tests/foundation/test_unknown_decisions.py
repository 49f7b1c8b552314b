"""A solve that stops at its budget with no solution and no proof is *unknown*, not infeasible: it is retried
with a larger budget up to ``ctx.retries`` times, then reported with an UnknownError."""

from __future__ import annotations

import pytest

from solvermap.errors import InfeasibleError, UnknownError
from solvermap.formulations.decision import Solved
from solvermap.formulations.solver import SolverConfig, SolveResult, Status
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build

from . import toy_family


def _decision(solve):
    from solvermap.mappers.pipeline import Decision, DecisionOptions

    return Decision("pick", "", "milp", toy_family.Problem, frozenset, DecisionOptions, solve, toy_family.objective,
                    toy_family.check, ("tests.foundation.toy_family",), sense="max")


def _context(retries: int):
    from solvermap.mappers.pipeline import Context

    return Context(workload=build("toy_items", "toy"), target=load_target("plasticine"),
                   solver=SolverConfig(time_limit_s=10, work_limit=2), retries=retries, retry_factor=3)


def _problem():
    return toy_family.Problem(toy_family.toy_items(6), 10)


def test_a_timeout_without_solution_or_baseline_is_an_unknown_error_not_infeasible():
    from solvermap.mappers.pipeline import run_decision

    decision = _decision(lambda p, c, h, o: Solved(SolveResult(Status.TIMEOUT_NO_SOLUTION), None))
    with pytest.raises(UnknownError, match="pick: no solution within the budget of 2") as caught:
        run_decision(_context(0), decision, _problem())
    assert not isinstance(caught.value, InfeasibleError)


def test_an_unknown_solve_is_retried_with_a_larger_budget_until_the_limit():
    from solvermap.mappers.pipeline import run_decision

    budgets = []

    def solve(problem, config, hint, options):
        budgets.append((config.work_limit, config.time_limit_s))
        return Solved(SolveResult(Status.TIMEOUT_NO_SOLUTION), None)

    with pytest.raises(UnknownError, match=r"budget of 18 \(and 2 retries up to it\)"):
        run_decision(_context(2), _decision(solve), _problem())
    assert budgets == [(2, 10), (6, 30), (18, 90)]


def test_a_retry_that_finds_a_solution_is_used_and_recorded():
    from solvermap.mappers.pipeline import run_decision

    def solve(problem, config, hint, options):
        if config.work_limit < 6:
            return Solved(SolveResult(Status.TIMEOUT_NO_SOLUTION), None)
        return Solved(SolveResult(Status.FEASIBLE, 7.0), frozenset({0}))

    used, record = run_decision(_context(3), _decision(solve), _problem())
    assert used == frozenset({0}) and record.details["retries"] == 1 and record.details["budget"] == 6


def test_a_proven_infeasible_solve_is_not_retried():
    from solvermap.mappers.pipeline import run_decision

    calls = []

    def solve(problem, config, hint, options):
        calls.append(config.work_limit)
        return Solved(SolveResult(Status.INFEASIBLE), None, ("capacity",))

    with pytest.raises(InfeasibleError, match="conflicting constraint groups: capacity"):
        run_decision(_context(2), _decision(solve), _problem())
    assert calls == [2]
