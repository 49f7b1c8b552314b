"""CP-SAT and a MILP backend (SCIP) agree on the optimal partition of the apps at their default factor.

Joint optimum (partitions + retiming partitions), each backend from the best heuristic's warm start with
its own models. lattice: CP-SAT proves 18 with the zero-retiming model of phase B; SCIP's phase-A partition
already needs no retiming. kmeans: SCIP proves 40 in 16 s once the wall-clock backstop is out of the way
(see ``_deterministic_budget_only``). blackscholes: CP-SAT proves 16 (14 partitions + 2 retiming) with the
capped slot models in about 14 s. SCIP gets there by phase B on columns (``retiming_search="auto"``):
- the layered column model finds 17 with 8 layers, then 16 with 9 (about 28 s);
- the delay relaxation refutes cost ≤ 14 and ≤ 15 (about 40 s).
About 130 s wall in all, 55 s of it in phase A (40 s in its first slot-model solve).
"""

from __future__ import annotations

import dataclasses
import functools

import pytest

from solvermap.formulations import partition as formulation
from solvermap.formulations import solver
from solvermap.formulations.problems.partition import objective
from solvermap.formulations.solver import SolverConfig, Status
from solvermap.hardware.checks.partition import check
from solvermap.hardware.targets import load_target
from solvermap.ir.workloads import build
from solvermap.mappers.plasticine import decomposition, lowering, traversal

AGREE = ["dotproduct", "outerproduct", "blackscholes", "tpchq6", "lattice", "gda", "gemm", "kmeans", "logreg", "sgd",
         "lstm", "gru", "lenet"]
SLOW = {"blackscholes", "kmeans"}


@pytest.fixture(autouse=True)
def _deterministic_budget_only(monkeypatch):
    """The deterministic budget alone decides, not the wall-clock backstop (4 × the budget + 2 s per solve):
    SCIP's quick slot solve of kmeans's "distance" actor (2 s = 2,000 nodes) takes 16 s here, so the default
    backstop cuts it at 10 s and what follows depends on machine load (108 s on an idle machine; the test
    failed once with other jobs on the same two cores). With the backstop far away: 16 s, every time."""
    monkeypatch.setattr(solver, "WALL_BACKSTOP", 20.0)


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


@pytest.mark.parametrize("app", [pytest.param(a, marks=pytest.mark.slow) if a in SLOW else a for a in AGREE])
def test_cpsat_and_scip_agree_on_the_optimal_partition(app):
    assert optimum(app, "cpsat") == pytest.approx(optimum(app, "scip"))


@pytest.mark.parametrize("app", AGREE)
def test_solver_never_uses_more_pbs_than_the_best_heuristic(app):
    problem, hint = problem_and_hint(app)
    assert optimum(app, "cpsat") <= objective(problem, hint)
