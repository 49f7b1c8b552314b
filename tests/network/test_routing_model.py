"""Routing as a multi-commodity flow with broadcast trees: backends reach the enumerated optimum."""

from __future__ import annotations

import pytest

from solvermap.formulations import routing as formulation
from solvermap.formulations.problems.routing import RouteNet, RoutingProblem, lower_bound, objective, xy_tree
from solvermap.formulations.solver import SolverConfig, Status, available_backends
from solvermap.hardware.checks.routing import check
from tests.backends import PYOMO, milp_backends

from . import instances
from .enumeration import routing_optimum

BACKENDS = [b for b in ("cpsat", "highs", "scip") if b in available_backends("milp")]
AGREEMENT = milp_backends("cpsat", "highs", "scip", *PYOMO)  # the enumerated-optimum tests
KNOWN: dict[str, float] = {}


def known(name: str) -> float:
    if name not in KNOWN:
        KNOWN[name] = routing_optimum(instances.ROUTING[name]())
    return KNOWN[name]


@pytest.mark.parametrize("backend", AGREEMENT)
@pytest.mark.parametrize("case", sorted(instances.ROUTING))
def test_backends_reach_the_enumerated_optimum(case, backend):
    problem = instances.ROUTING[case]()
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=20))
    assert solved.result.status == Status.OPTIMAL
    assert check(problem, solved.decision).ok
    assert objective(problem, solved.decision) == pytest.approx(known(case), abs=1e-6)
    assert lower_bound(problem) <= solved.result.bound + 1e-9 <= known(case) + 1e-6


def test_congestion_pushes_a_static_link_off_its_shortest_route():
    problem = instances.static_congested()
    solved = formulation.solve(problem, SolverConfig(backend="highs"))
    hops = {n.name: len(solved.decision.trees[n.name]) for n in problem.nets}
    assert hops["a"] + hops["b"] > 3  # both want (0,0)→(0,1); one track forces a detour
    assert objective(problem, solved.decision) > lower_bound(problem)


def test_a_broadcast_pays_for_its_tree_once():
    net = RouteNet("bc", (0, 0), ((0, 2), (1, 2)), "vector", 1.0)
    problem = RoutingProblem(instances.MESH, (net,), {"vector": 1, "scalar": 1}, None, margin=3)
    solved = formulation.solve(problem, SolverConfig(backend="highs"))
    assert len(solved.decision.trees["bc"]) == 3  # a shared trunk, not 2 + 3 links
    assert len(xy_tree(net)) == 3


def test_too_many_static_links_out_of_one_node_is_diagnosed():
    nets = tuple(RouteNet(f"n{k}", (0, 0), ((1, 2),), "vector", 1.0) for k in range(3))
    problem = RoutingProblem(instances.MESH, nets, {"vector": 1, "scalar": 1}, None, margin=3)
    reason = formulation.diagnose(problem)
    assert reason is not None and "(0, 0)" in reason and "tracks" in reason
