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


def test_column_generation_charges_each_model_the_minimum_once_and_its_re_solves_their_reported_work(small, monkeypatch):
    from solvermap.formulations import strategy

    problem = small["lstm_lm"]
    st = placement_bounds.structure(problem)
    floors: list[float] = []
    real = strategy.Budget.charge_solve

    def charge_solve(self, result, given, floor=strategy.MIN_SOLVE_WORK):
        floors.append(floor)
        return real(self, result, given, floor)

    monkeypatch.setattr(strategy.Budget, "charge_solve", charge_solve)
    decisions = [BASELINES[b](problem) for b in ("row_major", "col_major")]
    _, info = placement_bounds.crossing_bound(problem, st, problem.min_tiles(), decisions, 4)
    assert floors.count(strategy.MIN_SOLVE_WORK) == info["models"] < len(floors)
    assert floors.count(placement_bounds.RESOLVE_MIN_WORK) == len(floors) - info["models"]


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


@pytest.fixture(scope="module")
def even_mlp(puma_small):
    """An MLP whose every message is 64 B (layer sizes multiples of the 32-wide crossbar, 32 outputs)."""
    from solvermap.ir.workloads import build
    from solvermap.mappers.puma import application_optimizer as ao
    from solvermap.mappers.puma.crossbar_partition import partition
    from solvermap.mappers.puma.frontend import lower

    net = ao.fold_bias(ao.fold_batchnorm(lower(build("mlp", "puma", {"sizes": [64, 64, 64, 32]}).ir)), puma_small.crossbar.rows)
    return make_problem(partition(net, puma_small.crossbar.rows, puma_small.crossbar.cols), puma_small)


def fewest_bytes_sent(problem) -> float:
    """The fewest message bytes of any placement on the minimum tiles (stage A's exact tile grouping),
    proved optimal by CP-SAT and HiGHS, which agree."""
    grouping = hierarchical_placement.tile_grouping_problem(problem, problem.min_tiles())
    solved = [shared.solve(grouping, SolverConfig(backend=b, time_limit_s=20)) for b in ("cpsat", "highs")]
    assert all(s.result.status == Status.OPTIMAL for s in solved)
    assert solved[0].result.objective == pytest.approx(solved[1].result.objective)
    return solved[0].result.objective


def test_message_bound_rounded_to_whole_messages_is_tighter_and_below_the_fewest_bytes_sent(even_mlp):
    problem = even_mlp
    st = placement_bounds.structure(problem)
    starts = [BASELINES[b](problem) for b in ("row_major", "col_major")]
    grain, every = placement_bounds.message_grain(st)
    assert (grain, every) == (64.0, True)
    relaxation, _ = placement_bounds.message_bound(problem, st, problem.min_tiles(), starts, 4)
    rounded, info = placement_bounds.message_bound(problem, st, problem.min_tiles(), starts, 4, grain=grain)
    assert rounded % grain == 0 and info["relaxation"] == pytest.approx(relaxation)
    assert relaxation < rounded <= fewest_bytes_sent(problem) + 1e-6


def test_message_bound_of_the_dominant_weight_alone_stays_below_the_fewest_bytes_sent(small):
    problem = small["mlp"]  # 32-B messages and one 20-B chain: the rounded relaxation drops the 20-B groups
    st = placement_bounds.structure(problem)
    grain, every = placement_bounds.message_grain(st)
    assert grain == 32.0 and not every
    bound = placement_bounds.lower_bound(problem, 4, [BASELINES[b](problem) for b in ("row_major", "col_major")])
    whole = bound.details["messages"]["whole_messages"]["value"]
    assert (whole - st.outputs[0].weight * st.outputs[0].count) % grain == 0
    assert whole <= bound.messages <= fewest_bytes_sent(problem) + 1e-6


def test_certified_bound_with_whole_messages_is_below_the_exact_optimum_on_two_backends(even_mlp):
    problem = even_mlp
    joint = hierarchical_placement.joint_problem(problem, list(problem.compute_positions))
    hint = hierarchical_placement._joint_assignment(problem, {n: s.tile for n, s in BASELINES["row_major"](problem).slots.items()})
    optima = [shared.solve(joint, SolverConfig(backend=b, time_limit_s=30), hint) for b in ("cpsat", "highs")]
    assert all(o.result.status == Status.OPTIMAL for o in optima)
    assert optima[0].result.objective == pytest.approx(optima[1].result.objective)
    bound = placement_bounds.lower_bound(problem, 4, [BASELINES[b](problem) for b in ("row_major", "col_major")])
    assert bound.messages % 64 == 0
    assert 0 < bound.value <= optima[0].result.objective + 1e-6


def stretch_every_solve(monkeypatch, seconds: float) -> list[float]:
    """Simulate a loaded machine on which every solve of the bound takes ``seconds`` of wall clock whatever
    its work budget (a HiGHS root node is not bounded by a node limit): a solve whose wall-clock backstop
    is shorter is stopped by it before doing any work. Returns the backstops that stopped a solve."""
    from solvermap.formulations.solver import SolveResult
    from solvermap.formulations.solver.milp import LpSolution, MilpSolution

    stopped: list[float] = []

    def stop(config) -> SolveResult | None:
        wall = config.wall_limit()
        if wall is None or wall >= seconds:
            return None
        stopped.append(wall)
        return SolveResult(Status.TIMEOUT_NO_SOLUTION, limit_reached=True, backstop_fired=True, backend=config.milp_backend())

    real_lp, real_milp, real_cpsat = placement_bounds.solve_lp, placement_bounds.solve_milp, placement_bounds.solve_cpsat
    monkeypatch.setattr(placement_bounds, "solve_lp", lambda m, c: LpSolution(r) if (r := stop(c)) else real_lp(m, c))
    monkeypatch.setattr(placement_bounds, "solve_milp",
                        lambda m, c, **kw: MilpSolution(r) if (r := stop(c)) else real_milp(m, c, **kw))
    monkeypatch.setattr(placement_bounds, "solve_cpsat",
                        lambda m, c, **kw: (r, None) if (r := stop(c)) else real_cpsat(m, c, **kw))
    return stopped


def test_certified_bound_is_the_same_when_every_solve_takes_almost_the_whole_bounds_backstop(even_mlp, monkeypatch):
    """Shares as small as 0.05 work units had the facade's backstop of the share (20 × share + 60 s); now every
    solve has the backstop of the bound's whole work, so a machine on which each solve takes 90 % of that
    stops none of them: the same bound as on a quiet machine."""
    problem = even_mlp
    starts = [BASELINES[b](problem) for b in ("row_major", "col_major")]
    quiet = placement_bounds.lower_bound(problem, 2, starts)
    stopped = stretch_every_solve(monkeypatch, 0.9 * SolverConfig().with_budget(2).wall_limit())
    loaded = placement_bounds.lower_bound(problem, 2, starts)
    assert stopped == []
    assert (loaded.value, loaded.messages, loaded.crossings) == (quiet.value, quiet.messages, quiet.crossings)
    assert not loaded.details["backstop_fired"]


def test_certified_bound_stopped_by_the_backstop_says_so_and_stays_valid(even_mlp, monkeypatch):
    problem = even_mlp
    starts = [BASELINES[b](problem) for b in ("row_major", "col_major")]
    stopped = stretch_every_solve(monkeypatch, 2 * SolverConfig().with_budget(2).wall_limit())
    bound = placement_bounds.lower_bound(problem, 2, starts)
    assert stopped and bound.details["backstop_fired"]
    assert placement_bounds.io_floor(problem) <= bound.value <= min(objective(problem, s) for s in starts)
