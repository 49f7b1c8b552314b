"""Accuracy budgets: convex and MILP backends agree; the Monte Carlo acceptance is real; checker mutations."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from solvermap.formulations import accuracy_budget
from solvermap.formulations.problems.accuracy_budget import BudgetProblem, decision_for, level_cost, total_cost
from solvermap.hardware.checks.accuracy_budget import check
from solvermap.mappers.approxhpvm.problems import budget_problem
from solvermap.mappers.approxhpvm.profiling import injection_monte_carlo

from .conftest import MILP_BACKENDS, config


def small(verify=None, **kw) -> BudgetProblem:
    levels = 5
    sigma = tuple(0.01 * k for k in range(1, levels + 1))
    loss = {"a": tuple(0.001 * k * k for k in range(1, 6)), "b": tuple(0.0004 * k * k for k in range(1, 6)),
            "c": tuple(0.002 * k for k in range(1, 6))}
    kw.setdefault("cost_functions", ("C2",))
    return BudgetProblem(("a", "b", "c"), {"a": 100.0, "b": 400.0, "c": 50.0}, loss,
                         {"a": 10.0, "b": 4.0, "c": 2.0}, sigma, sigma, loss_limit=0.02, top=1, verify=verify, **kw)


def brute(problem: BudgetProblem, fn: str) -> float:
    best = float("inf")
    for combo in itertools.product(problem.levels, repeat=len(problem.ops)):
        levels = dict(zip(problem.ops, combo))
        if sum(problem.loss[o][levels[o] - 1] for o in problem.ops) <= problem.loss_limit + 1e-12:
            best = min(best, total_cost(problem, levels, fn))
    return best


@pytest.mark.parametrize("backend", MILP_BACKENDS)
@pytest.mark.parametrize("fn", ["C1", "C2", "C3"])
def test_budget_milp_reaches_enumerated_optimum_on_every_backend(backend, fn):
    problem = small(cost_function=fn, cost_functions=(fn,))
    solved = accuracy_budget.solve(problem, config(backend))
    assert solved.result.objective == pytest.approx(brute(problem, fn), rel=1e-9)


def test_convex_backends_agree():
    problem = small()
    values = {b: accuracy_budget.solve_convex_relaxation(problem, config().with_(convex_backend=b), "C2", 0.02)[0].objective
              for b in ("clarabel", "scs", "ecos")}
    assert values["scs"] == pytest.approx(values["clarabel"], rel=2e-3)
    assert values["ecos"] == pytest.approx(values["clarabel"], rel=1e-4)


def test_failed_candidate_gets_a_no_good_cut_and_the_loop_resolves():
    calls = []

    def verify(levels, seed):  # the first (most aggressive) candidate fails, everything else passes
        calls.append(dict(levels))
        ok = len(calls) > 1
        return {"pass_rate": 1.0 if ok else 0.5, "runs": 100}

    problem = small(verify=verify, mc_runs=100)
    solved = accuracy_budget.solve(problem, config())
    assert solved.details["failed_candidates"] == 1
    first, chosen = calls[0], dict(solved.decision.levels)
    assert chosen != first and not all(chosen[o] >= first[o] for o in first)  # dominated configurations are cut


@pytest.fixture(scope="module")
def dnn1_budget(dnn1, spec, dnn1_profile):
    def verify(levels, seed):
        return injection_monte_carlo(dnn1, spec, levels, runs=100, loss_limit=0.01, seed=seed, pass_rate=0.95)

    problem = budget_problem(dnn1, spec, dnn1_profile, loss_limit=0.01, top=1, mc_runs=100, verify=verify)
    problem = replace(problem, cost_functions=("C2",))
    return problem, accuracy_budget.solve(problem, config())


def test_dnn1_budget_meets_the_loss_limit_in_at_least_95_of_100_monte_carlo_runs(dnn1, spec, dnn1_budget):
    problem, solved = dnn1_budget
    levels = dict(solved.decision.levels)
    for seed in (problem.seed, problem.seed + 1):  # the two batches the formulation reported
        mc = injection_monte_carlo(dnn1, spec, levels, runs=100, loss_limit=0.01, seed=seed)
        assert mc["runs"] == 100 and mc["pass_rate"] >= 0.95
    assert solved.decision.runs == 100 and solved.decision.pass_rate >= 0.95
    assert check(problem, solved.decision).ok  # includes a third, independent batch (the checker's seed)
    assert max(levels.values()) > 1  # the budgets are not trivially the tightest level


def test_checker_flags_coverage_and_level_range(dnn1_budget):
    problem, solved = dnn1_budget
    d = solved.decision
    missing = replace(d, levels={k: v for k, v in list(d.levels.items())[1:]})
    assert "coverage" in check(problem, missing, recheck=False).rules()
    assert "level-range" in check(problem, replace(d, levels={**d.levels, problem.ops[0]: 16}), recheck=False).rules()


def test_checker_flags_budget_values(dnn1_budget):
    problem, solved = dnn1_budget
    d = solved.decision
    bad = replace(d, l1_budget={**d.l1_budget, problem.ops[0]: 0.99})
    assert "budget-values" in check(problem, bad, recheck=False).rules()


def test_checker_flags_a_configuration_that_fails_monte_carlo(dnn1_budget):
    problem, solved = dnn1_budget
    noisy = {op: 15 for op in problem.ops}
    c = replace(solved.decision.configurations[0], levels=noisy)
    bad = decision_for(problem, c)  # claims its original pass rate, but the re-run disagrees
    assert "monte-carlo" in check(problem, bad).rules()


def test_cost_function_c1_is_defined_at_level_one():
    assert level_cost("C1", 10.0, 1) > level_cost("C1", 10.0, 2) > 0


def test_optuna_baseline_measures_distinct_configurations_under_the_solver_acceptance():
    from solvermap.formulations.problems.accuracy_budget import modelled_loss
    from solvermap.mappers.approxhpvm.optuna_search import search

    calls = []

    def verify(levels, seed):
        calls.append((tuple(sorted(levels.items())), seed))
        return {"pass_rate": 1.0 if modelled_loss(problem, levels) <= 0.015 else 0.9, "runs": 100}

    problem = small(verify=verify, mc_runs=100)
    screened = []

    def screen(levels):
        screened.append(tuple(sorted(levels.items())))
        return modelled_loss(problem, levels)

    result = search(problem, evaluations=12, screen=screen, seed=0)
    assert result.evaluations == 12 and len(screened) == len(set(screened)) == 12  # a repeat is never re-measured
    assert result.trials >= result.evaluations
    assert result.passed == len(result.accepted) > 0
    for _, levels, _ in result.accepted:  # accepted only after both batches (seeds s and s+1), like the solver's
        key = tuple(sorted(levels.items()))
        assert {s for k, s in calls if k == key} == {problem.seed, problem.seed + 1}
        assert modelled_loss(problem, levels) <= 0.015


@pytest.mark.parametrize("rates, accepted, batches", [((1.0, 0.98), True, 2), ((0.97, 0.97), False, 2),
                                                      ((0.95, 1.0), False, 1), ((0.99, 0.94), False, 2)])
def test_search_acceptance_needs_both_batches_and_the_pooled_margin(rates, accepted, batches):
    from solvermap.formulations.problems.accuracy_budget import accept_twice

    seeds = []

    def verify(levels, seed):
        seeds.append(seed)
        return {"pass_rate": rates[seed], "runs": 100}

    problem = small(verify=verify, mc_runs=100)  # seed 0: batches 0 and 1; pooled ≥ 98 % of 200 runs
    mc = accept_twice(problem, {"a": 1, "b": 1, "c": 1})
    assert mc["accepted"] is accepted and seeds == [0, 1][:batches]
    assert mc["pass_rate"] == min(rates[:batches])  # the worse batch is reported


# ---------------------------------------------------------------------- cost function "energy": loss-target search


def _energy_problem(true_factor: float, **kw):
    """The small problem with a synthetic hardware cost: energy falls with every level; the Monte Carlo oracle
    passes a configuration iff ``true_factor`` × its modelled loss ≤ the limit (the loss model is pessimistic
    when the factor is < 1 and optimistic when it is > 1)."""
    from solvermap.formulations.problems.accuracy_budget import HARDWARE, HardwareCost, modelled_loss
    from solvermap.formulations.solver import SolveResult, Status

    base = small()
    weight = {"a": 3.0, "b": 5.0, "c": 2.0}

    def energy(levels):
        return sum(weight[o] / levels[o] for o in base.ops)

    def propose(target, failed, shipped, config):
        best = None
        for combo in itertools.product(base.levels, repeat=len(base.ops)):
            levels = dict(zip(base.ops, combo))
            if (modelled_loss(base, levels) > target + 1e-12 or levels in shipped
                    or any(all(levels[o] >= f[o] for o in base.ops) for f in failed)):
                continue
            if best is None or energy(levels) < energy(best):
                best = levels
        if best is None:
            return SolveResult(Status.INFEASIBLE, backend="enumeration"), None
        return SolveResult(Status.OPTIMAL, energy(best), energy(best), backend="enumeration"), best

    verified = []

    def verify(levels, seed):
        ok = true_factor * modelled_loss(base, levels) <= base.loss_limit + 1e-12
        verified.append((dict(levels), ok))
        return {"pass_rate": 1.0 if ok else 0.0, "runs": 100}

    problem = replace(base, cost_function=HARDWARE, cost_functions=(), verify=verify, mc_runs=100,
                      hardware=HardwareCost(propose=propose, cost=energy), **kw)
    return problem, propose, energy, verified


def test_energy_search_goes_past_a_pessimistic_loss_model_and_ships_only_passing_configurations():
    problem, propose, energy, verified = _energy_problem(0.5)
    at_limit = propose(problem.loss_limit, (), (), config())[0].objective
    solved = accuracy_budget.solve(problem, config())
    assert solved.decision is not None and solved.result.objective < at_limit  # the limit's optimum was not the end
    passing = {tuple(sorted(lv.items())) for lv, ok in verified if ok}
    assert all(tuple(sorted(c.levels.items())) in passing for c in solved.decision.configurations)
    true_best = min(energy(dict(zip(problem.ops, combo))) for combo in itertools.product(problem.levels, repeat=3)
                    if 0.5 * sum(problem.loss[o][k - 1] for o, k in zip(problem.ops, combo)) <= problem.loss_limit)
    assert solved.result.objective <= true_best * 1.05  # bisection to within 5 % of the loss gap


def test_energy_search_shrinks_under_an_optimistic_loss_model():
    problem, _, _, verified = _energy_problem(2.0)
    solved = accuracy_budget.solve(problem, config())
    assert solved.decision is not None and solved.details["failed_candidates"] >= 1
    passing = {tuple(sorted(lv.items())) for lv, ok in verified if ok}
    assert tuple(sorted(solved.decision.levels.items())) in passing
