"""Mutation tests: take a valid routing / split / VC decision, break one rule, expect that rule."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from solvermap.formulations.problems.link_split import Split
from solvermap.formulations.problems.routing import RouteNet, Routes, RoutingProblem, assign_tracks, xy_tree
from solvermap.formulations.problems.vc_allocation import VcAssignment, VcPath, VcProblem
from solvermap.hardware.checks import link_split as split_check
from solvermap.hardware.checks import routing as routing_check
from solvermap.hardware.checks import vc_allocation as vc_check
from solvermap.mappers.plasticine.network import greedy_colouring, greedy_routes, greedy_split

from . import instances


def routed(problem: RoutingProblem) -> Routes:
    """A valid routing: the greedy router's, or the model's where greedy gets stuck (static_congested)."""
    routes = greedy_routes(problem)
    if routes is None:
        from solvermap.formulations import routing
        from solvermap.formulations.solver import SolverConfig

        routes = routing.solve(problem, SolverConfig(backend="highs")).decision
    assert routes is not None and routing_check.check(problem, routes).ok
    return routes


def with_tree(routes: Routes, name: str, tree) -> Routes:
    return Routes({**routes.trees, name: tuple(tree)}, dict(routes.tracks))


# ----------------------------------------------------------------------------- routing


def test_a_route_missing_a_sink_breaks_connected():
    problem = instances.static_congested()
    routes = routed(problem)
    tree = routes.trees["c"]
    cut = tuple(link for link in tree if link[1] != (1, 2))
    assert "connected" in routing_check.check(problem, with_tree(routes, "c", cut)).rules()


def test_a_node_entered_twice_breaks_tree():
    problem = instances.dynamic_limited()
    routes = routed(problem)
    tree = routes.trees["p"] + (((0, 1), (1, 1)), ((1, 0), (1, 1)))
    assert "tree" in routing_check.check(problem, with_tree(routes, "p", tree)).rules()


def test_a_jump_between_non_adjacent_nodes_breaks_link():
    problem = instances.dynamic_limited()
    routes = routed(problem)
    assert "link" in routing_check.check(problem, with_tree(routes, "p", (((0, 0), (1, 2)),))).rules()


def test_a_dead_end_branch_breaks_leaf():
    problem = instances.dynamic_limited()
    routes = routed(problem)
    tree = (((0, 0), (0, 1)), ((0, 1), (0, 2)), ((0, 2), (1, 2)), ((0, 0), (1, 0)))  # p plus a stub to (1,0)
    assert routing_check.check(problem, with_tree(routes, "p", tree[:3])).rules() <= {"dynamic_capacity"}
    assert "leaf" in routing_check.check(problem, with_tree(routes, "p", tree)).rules()


def test_a_missing_route_breaks_missing():
    problem = instances.mixed()
    routes = routed(problem)
    trees = {k: v for k, v in routes.trees.items() if k != "a"}
    assert "missing" in routing_check.check(problem, Routes(trees, routes.tracks)).rules()


def test_two_static_links_on_one_track_break_static_exclusive():
    problem = dataclasses.replace(instances.static_congested(), static_capacity={"vector": 2, "scalar": 1})
    routes = routed(problem)
    trees = {**routes.trees, "a": (((0, 0), (0, 1)), ((0, 1), (0, 2))), "b": (((0, 0), (0, 1)),)}
    tracks = assign_tracks(problem, trees)
    assert not (routing_check.check(problem, Routes(trees, tracks)).rules() & {"static_exclusive", "static_capacity"})
    tracks[("b", ((0, 0), (0, 1)))] = tracks[("a", ((0, 0), (0, 1)))]  # two tracks, both on one
    report = routing_check.check(problem, Routes(trees, tracks))
    assert "static_exclusive" in report.rules() and "static_capacity" not in report.rules()


def test_a_track_index_outside_the_link_breaks_static_capacity():
    problem = instances.static_congested()
    routes = routed(problem)
    key = next(iter(routes.tracks))
    report = routing_check.check(problem, Routes(routes.trees, {**routes.tracks, key: 5}))
    assert "static_capacity" in report.rules()


def test_more_dynamic_paths_than_vcs_on_a_link_breaks_dynamic_capacity():
    problem = instances.dynamic_limited()
    trees = {n.name: xy_tree(n) for n in problem.nets}
    p_tree = ((((0, 0), (0, 1)), ((0, 1), (0, 2)), ((0, 2), (1, 2))))
    r_tree = (((1, 0), (0, 0)), ((0, 0), (0, 1)), ((0, 1), (0, 2)))
    q_tree = (((0, 0), (0, 1)), ((0, 1), (0, 2)), ((0, 1), (1, 1)))
    trees.update({"p": p_tree, "q": q_tree, "r": r_tree})
    assert "dynamic_capacity" in routing_check.check(problem, Routes(trees, {})).rules()


def test_a_route_outside_the_region_breaks_region():
    net = RouteNet("row", (0, 0), ((0, 2),), "vector", 1.0, "dynamic")
    problem = RoutingProblem(instances.MESH, (net,), {"vector": 1, "scalar": 1}, None, margin=0)
    assert routing_check.check(problem, Routes({"row": xy_tree(net)}, {})).ok
    detour = (((0, 0), (1, 0)), ((1, 0), (1, 1)), ((1, 1), (1, 2)), ((1, 2), (0, 2)))
    assert "region" in routing_check.check(problem, Routes({"row": detour}, {})).rules()
    assert routing_check.check(dataclasses.replace(problem, margin=1), Routes({"row": detour}, {})).ok


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 2), st.integers(0, 1), st.integers(0, 2)),
                min_size=1, max_size=4))
def test_xy_trees_always_pass_the_tree_rules(pairs):
    nets = tuple(RouteNet(f"n{k}", (a, b), ((c, d),), "vector", 1.0, "dynamic")
                 for k, (a, b, c, d) in enumerate(pairs) if (a, b) != (c, d))
    problem = RoutingProblem(instances.MESH, nets, {"vector": 1, "scalar": 1}, None, margin=0)
    trees = {n.name: xy_tree(n) for n in nets}
    report = routing_check.check(problem, Routes(trees, assign_tracks(problem, trees)))
    assert not (report.rules() & {"tree", "connected", "leaf", "link", "region"})


# ----------------------------------------------------------------------------- split


def test_a_static_target_with_a_dynamic_link_breaks_mandatory():
    problem = instances.static_feasible_split()
    split = greedy_split(problem)
    assert split_check.check(problem, split).ok
    broken = Split(split.static - {"a"}, Routes({k: v for k, v in split.routes.trees.items() if k != "a"},
                                                {k: v for k, v in split.routes.tracks.items() if k[0] != "a"}))
    assert "mandatory" in split_check.check(problem, broken).rules()


def test_a_static_link_without_a_tree_breaks_missing():
    problem = instances.hybrid_split()
    split = greedy_split(problem)
    name = next(iter(split.static))
    broken = Split(split.static, Routes({k: v for k, v in split.routes.trees.items() if k != name}, split.routes.tracks))
    assert "missing" in split_check.check(problem, broken).rules()


def test_two_static_links_sharing_a_track_break_the_split():
    problem = instances.greedy_trap_split()
    trees = {"big": (((0, 0), (0, 1)), ((0, 1), (0, 2))), "left": (((0, 0), (0, 1)),)}
    tracks = {("big", ((0, 0), (0, 1))): 0, ("big", ((0, 1), (0, 2))): 0, ("left", ((0, 0), (0, 1))): 0}
    report = split_check.check(problem, Split(frozenset(trees), Routes(trees, tracks)))
    assert {"static_exclusive", "static_capacity"} <= report.rules()


# ----------------------------------------------------------------------------- VC allocation


def valid_vcs(problem: VcProblem) -> VcAssignment:
    decision = greedy_colouring(problem)
    assert decision is not None and vc_check.check(problem, decision).ok
    return decision


def test_two_paths_on_one_link_and_vc_break_vc_conflict():
    problem = instances.shared_link(vcs=4)
    decision = valid_vcs(problem)
    vcs = {n: dict(m) for n, m in decision.vcs.items()}
    link = ((0, 0), (0, 1))
    vcs["y"][link] = vcs["x"][link]
    assert "vc_conflict" in vc_check.check(problem, VcAssignment(decision.routes, vcs)).rules()


def test_a_vc_beyond_the_router_breaks_vc_range():
    problem = instances.shared_link(vcs=3)
    decision = valid_vcs(problem)
    vcs = {n: dict(m) for n, m in decision.vcs.items()}
    vcs["z"] = {lk: 7 for lk in vcs["z"]}
    assert "vc_range" in vc_check.check(problem, VcAssignment(decision.routes, vcs)).rules()


def test_a_tree_that_is_not_a_candidate_breaks_route():
    problem = instances.shared_link(vcs=3)
    decision = valid_vcs(problem)
    routes = {**decision.routes, "y": (((0, 0), (1, 0)), ((1, 0), (1, 1)))}
    vcs = {**decision.vcs, "y": {lk: 0 for lk in routes["y"]}}
    assert "route" in vc_check.check(problem, VcAssignment(routes, vcs)).rules()


def test_a_missing_vc_breaks_missing():
    problem = instances.shared_link(vcs=3)
    decision = valid_vcs(problem)
    vcs = {**decision.vcs, "x": {}}
    assert "missing" in vc_check.check(problem, VcAssignment(decision.routes, vcs)).rules()


def test_backpressure_through_two_pbs_in_both_directions_breaks_deadlock():
    a = VcPath("a", (0, 0), ((0, 1),), ((((0, 0), (0, 1)),),))
    b = VcPath("b", (0, 1), ((0, 0),), ((((0, 1), (0, 0)),),))
    acyclic = VcProblem((a, b), 2, backpressure=(("a", "b", (0, 1)),))
    decision = valid_vcs(acyclic)
    assert vc_check.check(acyclic, decision).ok
    cyclic = dataclasses.replace(acyclic, backpressure=(("a", "b", (0, 1)), ("b", "a", (0, 0))))
    assert "deadlock" in vc_check.check(cyclic, decision).rules()


def test_static_trees_join_the_channel_dependency_graph():
    a = VcPath("a", (0, 0), ((0, 1),), ((((0, 0), (0, 1)),),))
    s = VcPath("s", (0, 1), ((0, 0),), ((((0, 1), (0, 0)),),))
    problem = VcProblem((a,), 2, static_paths=(s,), backpressure=(("a", "s", (0, 1)), ("s", "a", (0, 0))))
    assert "deadlock" in vc_check.check(problem, valid_vcs(dataclasses.replace(problem, backpressure=()))).rules()
