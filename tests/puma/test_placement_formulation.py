"""The shared placement model: known optima by enumeration on every backend, and its checker."""

from __future__ import annotations

import itertools

import pytest

from solvermap.formulations import placement as formulation
from solvermap.formulations.problems.placement import (
    Item,
    Net,
    Placement,
    PlacementProblem,
    Site,
    combinatorial_bound,
    link_loads,
    objective,
    traffic,
)
from solvermap.formulations.solver import SolverConfig, Status
from solvermap.hardware.checks.placement import check
from tests.backends import PYOMO, milp_backends

BACKENDS = ["cpsat", "highs", "scip", "cbc"]


def enumerate_optimum(problem: PlacementProblem) -> float:
    names = [it.name for it in problem.items]
    best = None
    for combo in itertools.product([s.name for s in problem.sites], repeat=len(names)):
        decision = Placement(dict(zip(names, combo)))
        if check(problem, decision).ok:
            value = objective(problem, decision)
            best = value if best is None else min(best, value)
    assert best is not None
    return best


def grid_problem(**kw) -> PlacementProblem:
    sites = tuple(Site(f"s{r}{c}", {"slot": 1}, (r, c)) for r in range(2) for c in range(3))
    items = tuple(Item(f"i{k}", {"slot": 1}, work=float(k + 1)) for k in range(5))
    nets = (Net("i0", ("i1", "i2"), 4.0), Net("i1", ("i3",), 3.0), Net("i2", ("i3", "i4"), 2.0), Net("i4", ("i0",), 1.0))
    return PlacementProblem(items, sites, nets, **kw)


def uniform_problem(**kw) -> PlacementProblem:
    sites = tuple(Site(f"g{k}", {"mvmu": 2}) for k in range(3))
    items = tuple(Item(f"b{k}", {"mvmu": 1}) for k in range(6))
    nets = (Net("b0", ("b1", "b2", "b3"), 5.0), Net("b3", ("b4", "b5"), 3.0), Net("b5", ("b0",), 2.0), Net("b2", ("b4",), 1.0))
    return PlacementProblem(items, sites, nets, hop_offset=1.0, **kw)


def table_problem() -> PlacementProblem:
    sites = tuple(Site(f"t{k}", {"cap": 2}) for k in range(3))
    table = ((0, 1.5, 4), (1.5, 0, 2), (4, 2, 0))
    items = tuple(Item(f"a{k}", {"cap": 1}) for k in range(4))
    nets = (Net("a0", ("a1", "a2", "a3"), 2.0), Net("a3", ("a1",), 5.0))
    return PlacementProblem(items, sites, nets, distances=table, fixed={"a0": "t0"})


CASES = {
    "grid": grid_problem(hop_offset=0.0),
    "grid_offset": grid_problem(hop_offset=1.0),
    "grid_per_sink": grid_problem(broadcast="per_sink"),
    "grid_balance": grid_problem(balance_weight=0.5),
    "grid_links": grid_problem(link_weight=2.0),
    "uniform": uniform_problem(),
    "uniform_symmetric": uniform_problem(symmetric_sites=True),
    "table_fixed": table_problem(),
}


@pytest.mark.parametrize("backend", milp_backends(*BACKENDS, *PYOMO))
@pytest.mark.parametrize("case", sorted(CASES))
def test_backends_reach_the_enumerated_optimum(case, backend):
    problem = CASES[case]
    solved = formulation.solve(problem, SolverConfig(backend=backend, time_limit_s=30))
    assert solved.result.status == Status.OPTIMAL
    assert check(problem, solved.decision).ok
    assert objective(problem, solved.decision) == pytest.approx(enumerate_optimum(problem), abs=1e-6)


def test_per_site_broadcast_counts_a_destination_site_once():
    sites = (Site("a", {"k": 1}, (0, 0)), Site("b", {"k": 2}, (0, 1)))
    items = (Item("src", {"k": 1}), Item("x", {"k": 1}), Item("y", {"k": 1}))
    net = (Net("src", ("x", "y"), 10.0),)
    decision = Placement({"src": "a", "x": "b", "y": "b"})
    assert traffic(PlacementProblem(items, sites, net), decision) == 10.0
    assert traffic(PlacementProblem(items, sites, net, broadcast="per_sink"), decision) == 20.0


def test_xy_route_loads_the_row_then_the_column():
    problem = grid_problem()
    decision = Placement({"i0": "s00", "i1": "s12", "i2": "s00", "i3": "s02", "i4": "s10"})
    loads = link_loads(problem, decision)
    # i0 → i1: (0,0)→(0,1)→(0,2)→(1,2) carries 4
    assert loads[((0, 0), (0, 1))] >= 4 and loads[((0, 2), (1, 2))] >= 4


def test_warm_start_from_hint_is_never_worse_than_the_hint():
    problem = uniform_problem()
    hint = Placement({"b0": "g0", "b1": "g0", "b2": "g1", "b3": "g1", "b4": "g2", "b5": "g2"})
    solved = formulation.solve(problem, SolverConfig(backend="cpsat", time_limit_s=5), hint)
    assert objective(problem, solved.decision) <= objective(problem, hint)


def test_combinatorial_bound_is_below_the_optimum():
    for problem in CASES.values():
        assert combinatorial_bound(problem) <= enumerate_optimum(problem) + 1e-9


def test_diagnose_names_the_item_that_fits_nowhere():
    problem = PlacementProblem((Item("huge", {"mvmu": 9}),), (Site("s", {"mvmu": 6}),), ())
    assert "huge" in formulation.diagnose(problem)


def test_diagnose_names_the_resource_in_short_supply():
    problem = PlacementProblem(tuple(Item(f"b{k}", {"mvmu": 1}) for k in range(3)), (Site("s", {"mvmu": 2}),), ())
    assert "mvmu" in formulation.diagnose(problem)


def test_infeasible_capacity_is_explained_by_group():
    problem = PlacementProblem(tuple(Item(f"b{k}", {"mvmu": 1}) for k in range(3)), (Site("s", {"mvmu": 2}),), ())
    solved = formulation.solve(problem, SolverConfig(backend="highs", time_limit_s=5))
    assert solved.result.status == Status.INFEASIBLE
    assert set(solved.explanation) >= {"capacity"}


# --------------------------------------------------------------------------- checker mutations


def valid_decision():
    problem = table_problem()
    return problem, Placement({"a0": "t0", "a1": "t1", "a2": "t1", "a3": "t2"})


def test_checker_accepts_a_valid_placement():
    problem, decision = valid_decision()
    assert check(problem, decision).ok


def test_checker_rejects_a_missing_item():
    problem, decision = valid_decision()
    broken = dict(decision.assignment)
    del broken["a2"]
    assert check(problem, Placement(broken)).rules() == {"placed"}


def test_checker_rejects_an_unknown_site():
    problem, decision = valid_decision()
    assert "unknown" in check(problem, Placement({**decision.assignment, "a3": "t9"})).rules()


def test_checker_rejects_an_unknown_item():
    problem, decision = valid_decision()
    assert check(problem, Placement({**decision.assignment, "ghost": "t0"})).rules() == {"unknown"}


def test_checker_rejects_an_over_full_site():
    problem, decision = valid_decision()
    assert check(problem, Placement({**decision.assignment, "a3": "t1"})).rules() == {"capacity"}


def test_checker_rejects_a_moved_fixed_item():
    problem, decision = valid_decision()
    assert check(problem, Placement({**decision.assignment, "a0": "t2", "a3": "t0"})).rules() == {"fixed"}


def test_checker_rejects_a_type_mismatch():
    sites = (Site("io", {}, types=("io",)), Site("tile", {"m": 1}))
    problem = PlacementProblem((Item("in", type="io"), Item("b", {"m": 1})), sites, ())
    assert check(problem, Placement({"in": "tile", "b": "tile"})).rules() == {"type"}


# --------------------------------------------------------------------------- large-neighbourhood search


def test_neighbourhood_traffic_plus_the_dropped_nets_is_the_whole_traffic():
    problem = grid_problem(hop_offset=1.0)
    current = Placement({"i0": "s00", "i1": "s12", "i2": "s01", "i3": "s02", "i4": "s10"})
    sub, constant = formulation.neighbourhood_problem(problem, current, ["s00", "s01"])
    assert {it.name for it in sub.items if it.name not in sub.fixed} == {"i0", "i2"}
    assert traffic(sub, current) + constant == pytest.approx(traffic(problem, current))


@pytest.mark.parametrize("case", ["grid_offset", "uniform", "table_fixed"])
def test_lns_keeps_a_valid_placement_and_never_worsens_its_start(case):
    problem = CASES[case]
    start = formulation.solve(problem, SolverConfig(backend="cpsat", time_limit_s=5, rel_gap=0.9)).decision
    improved = formulation.improve(problem, SolverConfig(backend="cpsat", time_limit_s=5, seed=1), start, sites_per_round=2)
    assert check(problem, improved.decision).ok
    assert objective(problem, improved.decision) <= objective(problem, start) + 1e-9
    assert improved.result.bound <= objective(problem, improved.decision) + 1e-9


def test_lns_reaches_the_optimum_of_a_small_grid_from_a_bad_start():
    problem = grid_problem(hop_offset=1.0)
    bad = Placement({"i0": "s00", "i1": "s12", "i2": "s10", "i3": "s02", "i4": "s11"})
    improved = formulation.improve(problem, SolverConfig(backend="cpsat", time_limit_s=10, seed=0), bad, sites_per_round=4,
                                   rounds=12)
    assert objective(problem, improved.decision) == pytest.approx(enumerate_optimum(problem))


def lns_problem() -> PlacementProblem:
    """A 3×4 grid, 2 slots per site, 20 items on random nets (seeded): too big to enumerate, small enough
    that every neighbourhood closes quickly."""
    import random

    rng = random.Random(7)
    sites = tuple(Site(f"s{r}{c}", {"slot": 2}, (r, c)) for r in range(3) for c in range(4))
    items = tuple(Item(f"i{k}", {"slot": 1}) for k in range(20))
    nets = tuple(Net(f"i{k}", tuple(f"i{j}" for j in rng.sample([j for j in range(20) if j != k], rng.randint(1, 3))),
                     float(rng.randint(1, 9))) for k in range(20))
    return PlacementProblem(items, sites, nets, hop_offset=1.0)


def spread_start(problem: PlacementProblem) -> Placement:
    """Items dealt round-robin over the sites: valid, and far from optimal."""
    return Placement({it.name: problem.sites[(7 * k) % len(problem.sites)].name for k, it in enumerate(problem.items)})


def test_lns_spends_deterministic_work_so_a_slower_machine_gives_the_same_answer(monkeypatch):
    problem = lns_problem()
    config = SolverConfig(backend="cpsat", time_limit_s=1.5, seed=3)
    start = spread_start(problem)
    first = formulation.improve(problem, config, start, sites_per_round=2, sub_time_limit_s=0.05)
    real = formulation.time.perf_counter
    origin = real()
    monkeypatch.setattr(formulation.time, "perf_counter", lambda: origin + 1.5 * (real() - origin))  # a 1.5× slower machine
    second = formulation.improve(problem, config, start, sites_per_round=2, sub_time_limit_s=0.05)
    assert second.decision == first.decision
    assert [v for _, v in second.details["trajectory"]] == [v for _, v in first.details["trajectory"]]
    assert second.details["rounds"] == first.details["rounds"]
    assert first.details["work"] <= config.time_limit_s + formulation.MIN_SOLVE_WORK + 1e-9  # overshot by at most one sub-solve


def test_lns_re_solves_only_the_neighbourhoods_it_is_given():
    problem = lns_problem()
    start = spread_start(problem)
    free = ["s00", "s01"]
    improved = formulation.improve(problem, SolverConfig(backend="cpsat", time_limit_s=5, seed=0), start,
                                   neighbourhoods=[free, free], rounds=2)
    moved = {n for n, site in improved.decision.assignment.items() if site != start.assignment[n]}
    assert all(start.assignment[n] in free and improved.decision.assignment[n] in free for n in moved)
    assert improved.details["solves"] == 2
    assert objective(problem, improved.decision) <= objective(problem, start)


def test_pair_sweep_first_re_solves_two_sites_that_share_traffic():
    problem = lns_problem()
    start = spread_start(problem)
    improved = formulation.improve(problem, SolverConfig(backend="cpsat", time_limit_s=5, seed=0), start,
                                   sweep_pairs=True, rounds=1)
    moved = {n for n, site in improved.decision.assignment.items() if site != start.assignment[n]}
    sites = {start.assignment[n] for n in moved} | {improved.decision.assignment[n] for n in moved}
    assert moved and len(sites) == 2
    assert any({start.assignment[m] for m in (net.source, *net.sinks)} >= sites for net in problem.nets)
    assert objective(problem, improved.decision) < objective(problem, start)


def test_lns_improves_a_spread_start_on_an_instance_too_big_to_enumerate():
    problem = lns_problem()
    start = spread_start(problem)
    improved = formulation.improve(problem, SolverConfig(backend="cpsat", time_limit_s=3, seed=0), start, sites_per_round=3)
    assert check(problem, improved.decision).ok
    assert objective(problem, improved.decision) < 0.8 * objective(problem, start)
    assert improved.result.bound <= objective(problem, improved.decision) + 1e-9


def test_solve_reports_the_deterministic_work_it_spent():
    problem = lns_problem()
    solved = formulation.solve(problem, SolverConfig(backend="cpsat", time_limit_s=0.3))
    assert 0 < solved.details["work"] <= 0.3 + 0.05
    milp = formulation.solve(CASES["grid"], SolverConfig(backend="highs", time_limit_s=2))
    assert milp.result.status == Status.OPTIMAL  # HiGHS is charged the nodes and iterations it reports
    assert formulation.MIN_SOLVE_WORK <= milp.details["work"] == max(formulation.MIN_SOLVE_WORK, milp.result.work) < 2.0
