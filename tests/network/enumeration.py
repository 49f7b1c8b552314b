"""Brute-force optima of tiny routing, split and VC problems, judged by the independent checkers."""

from __future__ import annotations

import itertools
from functools import lru_cache

from solvermap.formulations.problems.link_split import Split, SplitProblem
from solvermap.formulations.problems.link_split import objective as split_objective
from solvermap.formulations.problems.routing import Mesh, RouteNet, Routes, RoutingProblem, assign_tracks, prune
from solvermap.formulations.problems.routing import objective as routing_objective
from solvermap.formulations.problems.vc_allocation import VcAssignment, VcProblem, path_links
from solvermap.formulations.problems.vc_allocation import objective as vc_objective
from solvermap.hardware.checks.link_split import check as split_check
from solvermap.hardware.checks.routing import check as routing_check
from solvermap.hardware.checks.vc_allocation import check as vc_check


@lru_cache(maxsize=None)
def trees_of(mesh: Mesh, source, sinks) -> tuple:
    """Every distinct pruned arborescence from ``source`` reaching all ``sinks`` (all link subsets)."""
    links = mesh.links()
    out = set()
    for k in range(1, len(links) + 1):
        for subset in itertools.combinations(links, k):
            tree = prune(subset, source, sinks)
            reached = {b for _, b in tree} | {source}
            if all(s in reached for s in sinks) and len(tree) == len({b for _, b in tree}):
                out.add(tree)
    return tuple(sorted(out))


def routing_optimum(problem: RoutingProblem) -> float:
    options = [trees_of(problem.mesh, n.source, tuple(n.sinks)) for n in problem.nets]
    best = None
    for combo in itertools.product(*options):
        trees = {n.name: t for n, t in zip(problem.nets, combo)}
        routes = Routes(trees, assign_tracks(problem, trees))
        if routing_check(problem, routes).ok:
            value = routing_objective(problem, routes)
            best = value if best is None else min(best, value)
    assert best is not None
    return best


def split_optimum(problem: SplitProblem) -> float:
    nets = [n for n in problem.routing.nets if n.sinks]
    best = None
    for chosen in itertools.product([False, True], repeat=len(nets)):
        statics = [n for n, c in zip(nets, chosen) if c]
        options = [trees_of(problem.routing.mesh, n.source, tuple(n.sinks)) for n in statics]
        as_static = RoutingProblem(problem.routing.mesh, tuple(
            RouteNet(n.name, n.source, n.sinks, n.kind, n.weight, "static", n.importance) for n in statics),
            problem.routing.static_capacity, None, problem.routing.margin)
        for combo in itertools.product(*options):
            trees = {n.name: t for n, t in zip(statics, combo)}
            decision = Split(frozenset(trees), Routes(trees, assign_tracks(as_static, trees)))
            if split_check(problem, decision).ok:
                value = split_objective(problem, decision)
                best = value if best is None else max(best, value)
                break  # any routable tree set gives the same objective
    assert best is not None
    return best


def vc_optimum(problem: VcProblem) -> float:
    """Fewest VCs over every tree choice and every VC per path (per_path) or per (path, link) (per_hop):
    for K = 1, 2, … a backtracking search over the slots for a K-colouring with no shared (link, VC),
    each complete colouring judged by the checker."""
    choices = [p.candidates if problem.joint else p.candidates[:1] for p in problem.paths]
    for k in range(1, problem.max_vcs + 1):
        for trees in itertools.product(*choices):
            routes = {p.name: tuple(t) for p, t in zip(problem.paths, trees)}
            slots = []
            for p in problem.paths:
                links = path_links(p, routes[p.name])
                slots += [(p.name, tuple(links))] if problem.mode == "per_path" else [(p.name, (lk,)) for lk in links]
            if _colour(problem, routes, slots, k, 0, {}, {}):
                return float(k)
    raise AssertionError("no allocation within the router's VCs")


def _colour(problem, routes, slots, k, i, used, vcs) -> bool:
    if i == len(slots):
        decision = VcAssignment(routes, {n: dict(m) for n, m in vcs.items()})
        return vc_check(problem, decision).ok and vc_objective(problem, decision) <= k
    name, links = slots[i]
    for colour in range(k):
        if any(used.get((lk, colour), name) != name for lk in links):
            continue
        for lk in links:
            used[(lk, colour)] = name
        vcs.setdefault(name, {}).update({lk: colour for lk in links})
        if _colour(problem, routes, slots, k, i + 1, used, vcs):
            return True
        for lk in links:
            del used[(lk, colour)]
            del vcs[name][lk]
    return False
