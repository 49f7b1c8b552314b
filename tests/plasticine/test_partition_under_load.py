"""A partition solve whose short deterministic budget stops it gives the same answer twice beside a process
that keeps every core busy (tests/cpu_hog.py): the budget is counted in CP-SAT deterministic work, and
the wall-clock backstop stays far above it."""

from __future__ import annotations

import pytest

from solvermap.formulations import partition as formulation
from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.checks.partition import check
from tests.cpu_hog import cpu_hog
from tests.plasticine.test_app_backends import problem_and_hint

# lattice's proof needs far more than 0.5 units; the second form is the default study's (a wall cap and a work limit)
SHORT = {"time_limit_s": SolverConfig(backend="cpsat", time_limit_s=0.5, threads=1),
         "work_limit": SolverConfig(backend="cpsat", time_limit_s=30, work_limit=0.5, threads=1)}


@pytest.mark.parametrize("budget", list(SHORT))
def test_a_partition_solve_stopped_by_its_work_budget_is_the_same_twice_under_load(budget):
    problem, hint = problem_and_hint("lattice")
    with cpu_hog():
        first = formulation.solve(problem, SHORT[budget], hint)
        second = formulation.solve(problem, SHORT[budget], hint)
    assert first.result.limit_reached and not first.result.backstop_fired
    assert check(problem, first.decision).ok
    same = ("status", "objective", "bound", "work")
    assert [getattr(first.result, k) for k in same] == [getattr(second.result, k) for k in same]
    assert first.decision == second.decision
