"""Stage D of the PUMA placement: the selection by simulation among placements with no more bytes."""

from __future__ import annotations

import pytest

from solvermap.formulations.solver import SolverConfig
from solvermap.hardware.checks.puma_placement import check
from solvermap.hardware.puma.performance_sim import simulate
from solvermap.hardware.puma.placement_problem import hop_weighted_bytes, make_problem
from solvermap.mappers.puma import hierarchical_placement
from solvermap.mappers.puma.baselines import row_major
from solvermap.mappers.puma.communication import insert
from solvermap.mappers.puma.simulated_selection import select, simulated

SIMULATIONS = 40


@pytest.fixture(scope="module")
def lenet_problem(puma):
    from .conftest import prepared

    return make_problem(prepared("lenet", puma, calibrate=False)[2], puma)


@pytest.fixture(scope="module")
def work(lenet_problem):
    """Reservations of about ``SIMULATIONS`` simulations of the lenet placement."""
    return SIMULATIONS * simulated(lenet_problem, row_major(lenet_problem)).reservations


@pytest.fixture(scope="module")
def selected(lenet_problem, work):
    given = row_major(lenet_problem)
    return given, *select(lenet_problem, given, work)


def test_selected_placement_passes_the_checker_and_moves_no_more_bytes(lenet_problem, selected):
    given, chosen, _ = selected
    assert check(lenet_problem, chosen).ok
    assert hop_weighted_bytes(lenet_problem, chosen) <= hop_weighted_bytes(lenet_problem, given)


def test_selected_placement_scores_no_worse_than_the_given_one(lenet_problem, selected):
    given, chosen, _ = selected
    assert simulated(lenet_problem, chosen).value <= simulated(lenet_problem, given).value


def test_selection_improves_the_score_of_lenets_row_major_placement(lenet_problem, selected):
    """A selection that returned its input unchanged would pass the tests above; on lenet's row-major
    placement its moves lower the simulated interval x latency."""
    given, chosen, details = selected
    assert details["moves"] >= 1
    assert simulated(lenet_problem, chosen).value < simulated(lenet_problem, given).value


def test_selection_record_is_the_simulation_of_the_placement_it_returns(lenet_problem, selected):
    _, chosen, details = selected
    score = simulated(lenet_problem, chosen)
    assert (details["interval_s"], details["latency_s"]) == (score.interval_s, score.latency_s)


def test_selection_spends_its_work_and_at_most_one_simulation_more(lenet_problem, selected, work):
    details = selected[2]
    assert details["simulations"] >= 1
    assert details["spent_reservations"] <= work + simulated(lenet_problem, selected[1]).reservations


def test_selection_is_deterministic(lenet_problem, selected, work):
    given, chosen, _ = selected
    again, _ = select(lenet_problem, given, work)
    assert again.slots == chosen.slots


def test_zero_work_keeps_the_given_placement(lenet_problem):
    given = row_major(lenet_problem)
    chosen, details = select(lenet_problem, given, 0)
    assert chosen is given and details["simulations"] == 0


def test_solve_reports_the_bytes_and_bound_of_the_selected_placement(lenet_problem):
    solved = hierarchical_placement.solve(lenet_problem, SolverConfig(backend="cpsat", time_limit_s=4), row_major(lenet_problem))
    assert solved.details["simulated_selection"]["simulations"] >= 1
    assert solved.result.objective == hop_weighted_bytes(lenet_problem, solved.decision)
    assert solved.result.bound <= solved.result.objective + 1e-9


def test_busiest_resource_is_busy_no_longer_than_the_simulated_makespan(lenet_problem):
    placement = row_major(lenet_problem)
    perf = simulate(lenet_problem.partition, placement, insert(lenet_problem, placement), lenet_problem.spec,
                    dict(lenet_problem.io_positions))
    assert perf.busiest_resource in ("core", "bus", "nic", "link")
    assert 0 < perf.extra["busiest_resource_s"] * perf.inferences <= perf.makespan_s * (1 + 1e-12)
