"""The layered column model (phase B's primal search on LP-based backends): exact within its layers."""

from __future__ import annotations

import dataclasses

import pytest

from solvermap.formulations import partition as formulation
from solvermap.formulations.partition import layers
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
    """random-retime has no layered solution with the fewest layers and costs its optimum 4 from one more
    on: the layered optimum never rises with T (T layers' solutions stay feasible with T + 1)."""
    problem = CASES["random-retime"]()
    first = layers.fewest_layers(problem, formulation.convex_bins(problem))
    values = []
    for T in range(first, first + 3):
        result, _ = _layered(problem, BACKENDS[-1], T)
        values.append(result.objective if result.status == Status.OPTIMAL else float("inf"))
    assert values == [float("inf"), 4.0, 4.0]


def test_windows_pin_a_chain_of_one_item_bins_to_its_layers():
    """retime-chain: four one-stage items a→b→c→d in one-stage bins, so every bin is one item and the chain
    fixes its layer: with the fewest layers (4) each item's window is that single layer, and with 3 layers
    the propagation leaves some item no window at all."""
    problem = instances.retiming_chain()
    columns = formulation.convex_bins(problem)
    assert layers.fewest_layers(problem, columns) == 4
    win = layers.layer_windows(problem, columns, 4)
    assert win.feasible and win.low == win.high == {"a": 1, "b": 2, "c": 3, "d": 4} and win.pairs == 4
    assert not layers.layer_windows(problem, columns, 3).feasible


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
