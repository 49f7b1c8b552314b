"""Hybrid static/dynamic split: the ILP reaches the enumerated optimum; the seed's greedy rule does not
always; pure static targets make it a routability check."""

from __future__ import annotations

import pytest

from solvermap.formulations import link_split as formulation
from solvermap.formulations.problems.link_split import objective, upper_bound
from solvermap.formulations.solver import SolverConfig, Status, available_backends
from solvermap.hardware.checks.link_split import check
from solvermap.mappers.plasticine.network import greedy_split
from tests.backends import PYOMO, milp_backends

from . import instances
from .enumeration import split_optimum

BACKENDS = [b for b in ("cpsat", "highs", "scip") if b in available_backends("milp")]
AGREEMENT = milp_backends("cpsat", "highs", "scip", *PYOMO)  # the enumerated-optimum tests


@pytest.mark.parametrize("backend", AGREEMENT)
def test_backends_reach_the_enumerated_split_optimum(backend):
    problem = instances.hybrid_split()
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=20))
    assert solved.result.status == Status.OPTIMAL
    assert check(problem, solved.decision).ok
    assert objective(problem, solved.decision) == pytest.approx(split_optimum(problem), abs=1e-6)
    assert solved.result.bound <= upper_bound(problem) + 1e-9


def test_the_greedy_rule_of_L320_carries_less_than_the_ilp_when_the_top_link_blocks_two():
    problem = instances.greedy_trap_split()
    greedy = greedy_split(problem)
    assert check(problem, greedy).ok and greedy.static == frozenset({"big"})
    solved = formulation.solve(problem, SolverConfig(backend="highs"))
    assert solved.decision.static == frozenset({"left", "right"})
    assert objective(problem, solved.decision) == pytest.approx(split_optimum(problem)) == pytest.approx(1.2)


def test_a_pure_static_target_puts_every_link_on_the_static_network():
    problem = instances.static_feasible_split()
    solved = formulation.solve(problem, SolverConfig(backend="highs"))
    assert solved.decision.static == frozenset({"a", "b"}) and check(problem, solved.decision).ok


def test_a_pure_static_target_that_cannot_route_is_infeasible_with_the_static_group():
    problem = instances.hybrid_split("static")
    solved = formulation.solve(problem, SolverConfig(backend="highs"))
    assert solved.result.status == Status.INFEASIBLE
    assert "static" in solved.explanation or "flow" in solved.explanation
    assert greedy_split(problem) is None


def test_a_pure_dynamic_target_has_no_static_link():
    problem = instances.hybrid_split("dynamic")
    solved = formulation.solve(problem, SolverConfig(backend="highs"))
    assert solved.decision.static == frozenset() and check(problem, solved.decision).ok
