"""CP-SAT and a MILP backend (SCIP) agree on the optimal partition of the apps at their default factor.

Joint optimum (partitions + retiming partitions), each backend from the best heuristic's warm start with
its own models, on the default deterministic budget. The apps whose proofs take tens of seconds to minutes
(blackscholes, kmeans, lattice) are compared by ``bench/sara_partition_bench.py --part agreement``
(``bench_agreement.csv``), not here: the suite stays fast on two cores.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest

from solvermap.formulations import partition as formulation
from solvermap.formulations.problems.partition import objective
from solvermap.formulations.solver import SolverConfig, Status
from solvermap.hardware.checks.partition import check
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.mappers.plasticine import decomposition, lowering, traversal

AGREE = ["dotproduct", "outerproduct", "tpchq6", "gda", "gemm", "logreg", "sgd", "lstm", "gru", "lenet"]


@functools.cache
def problem_and_hint(app: str, retiming: bool = True):
    spec = load_target("plasticine")
    graph, _ = decomposition.decompose(build(app, "plasticine").ir, spec)
    problem = lowering.partition_problem(graph, spec)
    if not retiming:
        problem = dataclasses.replace(problem, retiming=None,
                                      weights=dataclasses.replace(problem.weights, retiming=0.0))
    hints = [h(problem) for h in traversal.partition_baselines(problem).values()]
    return problem, min((h for h in hints if check(problem, h).ok), key=lambda h: objective(problem, h))


@functools.cache
def proven(app: str, backend: str):
    problem, hint = problem_and_hint(app)
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=30, threads=1), hint)
    assert solved.result.status == Status.OPTIMAL, (app, backend, solved.result)
    assert check(problem, solved.decision).ok
    return solved


def optimum(app: str, backend: str) -> float:
    return proven(app, backend).result.objective


@pytest.mark.parametrize("app", AGREE)
def test_cpsat_and_scip_agree_on_the_optimal_partition(app):
    assert not proven(app, "scip").result.backstop_fired
    assert optimum(app, "cpsat") == pytest.approx(optimum(app, "scip"))


@pytest.mark.parametrize("app", AGREE)
def test_solver_never_uses_more_pbs_than_the_best_heuristic(app):
    problem, hint = problem_and_hint(app)
    assert optimum(app, "cpsat") <= objective(problem, hint)
