"""Replication-degree MILP: optimum by enumeration on every backend, baselines, checker mutations."""

from __future__ import annotations

import itertools

import pytest

from solvermap.formulations import replication
from solvermap.formulations.problems.replication import Replication, ReplicationProblem, crossbars_used, interval
from solvermap.formulations.solver import SolverConfig, Status
from solvermap.hardware.checks.puma_replication import check
from solvermap.mappers.puma.replication_baselines import greedy_bottleneck, no_replication
from tests.backends import PYOMO, milp_backends

PROBLEM = ReplicationProblem(("conv1", "conv2", "fc"), {"conv1": 784.0, "conv2": 100.0, "fc": 1.0},
                             {"conv1": 3, "conv2": 5, "fc": 2}, budget=22, max_degree=8)


def enumerate_best(problem):
    best = None
    for degrees in itertools.product(range(1, problem.max_degree + 1), repeat=len(problem.layers)):
        d = Replication(dict(zip(problem.layers, degrees)))
        if check(problem, d).ok:
            key = (interval(problem, d), crossbars_used(problem, d))
            best = key if best is None or key < best else best
    return best


@pytest.mark.parametrize("backend", milp_backends("cpsat", "highs", "scip", "cbc", *PYOMO))
def test_backends_find_the_enumerated_lexicographic_optimum(backend):
    solved = replication.solve(PROBLEM, SolverConfig(backend=backend, time_limit_s=20))
    assert solved.result.status == Status.OPTIMAL
    assert check(PROBLEM, solved.decision).ok
    assert (interval(PROBLEM, solved.decision), crossbars_used(PROBLEM, solved.decision)) == pytest.approx(enumerate_best(PROBLEM))


def test_greedy_bottleneck_reaches_the_optimal_interval():
    assert interval(PROBLEM, greedy_bottleneck(PROBLEM)) == pytest.approx(enumerate_best(PROBLEM)[0])


def test_no_replication_is_the_budget_floor():
    assert crossbars_used(PROBLEM, no_replication(PROBLEM)) == 10


def test_budget_below_one_replica_each_is_diagnosed():
    tight = ReplicationProblem(PROBLEM.layers, PROBLEM.work, PROBLEM.crossbars, budget=9)
    assert "budget" in replication.diagnose(tight)


def test_checker_rejects_an_over_budget_decision():
    assert check(PROBLEM, Replication({"conv1": 8, "conv2": 1, "fc": 1})).rules() == {"budget"}


def test_checker_rejects_a_zero_degree():
    assert "degree" in check(PROBLEM, Replication({"conv1": 0, "conv2": 1, "fc": 1})).rules()


def test_checker_rejects_a_missing_layer():
    assert check(PROBLEM, Replication({"conv1": 1, "conv2": 1})).rules() == {"layer"}
