"""The layered column model (phase B's primal search on LP-based backends): exact within its layers."""

from __future__ import annotations

import dataclasses

import pytest

from solvermap.formulations import partition as formulation
from solvermap.formulations import partition_layers as layers
from solvermap.formulations.problems.partition import Retiming, Weights, objective
from solvermap.formulations.solver import SolverConfig, Status, solve_milp
from solvermap.hardware.checks.partition import check

from . import instances
from .enumeration import optimum
from .test_partition_model import BACKENDS, ZERO_RETIMING_CASES

CASES = {**ZERO_RETIMING_CASES,
         **{f"random{seed}-depth1": (lambda s: lambda: instances.random_dag(s, n=5, retiming=Retiming(1, 1)))(seed)
            for seed in (10, 12, 16, 19)}}


def _layered(problem, backend: str, T: int):
    columns = formulation.convex_bins(problem)
    built = layers.build_layers(problem, columns=columns, layers=T)
    solution = solve_milp(built.builder, SolverConfig(backend=backend, time_limit_s=20))
    decision = layers.decode_layers(problem, built, solution) if solution.result.status.has_solution else None
    return solution.result, decision


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_layered_optimum_is_a_checked_solution_and_reaches_the_enumerated_optimum(case, backend):
    """A primal model: every answer passes the checker and costs what the model says (its retiming count is
    the problem's). On these instances one layer more than the fewest already holds an optimal schedule."""
    problem = CASES[case]()
    expected = optimum(problem)
    T = layers.fewest_layers(problem, formulation.convex_bins(problem)) + 1
    result, decision = _layered(problem, backend, T)
    assert result.status == Status.OPTIMAL
    assert check(problem, decision).ok, check(problem, decision).violations
    assert objective(problem, decision) == pytest.approx(result.objective)
    assert objective(problem, decision) == pytest.approx(expected)


@pytest.mark.parametrize("case", ["random-retime", "random7-retime"])
def test_fewest_layers_is_a_window_argument_not_a_promise(case):
    """With the fewest layers the windows allow, these instances have no layered solution: the search goes
    on to the next layer count instead of stopping (and a backend says infeasible, not an error)."""
    problem = CASES[case]()
    T = layers.fewest_layers(problem, formulation.convex_bins(problem))
    for backend in BACKENDS:
        result, decision = _layered(problem, backend, T)
        assert result.status == Status.INFEASIBLE and decision is None


def test_more_layers_never_cost_more():
    problem = instances.two_skips()
    columns = formulation.convex_bins(problem)
    first = layers.fewest_layers(problem, columns)
    values = [_layered(problem, BACKENDS[-1], T)[0].objective for T in range(first, first + 3)]
    assert values == sorted(values, reverse=True)


def test_windows_shrink_to_the_column_layers_a_schedule_allows():
    """retime-chain is a chain a→b→c→d with a skip a→d: every item has a window, no column one wider than
    the layers the chain leaves it."""
    problem = instances.retiming_chain()
    columns = formulation.convex_bins(problem)
    T = layers.fewest_layers(problem, columns)
    win = layers.layer_windows(problem, columns, T)
    assert win.feasible
    for c, col in enumerate(columns):
        for n in col.members:
            assert win.low[n] <= win.first[c] and win.last[c] <= win.high[n] or win.first[c] > win.last[c]
    assert layers.layer_windows(problem, columns, T - 1).pairs < win.pairs


def test_out_of_scope_problems_say_why():
    problem = instances.two_skips()
    assert layers.applicable(problem) is None
    fixed = dataclasses.replace(problem, retiming=dataclasses.replace(problem.retiming,
                                                                      fixed_sources=((("x", "out", ""), 0),)))
    assert layers.applicable(fixed) == "the problem has fixed delays"
    assert layers.applicable(dataclasses.replace(problem, weights=Weights(traffic=1.0))) == "the problem weighs traffic"
    assert layers.applicable(dataclasses.replace(problem, retiming=None)) == "the problem has no retiming"
    with pytest.raises(ValueError, match="fixed delays"):
        layers.build_layers(fixed, columns=[], layers=3)
