"""CP-SAT and a MILP backend (SCIP) agree on the optimal partition of the apps at their default factor.

Apps left out, with the reason (measured on this shared 2-core machine, see the study and benchmark):
blackscholes and lattice — no backend proves the optimum within 30 s (gap and bound in the study);
kmeans, lstm — CP-SAT proves them in seconds but the MILP backends need more than this test's budget
(the study and ``bench/sara_partition_bench.py`` record them).
"""

from __future__ import annotations

import functools

import pytest

from solvermap.formulations import partition as formulation
from solvermap.formulations.problems.partition import objective
from solvermap.formulations.solver import SolverConfig, Status
from solvermap.hardware.checks.partition import check
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.mappers.plasticine import decomposition, lowering, traversal

AGREE = ["dotproduct", "outerproduct", "tpchq6", "gda", "gemm", "logreg", "sgd", "gru", "lenet"]


@functools.cache
def problem_and_hint(app: str):
    spec = load_target("plasticine")
    graph, _ = decomposition.decompose(build(app, "plasticine").ir, spec)
    problem = lowering.partition_problem(graph, spec)
    hints = [h(problem) for h in traversal.partition_baselines(problem).values()]
    return problem, min((h for h in hints if check(problem, h).ok), key=lambda h: objective(problem, h))


@functools.cache
def optimum(app: str, backend: str) -> float:
    problem, hint = problem_and_hint(app)
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=30), hint)
    assert solved.result.status == Status.OPTIMAL, (app, backend, solved.result)
    assert check(problem, solved.decision).ok
    return solved.result.objective


@pytest.mark.parametrize("app", AGREE)
def test_cpsat_and_scip_agree_on_the_optimal_partition(app):
    assert optimum(app, "cpsat") == pytest.approx(optimum(app, "scip"))


@pytest.mark.parametrize("app", AGREE)
def test_solver_never_uses_more_pbs_than_the_best_heuristic(app):
    problem, hint = problem_and_hint(app)
    assert optimum(app, "cpsat") <= objective(problem, hint)
