"""CP-SAT and a MILP backend (SCIP) agree on the optimal partition of the apps at their default factor.

Joint optimum (partitions + retiming partitions): every app whose MILP solve fits this test's budget. lattice:
CP-SAT proves 18 with the zero-retiming model of phase B; SCIP's phase-A partition already needs no retiming.
kmeans: SCIP proves 40 in 16 s once the wall-clock backstop is out of the way (see
``_deterministic_budget_only``). Left out of this comparison from the heuristic's warm start, with the reason
(``bench/sara_partition_bench.py --part backends``, ``bench_backends.csv``): blackscholes — CP-SAT proves 16
(14 partitions + 2 retiming) in about 14 s with the capped slot models, the MILP backends do not. Their phase
B (``retiming_search="auto"``: the delay relaxation and the neighbourhood search) ends at 17 with bound 15 on
HiGHS and SCIP within a 30 s budget (the slot models: HiGHS 23, SCIP 20, bound 14). The relaxation proves cost
> 15 with a larger budget (SCIP 10 s standalone, HiGHS minimises it to 16 in about 25 s), but no search found
a 16 reliably: SCIP's slot model with at most 2 retiming bins on 14 slots finds nothing in 300 s, and the
neighbourhood search stalls at 17, a partition that differs from the optimum in most bins (8-bin windows with
20 s each reached 16 in 84 s once; 7-bin windows with 10 s each reached 16 in 100 s with one of three seeds,
17 and 19 after 5 minutes with the others). Warm-started with CP-SAT's partition, SCIP proves 16 optimal
(``test_scip_proves_the_cpsat_optimum_of_blackscholes``): a certification, not
an independent agreement, which issue #3 still asks for.
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

AGREE = ["dotproduct", "outerproduct", "tpchq6", "lattice", "gda", "gemm", "kmeans", "logreg", "sgd", "lstm", "gru", "lenet"]


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


@pytest.mark.parametrize("app", [pytest.param(a, marks=pytest.mark.slow) if a == "kmeans" else a for a in AGREE])
def test_cpsat_and_scip_agree_on_the_optimal_partition(app):
    assert optimum(app, "cpsat") == pytest.approx(optimum(app, "scip"))


@pytest.mark.parametrize("app", AGREE)
def test_solver_never_uses_more_pbs_than_the_best_heuristic(app):
    problem, hint = problem_and_hint(app)
    assert optimum(app, "cpsat") <= objective(problem, hint)


@pytest.mark.slow
def test_scip_proves_the_cpsat_optimum_of_blackscholes():
    """blackscholes, left out above: SCIP does not find the optimum 16 from the heuristic's warm start
    (17, bound 15), but warm-started with CP-SAT's partition it proves it optimal with its own models —
    phase A (14 bins), then the delay relaxation refutes cost ≤ 14 and ≤ 15 (about 50 s). A certification of
    CP-SAT's optimum, not an independent agreement."""
    problem, _ = problem_and_hint("blackscholes")
    cpsat = proven("blackscholes", "cpsat")
    assert cpsat.result.objective == 16 <= objective(problem, problem_and_hint("blackscholes")[1])
    scip = formulation.solve(problem, SolverConfig(backend="scip", time_limit_s=60, threads=1), cpsat.decision)
    assert scip.result.status == Status.OPTIMAL and check(problem, scip.decision).ok
    assert scip.result.objective == pytest.approx(16) and scip.result.bound == pytest.approx(16)
    assert [p["phase"] for p in scip.details["phases"]][-2:] == ["B (level <= 14)", "B (level <= 15)"]
