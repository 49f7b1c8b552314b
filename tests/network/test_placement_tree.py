"""The shared placement model's broadcast='tree' mode (half-perimeter per net) on typed sites, the
Plasticine site grid, and the greedy / annealing baselines."""

from __future__ import annotations

import itertools

import pytest

from solvermap.formulations import placement as formulation
from solvermap.formulations.problems.placement import Item, Net, Placement, PlacementProblem, Site, combinatorial_bound, objective
from solvermap.formulations.solver import SolverConfig, Status, available_backends
from solvermap.hardware.checks.placement import check
from solvermap.hardware.targets import load_target
from solvermap.mappers.plasticine.network import annealing_placement, greedy_placement, mesh_of, sites_of
from tests.backends import PYOMO, milp_backends

BACKENDS = [b for b in ("cpsat", "highs", "scip") if b in available_backends("milp")]
AGREEMENT = milp_backends("cpsat", "highs", "scip", *PYOMO)  # the enumerated-optimum tests


def checkerboard_problem() -> PlacementProblem:
    sites = tuple(Site(f"s{r}{c}", {"slot": 1}, (r, c), ("pcu",) if (r + c) % 2 == 0 else ("pmu",))
                  for r in range(3) for c in range(3))
    items = tuple(Item(f"i{k}", {"slot": 1}, "pcu" if k % 2 == 0 else "pmu") for k in range(6))
    nets = (Net("i0", ("i1", "i2", "i3"), 0.9), Net("i4", ("i5",), 0.5), Net("i2", ("i5", "i0"), 0.3),
            Net("i3", ("i4",), 1.0))
    return PlacementProblem(items, sites, nets, broadcast="tree")


def enumerate_optimum(problem: PlacementProblem) -> float:
    names = [s.name for s in problem.sites]
    best = None
    for perm in itertools.permutations(range(len(names)), len(problem.items)):
        decision = Placement({it.name: names[s] for it, s in zip(problem.items, perm)})
        if check(problem, decision).ok:
            value = objective(problem, decision)
            best = value if best is None else min(best, value)
    return best


@pytest.mark.parametrize("backend", AGREEMENT)
def test_tree_mode_reaches_the_enumerated_optimum(backend):
    problem = checkerboard_problem()
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=30))
    assert solved.result.status == Status.OPTIMAL and check(problem, solved.decision).ok
    assert objective(problem, solved.decision) == pytest.approx(enumerate_optimum(problem), abs=1e-6)


def test_a_broadcast_pays_its_bounding_box_not_one_distance_per_sink():
    sites = tuple(Site(f"s{c}", {"slot": 1}, (0, c)) for c in range(4))
    items = tuple(Item(f"i{k}", {"slot": 1}) for k in range(4))
    placement = Placement({f"i{k}": f"s{k}" for k in range(4)})
    tree = PlacementProblem(items, sites, (Net("i0", ("i1", "i2", "i3"), 1.0),), broadcast="tree")
    per_sink = PlacementProblem(items, sites, (Net("i0", ("i1", "i2", "i3"), 1.0),), broadcast="per_sink")
    assert objective(tree, placement) == 3.0 and objective(per_sink, placement) == 6.0


def test_the_tree_bound_is_valid():
    problem = checkerboard_problem()
    assert combinatorial_bound(problem) <= enumerate_optimum(problem) + 1e-9
    assert combinatorial_bound(problem) > 0


def test_tree_mode_without_coordinates_is_diagnosed():
    problem = PlacementProblem((Item("a"), Item("b")), (Site("x"), Site("y")), (Net("a", ("b",), 1.0),),
                               broadcast="tree")
    assert "grid coordinates" in formulation.diagnose(problem)


def test_the_plasticine_grid_is_a_checkerboard_with_dag_columns():
    spec = load_target("plasticine-hybrid")
    sites = sites_of(spec)
    mesh = mesh_of(spec)
    kinds = [s.types[0] for s in sites]
    assert len(sites) == mesh.rows * mesh.cols == 8 * 18
    assert kinds.count("pcu") == spec.pcu.count and kinds.count("pmu") == spec.pmu.count
    assert kinds.count("dag") == spec.dag.count
    assert {s.coord[1] for s in sites if s.types == ("dag",)} == {0, mesh.cols - 1}


def test_annealing_improves_on_greedy_and_both_are_valid():
    problem = checkerboard_problem()
    greedy = greedy_placement(problem)
    annealed = annealing_placement(problem, seed=0, moves_per_item=200)
    assert check(problem, greedy).ok and check(problem, annealed).ok
    assert objective(problem, annealed) <= objective(problem, greedy) + 1e-9
    assert annealing_placement(problem, seed=0, moves_per_item=200) == annealed  # deterministic
