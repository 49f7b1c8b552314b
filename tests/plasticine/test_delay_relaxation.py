"""Phase B by columns (LP-based backends): the delay relaxation bounds, the neighbourhood search answers."""

from __future__ import annotations

import dataclasses

import pytest

from solvermap.errors import ConfigError
from solvermap.formulations import partition as formulation
from solvermap.formulations.partition import delay_relaxation, solves, two_phase
from solvermap.formulations.problems.partition import Retiming, objective
from solvermap.formulations.solver import SolverConfig, Status, solve_milp
from solvermap.hardware.checks.partition import check

from . import instances
from .enumeration import optimum
from .test_partition_model import BACKENDS, ZERO_RETIMING_CASES, _one_bin_each


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(ZERO_RETIMING_CASES))
def test_delay_relaxation_never_refutes_a_level_the_optimum_reaches(case, backend):
    """A relaxation: its minimum is at most the enumerated optimum, and the level "≤ optimum" is satisfiable
    (a refuted level is a certified bound only because of this)."""
    problem = ZERO_RETIMING_CASES[case]()
    expected = optimum(problem)
    columns = formulation.convex_bins(problem)
    config = SolverConfig(backend=backend, time_limit_s=20)
    relaxed = solves.solve_level(problem, config, _one_bin_each(problem), columns, None, None)
    assert relaxed.result.status == Status.OPTIMAL and relaxed.result.objective <= expected + 1e-9
    level = solves.solve_level(problem, config, _one_bin_each(problem), columns, None, expected)
    assert level.result.status == Status.OPTIMAL


@pytest.mark.parametrize("backend", BACKENDS)
def test_delay_relaxation_refutes_a_level_below_the_optimum(backend):
    """two-skips: 3 bins and each skip waits one cycle beyond its hop, so no solution costs ≤ 4."""
    problem = instances.two_skips()
    columns = formulation.convex_bins(problem)
    config = SolverConfig(backend=backend, time_limit_s=20)
    assert optimum(problem) == 5
    refuted = solves.solve_level(problem, config, _one_bin_each(problem), columns, None, 4)
    assert refuted.result.status == Status.INFEASIBLE


TIE_CASES = {**ZERO_RETIMING_CASES, "drifting-reader": instances.drifting_reader}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(TIE_CASES))
def test_tied_delay_relaxation_lies_between_the_untied_one_and_the_optimum(case, backend):
    """Every bin at one delay (``tie``) is a row every solution satisfies: still a relaxation, never below
    the untied one."""
    problem = TIE_CASES[case]()
    expected = optimum(problem)
    columns = formulation.convex_bins(problem)
    config = SolverConfig(backend=backend, time_limit_s=20)
    loose = solves.solve_level(problem, config, _one_bin_each(problem), columns, None, None)
    tied = solves.solve_level(problem, config, _one_bin_each(problem), columns, None, None, tie=True)
    assert tied.result.status == Status.OPTIMAL
    assert loose.result.objective - 1e-9 <= tied.result.objective <= expected + 1e-9
    assert check(problem, tied.decision).ok and objective(problem, tied.decision) >= expected - 1e-9
    assert solves.solve_level(problem, config, _one_bin_each(problem), columns, None, expected,
                              tie=True).result.status == Status.OPTIMAL


@pytest.mark.parametrize("backend", BACKENDS)
def test_tying_each_bin_to_one_delay_stops_a_reader_drifting_to_its_value(backend):
    """drifting-reader: untied, a runs beside q at p's delay (3, below the optimum 4); tied, level 3 is
    refuted."""
    problem = instances.drifting_reader()
    columns = formulation.convex_bins(problem)
    config = SolverConfig(backend=backend, time_limit_s=20)
    assert optimum(problem) == 4
    loose = solves.solve_level(problem, config, _one_bin_each(problem), columns, None, None)
    assert loose.result.objective == pytest.approx(3)
    refuted = solves.solve_level(problem, config, _one_bin_each(problem), columns, None, 3, tie=True)
    assert refuted.result.status == Status.INFEASIBLE


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tied_cover_at_the_relaxation_s_own_delays_is_a_checked_solution(backend):
    """decode_tied: the cover scheduled at the relaxation's delays, retiming counted per reading bin, passes
    the checker; untied rows (a bin's members at different delays) give None, not a wrong schedule."""
    problem = instances.drifting_reader()
    columns = formulation.convex_bins(problem)
    config = SolverConfig(backend=backend, time_limit_s=20)
    tied = delay_relaxation.build_delay_relaxation(problem, config, _one_bin_each(problem), columns=columns,
                                                   tie=True)
    decision = delay_relaxation.decode_tied(problem, tied, solve_milp(tied.columns.builder, config))
    assert check(problem, decision).ok and objective(problem, decision) == pytest.approx(4)
    loose = delay_relaxation.build_delay_relaxation(problem, config, _one_bin_each(problem), columns=columns)
    assert delay_relaxation.decode_tied(problem, loose, solve_milp(loose.columns.builder, config)) is None


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(ZERO_RETIMING_CASES))
def test_column_phase_b_reaches_the_enumerated_joint_optimum(case, backend):
    problem = ZERO_RETIMING_CASES[case]()
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=10), _one_bin_each(problem),
                               retiming_search="columns")
    expected = optimum(problem)
    assert check(problem, solved.decision).ok
    assert solved.result.status == Status.OPTIMAL and solved.result.objective == pytest.approx(expected)
    assert solved.result.bound == pytest.approx(expected)


@pytest.mark.parametrize("seed", [3, 5, 8])
def test_neighbourhood_search_never_ends_worse_than_its_start_and_repeats_itself(seed):
    problem = instances.random_dag(seed, n=6, retiming=Retiming(1, 0))
    start = _one_bin_each(problem)
    config = SolverConfig(backend="scip" if "scip" in BACKENDS else "cpsat", time_limit_s=5, seed=1)
    first = two_phase.neighbourhood_search(problem, config, start, 0.0, None)
    again = two_phase.neighbourhood_search(problem, config, start, 0.0, None)
    assert check(problem, first.decision).ok
    assert objective(problem, first.decision) <= objective(problem, start)

    def visited(solved):  # (wall seconds aside)
        return [{k: v for k, v in step.items() if k != "solve_seconds"} for step in solved.details["steps"]]

    assert first.decision == again.decision and visited(first) == visited(again)
    assert first.result.bound is None  # a neighbourhood proves nothing globally


def test_unknown_retiming_search_is_a_config_error():
    problem = instances.two_skips()
    with pytest.raises(ConfigError, match="retiming search"):
        formulation.solve(problem, SolverConfig(backend="cpsat"), retiming_search="levels")
    with pytest.raises(ConfigError, match="retiming search"):
        formulation.Variant("ours", "levels")


def test_delay_relaxation_rejects_fixed_delays():
    problem = instances.two_skips()
    retiming = dataclasses.replace(problem.retiming, fixed_sources=((("x", "out", ""), 0),))
    fixed = dataclasses.replace(problem, retiming=retiming)
    with pytest.raises(ConfigError, match="fixed delays"):
        formulation.build_delay_relaxation(fixed, SolverConfig(backend="cpsat"), columns=[])
