"""Certified lower bounds on hop-weighted bytes: the relaxations never exceed what they bound."""

from __future__ import annotations

import pytest

from solvermap.formulations import placement as shared
from solvermap.formulations.problems.placement import Placement
from solvermap.formulations.solver import SolverConfig, Status
from solvermap.hardware.puma.placement_problem import level_bytes, make_problem, objective
from solvermap.mappers.puma import hierarchical_placement, placement_bounds
from solvermap.mappers.puma.baselines import BASELINES


@pytest.fixture(scope="module")
def small(small_models, puma_small, puma):
    from .conftest import prepared

    problems = {name: make_problem(small_models[name][2], puma_small) for name in ("mlp", "lstm_lm")}
    problems["lenet"] = make_problem(prepared("lenet", puma, calibrate=False)[2], puma)
    return problems


@pytest.mark.parametrize("name", ["mlp", "lstm_lm", "lenet"])
def test_relaxations_at_a_placement_never_exceed_its_messages_and_crossings(small, name):
    problem = small[name]
    st = placement_bounds.structure(problem)
    k = problem.min_tiles()
    decisions = [BASELINES[b](problem) for b in ("row_major", "col_major", "min_cut")]
    decisions += [BASELINES["random"](problem, seed) for seed in range(4)]
    assert all(d is not None for d in decisions)
    for decision in decisions:
        sends = level_bytes(problem, decision)["send"]
        crossings = objective(problem, decision) - sends
        messages, _ = placement_bounds.message_bound(problem, st, k, decision, 10, evaluate=True)
        crossing, _ = placement_bounds.crossing_bound(problem, st, k, decision, 10, evaluate=True)
        assert messages <= sends + 1e-6
        assert crossing <= crossings + 1e-6


@pytest.mark.parametrize("name", ["mlp", "lstm_lm"])
def test_whole_unit_relaxations_never_exceed_any_placements_messages_and_crossings(small, name):
    problem = small[name]
    st = placement_bounds.structure(problem)
    k = problem.min_tiles()
    decisions = [BASELINES[b](problem) for b in ("row_major", "col_major", "min_cut")]
    work = placement_bounds.COMPACT_MIN_WORK + 2  # the column generation converges in under 2 units here
    messages, m_info = placement_bounds.message_bound(problem, st, k, decisions, work)
    crossing, c_info = placement_bounds.crossing_bound(problem, st, k, decisions, work)
    assert "compact" in m_info and "compact" in c_info
    for decision in decisions:
        sends = level_bytes(problem, decision)["send"]
        assert m_info["compact"] <= sends + 1e-6 and messages <= sends + 1e-6
        assert c_info["compact"] <= objective(problem, decision) - sends + 1e-6


def test_structure_reads_chains_columns_and_outputs_of_an_mlp(small):
    st = placement_bounds.structure(small["mlp"])
    assert [len(g.rows) for g in st.grids] == [3, 1]
    assert {c.source for c in st.columns} == {"io", "grid"}
    assert len(st.outputs) == 1 and st.ignored == 0


def exact_optimum(problem) -> float:
    joint = hierarchical_placement.joint_problem(problem, list(problem.compute_positions))
    hint = hierarchical_placement._joint_assignment(problem, {n: s.tile for n, s in BASELINES["row_major"](problem).slots.items()})
    solved = shared.solve(joint, SolverConfig(backend="cpsat", time_limit_s=20), hint)
    assert solved.result.status == Status.OPTIMAL
    return solved.result.objective


def test_certified_bound_is_below_the_exact_optimum_and_not_trivial(small):
    problem = small["mlp"]
    optimum = exact_optimum(problem)
    bound = placement_bounds.lower_bound(problem, 10, [BASELINES[b](problem) for b in ("row_major", "col_major")])
    assert 0 < bound.value <= optimum + 1e-6
    assert bound.messages > 0


def test_solver_bound_never_exceeds_its_objective(small):
    problem = small["lstm_lm"]
    hint = BASELINES["row_major"](problem)
    solved = hierarchical_placement.solve(problem, SolverConfig(backend="cpsat", time_limit_s=6), hint)
    assert solved.result.bound <= solved.result.objective + 1e-9
    assert objective(problem, solved.decision) <= objective(problem, hint)


def test_solver_splits_its_budget_by_work_so_a_slower_clock_gives_the_same_placement(small, monkeypatch):
    import time as clock

    problem = small["lstm_lm"]
    hint = BASELINES["row_major"](problem)
    config = SolverConfig(backend="cpsat", time_limit_s=4)
    first = hierarchical_placement.solve(problem, config, hint)
    real = clock.perf_counter
    origin = real()
    monkeypatch.setattr(clock, "perf_counter", lambda: origin + 1.25 * (real() - origin))  # a 1.25× slower machine
    second = hierarchical_placement.solve(problem, config, hint)
    assert second.decision == first.decision
    assert (second.result.status, second.result.bound) == (first.result.status, first.result.bound)


def test_certified_bound_is_the_same_on_a_slower_clock(small, monkeypatch):
    """The bound (which decides OPTIMAL vs FEASIBLE) spends deterministic work, so load cannot change it."""
    import time as clock

    problem = small["mlp"]
    starts = [BASELINES[b](problem) for b in ("row_major", "col_major")]
    first = placement_bounds.lower_bound(problem, 2, starts)
    real = clock.perf_counter
    origin = real()
    monkeypatch.setattr(clock, "perf_counter", lambda: origin + 1.5 * (real() - origin))  # a 1.5× slower machine
    second = placement_bounds.lower_bound(problem, 2, starts)
    assert (second.value, second.messages, second.crossings) == (first.value, first.messages, first.crossings)
    assert second.details["messages"]["iterations"] == first.details["messages"]["iterations"]
