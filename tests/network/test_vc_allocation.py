"""VC allocation: backends reach the enumerated optimum; the load bound; per-path certificate; joint
routing + VC picks a longer route to need fewer VCs."""

from __future__ import annotations

import pytest

from solvermap.formulations import vc_allocation as formulation
from solvermap.formulations.problems.vc_allocation import VcPath, VcProblem, lower_bound, objective
from solvermap.formulations.solver import SolverConfig, Status, available_backends
from solvermap.hardware.checks.vc_allocation import check
from solvermap.mappers.plasticine.network import greedy_colouring
from tests.backends import PYOMO, milp_backends

from . import instances
from .enumeration import vc_optimum

BACKENDS = [b for b in ("cpsat", "highs", "scip") if b in available_backends("milp")]
AGREEMENT = milp_backends("cpsat", "highs", "scip", *PYOMO)  # the enumerated-optimum tests
CASES = {
    "odd_cycle_per_path": lambda: instances.odd_cycle("per_path", vcs=3),
    "odd_cycle_per_hop": lambda: instances.odd_cycle("per_hop", vcs=3),
    "shared_link": lambda: instances.shared_link(vcs=3),
    "joint_detour": lambda: instances.joint_detour(vcs=3),
}
KNOWN: dict[str, float] = {}


def known(name: str) -> float:
    if name not in KNOWN:
        KNOWN[name] = vc_optimum(CASES[name]())
    return KNOWN[name]


@pytest.mark.parametrize("backend", AGREEMENT)
@pytest.mark.parametrize("case", sorted(CASES))
def test_backends_reach_the_enumerated_vc_optimum(case, backend):
    problem = CASES[case]()
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=20))
    assert solved.result.status == Status.OPTIMAL
    assert check(problem, solved.decision).ok
    assert objective(problem, solved.decision) == known(case)
    assert solved.result.bound == lower_bound(problem)[0] <= known(case)


def test_per_hop_vcs_reach_the_load_bound_where_per_path_vcs_cannot():
    per_hop = formulation.solve(instances.odd_cycle("per_hop"), SolverConfig(backend="highs"))
    per_path = formulation.solve(instances.odd_cycle("per_path"), SolverConfig(backend="highs"))
    assert per_hop.result.objective == per_hop.result.bound == 2
    assert per_path.result.objective == 3 and per_path.result.bound == 2


def test_the_certificate_names_the_paths_that_cannot_share_fewer_vcs():
    solved = formulation.solve(instances.odd_cycle("per_path"), SolverConfig(backend="highs"))
    cert = solved.details["certificate"]
    assert sorted(cert["paths"]) == ["p1", "p2", "p3"] and cert["vcs_needed"] == 3
    assert len(cert["conflicts"]) == 3  # a triangle: every pair shares a link
    assert solved.details["proven_lower_bound"] == 3


def test_joint_routing_takes_a_longer_tree_to_need_fewer_vcs():
    problem = instances.joint_detour(vcs=3)
    fixed = VcProblem(problem.paths, problem.max_vcs, problem.mode, joint=False)
    alone = formulation.solve(fixed, SolverConfig(backend="highs"))
    joint = formulation.solve(problem, SolverConfig(backend="highs"))
    assert alone.result.objective == 3 and joint.result.objective == 2
    routed = sum(len(p.candidates[0]) for p in problem.paths)
    assert joint.details["hops"] > routed
    assert check(problem, joint.decision).ok


def test_the_greedy_colouring_baseline_is_valid_and_never_below_the_bound():
    problem = instances.odd_cycle("per_path")
    greedy = greedy_colouring(problem)
    assert check(problem, greedy).ok and objective(problem, greedy) >= lower_bound(problem)[0]


def test_more_paths_on_a_link_than_vcs_is_diagnosed():
    reason = formulation.diagnose(instances.shared_link(vcs=2))
    assert reason is not None and "3 logical paths share link" in reason and "2 VCs" in reason


def test_a_backpressure_cycle_is_diagnosed_as_deadlock():
    a = VcPath("a", (0, 0), ((0, 1),), ((((0, 0), (0, 1)),),))
    b = VcPath("b", (0, 1), ((0, 0),), ((((0, 1), (0, 0)),),))
    problem = VcProblem((a, b), 2, backpressure=(("a", "b", (0, 1)), ("b", "a", (0, 0))))
    reason = formulation.diagnose(problem)
    assert reason is not None and reason.startswith("deadlock")
