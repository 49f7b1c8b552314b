"""The solve-strategy layer: work reported by every backend, budgets, sequences with a certified bound, LNS."""

from __future__ import annotations

import math
import time

import pytest

from solvermap.formulations.solver import (
    ModelBuilder,
    SolveResult,
    SolverConfig,
    Status,
    available_backends,
    linear_sum,
    lp_work,
    solve_cpsat,
    solve_lp,
    solve_milp,
)
from solvermap.formulations.strategy import MIN_SOLVE_WORK, Budget, Step, lns, sequence, spent_by

from .test_solver_facade import hard_instance, knapsack

MILP = [b for b in ("cpsat", "highs", "scip", "cbc") if b in available_backends("milp")]


@pytest.mark.parametrize("backend", MILP)
def test_every_milp_backend_reports_the_work_it_spent(backend):
    finished = solve_milp(knapsack()[0], SolverConfig(backend=backend, time_limit_s=10)).result
    stopped = solve_milp(hard_instance(), SolverConfig(backend=backend, time_limit_s=0.2)).result
    assert finished.status == Status.OPTIMAL and 0 <= finished.work < 10
    assert stopped.work > finished.work  # (CBC has no work limit: it may finish, counting its nodes)


@pytest.mark.parametrize("backend", [b for b in MILP if b != "cbc"])
def test_a_solve_stopped_by_its_work_limit_reports_about_that_work(backend):
    result = solve_milp(hard_instance(), SolverConfig(backend=backend, time_limit_s=0.2)).result
    assert result.limit_reached and not result.backstop_fired
    assert result.work >= 0.2 - 1e-9 and spent_by(result, SolverConfig(time_limit_s=0.2)) == pytest.approx(0.2)


@pytest.mark.parametrize("backend", [b for b in MILP if b != "cbc"])
def test_a_solve_stopped_by_the_wall_clock_before_its_work_says_so(backend):
    """An explicit work budget far above what the wall clock allows: the wall clock stops it (load-dependent)."""
    result = solve_milp(hard_instance(), SolverConfig(backend=backend, time_limit_s=0.05, work_limit=1000)).result
    assert result.limit_reached and result.backstop_fired and "backstop" in result.message


def test_a_backend_that_names_the_clock_as_its_limit_is_believed_over_the_work_it_counted():
    """A HiGHS root node can count more simplex work than its node-limit budget and still be stopped by the
    wall clock: the limit MathOpt names decides, the work count only where the backend names none."""
    from solvermap.formulations.solver import backstop_fired

    config = SolverConfig(time_limit_s=0.2)
    assert backstop_fired(config, 70.0, True, work=5.0, by_clock=True)
    assert not backstop_fired(config, 0.1, True, work=0.01, by_clock=False)
    assert not backstop_fired(config, 70.0, True, work=5.0)
    assert not backstop_fired(config, 70.0, False, work=0.0, by_clock=True)


def test_native_cpsat_reports_its_deterministic_time():
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    x = [model.NewIntVar(0, 10, f"x{i}") for i in range(3)]
    model.Add(2 * x[0] + 3 * x[1] + 4 * x[2] <= 17)
    model.Maximize(3 * x[0] + 4 * x[1] + 6 * x[2])
    result, solver = solve_cpsat(model, SolverConfig(time_limit_s=5))
    assert result.status == Status.OPTIMAL and result.work == pytest.approx(solver.deterministic_time)


def test_lp_work_is_the_larger_of_nodes_and_iterations_in_work_units():
    assert lp_work(1000, 0) == 1.0 and lp_work(0, 25_000) == 1.0 and lp_work(500, 50_000) == 2.0


def test_an_lp_solve_returns_duals_with_their_signs():
    m = ModelBuilder("lp")
    x, y = m.continuous(0, 10, "x"), m.continuous(0, 10, "y")
    cover = m.add(x + y >= 4, "cover")
    cap = m.add(x <= 1, "cap")
    m.minimize(3 * x + 5 * y)
    solution = solve_lp(m, SolverConfig(time_limit_s=5))
    assert solution.result.status == Status.OPTIMAL and solution.result.objective == pytest.approx(18)
    assert solution.duals[cover] == pytest.approx(5) and solution.duals[cap] == pytest.approx(-2)


def test_a_solve_is_charged_its_work_between_the_minimum_and_its_budget():
    config = SolverConfig(time_limit_s=2)
    assert spent_by(SolveResult(Status.OPTIMAL, work=0.3), config) == pytest.approx(0.3)
    assert spent_by(SolveResult(Status.OPTIMAL, work=0.001), config) == MIN_SOLVE_WORK
    assert spent_by(SolveResult(Status.FEASIBLE, work=0.5, limit_reached=True), config) == pytest.approx(2.0)
    assert spent_by(SolveResult(Status.OPTIMAL, work=3.0), config) == pytest.approx(2.0)  # never more than given
    wall = SolverConfig(time_limit_s=2, deterministic=False)
    assert spent_by(SolveResult(Status.OPTIMAL, work=0.3, solve_seconds=1.25), wall) == pytest.approx(1.25)


def test_a_solve_charged_with_a_smaller_floor_pays_its_reported_work_down_to_that_floor():
    config = SolverConfig(time_limit_s=2)
    assert spent_by(SolveResult(Status.OPTIMAL, work=0.01), config, floor=0.005) == pytest.approx(0.01)
    assert spent_by(SolveResult(Status.OPTIMAL, work=0.001), config, floor=0.005) == pytest.approx(0.005)
    budget = Budget(config)
    assert budget.charge_solve(SolveResult(Status.OPTIMAL, work=0.001), config, floor=0.005) == pytest.approx(0.005)
    assert budget.elapsed() == pytest.approx(0.005)


def test_budget_counts_only_charged_work_when_deterministic():
    budget = Budget(SolverConfig(time_limit_s=10.0))
    budget.charge(2.5)
    budget.charge(-1.0)  # nothing is refunded
    assert budget.left() == pytest.approx(7.5)
    assert budget.portion(0.9).time_limit_s == pytest.approx(7.5)  # a share of the total, never more than is left
    assert budget.portion(0.1).time_limit_s == pytest.approx(1.0)
    assert budget.share(0.5).time_limit_s == pytest.approx(3.75)  # a share of what is left
    assert budget.share(0.5, cap=2.0).time_limit_s == pytest.approx(2.0)
    wall = Budget(SolverConfig(time_limit_s=10.0, deterministic=False))
    wall.charge(5.0)  # a wall-clock budget ignores charges
    assert wall.left() > 9.0


def test_an_unlimited_budget_leaves_the_config_unchanged():
    config = SolverConfig(time_limit_s=None)
    budget = Budget(config)
    assert budget.left() is None and budget.share(0.5) is config and not budget.exhausted()


def test_a_deterministic_budget_ignores_the_wall_clock_and_remembers_a_fired_backstop(monkeypatch):
    budget = Budget(SolverConfig(time_limit_s=1.0))
    real = time.perf_counter
    monkeypatch.setattr(time, "perf_counter", lambda: real() + 1000.0)
    assert budget.left() == pytest.approx(1.0) and not budget.backstop_fired
    budget.charge_solve(SolveResult(Status.FEASIBLE, work=0.2, limit_reached=True, backstop_fired=True),
                        SolverConfig(time_limit_s=0.5))
    assert budget.left() == pytest.approx(0.5) and budget.backstop_fired


def test_sequence_is_optimal_only_when_its_certified_bound_meets_the_answer():
    parts = [SolveResult(Status.FEASIBLE, 10, 7, work=1.0, solve_seconds=2.0, limit_reached=True),
             SolveResult(Status.INFEASIBLE, work=0.5, solve_seconds=1.0)]
    open_gap = sequence(parts, 9.0, 8.0, "two solves")
    assert open_gap.status == Status.FEASIBLE and open_gap.bound == 8.0 and open_gap.gap == pytest.approx(1 / 9)
    assert open_gap.work == pytest.approx(1.5) and open_gap.solve_seconds == pytest.approx(3.0) and open_gap.limit_reached
    closed = sequence(parts, 9.0, 9.5, "two solves")
    assert closed.status == Status.OPTIMAL and closed.bound == 9.0  # the bound is capped at the answer
    assert sequence(parts, 9.0, None).status == Status.FEASIBLE and sequence(parts, 9.0, None).bound is None


def test_a_share_of_a_budget_given_as_a_work_limit_is_work_not_wall_time():
    """The default study's form (a wall cap of 30 s and 4 units of work): a share is 2 units of work under
    the facade's backstop, not 2 wall seconds beside the whole work limit."""
    budget = Budget(SolverConfig(time_limit_s=30, work_limit=4))
    share = budget.share(0.5)
    assert budget.total == 4 and share.work_budget() == pytest.approx(2) and share.work_limit is None
    assert share.wall_limit() > 20 * share.work_budget()


def test_sequence_says_when_a_backstop_fired():
    fired = SolveResult(Status.FEASIBLE, 4, 3, limit_reached=True, backstop_fired=True)
    combined = sequence([SolveResult(Status.OPTIMAL, 5, 5), fired], 4.0, 3.0)
    assert combined.backstop_fired and "backstop" in combined.message


def _count_down(budget: Budget, start: int, lower: float = -math.inf):
    """An LNS on integers: the neighbourhood k proposes start − k (a step of fixed work 0.3)."""

    def neighbourhoods(state):
        k = 0
        while True:
            k += 1
            yield k

    def solve(k, config):
        return Step(start - k if k % 2 else start + k, SolveResult(Status.OPTIMAL, work=0.3))

    return lns(budget, start, float, neighbourhoods, solve, lower=lower)


def test_lns_keeps_only_strictly_better_candidates_and_stops_when_its_budget_is_spent():
    budget = Budget(SolverConfig(time_limit_s=1.0))
    state = _count_down(budget, 100)
    assert state.spent and state.rounds == 4 and budget.elapsed() == pytest.approx(1.0)  # the last step gets what is left
    assert state.value == 97 and [v for _, v in state.trajectory] == [100, 99, 97]


def test_lns_stops_at_the_lower_bound():
    state = _count_down(Budget(SolverConfig(time_limit_s=10.0)), 100, lower=99)
    assert state.value == 99 and state.rounds == 1 and not state.spent


def test_lns_gives_each_step_what_is_left_at_most_its_cap():
    seen = []

    def solve(k, config):
        seen.append(config.time_limit_s)
        return Step(None, SolveResult(Status.TIMEOUT_NO_SOLUTION, limit_reached=True))

    lns(Budget(SolverConfig(time_limit_s=1.0)), 0, float, lambda state: iter(range(5)), solve, step_cap=0.4)
    assert seen == pytest.approx([0.4, 0.4, 0.2])


def test_the_same_budget_gives_the_same_search_on_a_slower_clock(monkeypatch):
    """A real LNS (grid placement) split by reported work: a 1.5× slower clock changes nothing."""
    from solvermap.formulations import placement

    from ..puma.test_placement_formulation import lns_problem, spread_start

    problem, start = lns_problem(), spread_start(lns_problem())
    config = SolverConfig(backend="cpsat", time_limit_s=1.0, seed=5)
    first = placement.improve(problem, config, start, sites_per_round=2, sub_time_limit_s=0.1)
    real = time.perf_counter
    origin = real()
    monkeypatch.setattr(time, "perf_counter", lambda: origin + 1.5 * (real() - origin))
    second = placement.improve(problem, config, start, sites_per_round=2, sub_time_limit_s=0.1)
    assert second.decision == first.decision and second.details["trajectory"] == first.details["trajectory"]
    assert second.details["work"] == first.details["work"]


def test_a_sum_of_terms_model_solves_the_same_on_every_backend():
    """(sanity) the fast-sum helper builds the same model whatever the backend."""
    m = ModelBuilder("sum")
    xs = [m.binary(f"x{i}") for i in range(4)]
    m.add(linear_sum(xs) <= 2, "cap")
    m.maximize(linear_sum((i + 1) * x for i, x in enumerate(xs)))
    values = {b: solve_milp(m, SolverConfig(backend=b, time_limit_s=5)).result.objective for b in MILP}
    assert set(values.values()) == {7.0}
