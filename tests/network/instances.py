"""Small network instances with optima known by enumeration (tests/network/enumeration.py)."""

from __future__ import annotations

from solvermap.formulations.problems.link_split import SplitProblem
from solvermap.formulations.problems.routing import Mesh, RouteNet, RoutingProblem
from solvermap.formulations.problems.vc_allocation import VcPath, VcProblem

MESH = Mesh(2, 3)


def static_congested() -> RoutingProblem:
    """One track per direction: two vector links compete for the row (0,0)→(0,2); a broadcast from the
    middle; a scalar link on its own network."""
    nets = (
        RouteNet("a", (0, 0), ((0, 2),), "vector", 1.0),
        RouteNet("b", (0, 0), ((0, 1),), "vector", 0.5),
        RouteNet("c", (1, 1), ((0, 0), (1, 2)), "vector", 0.8),
        RouteNet("s", (0, 0), ((1, 2),), "scalar", 0.3),
    )
    return RoutingProblem(MESH, nets, {"vector": 1, "scalar": 1}, None, margin=3, name="static_congested")


def dynamic_limited() -> RoutingProblem:
    """Three dynamic paths through one column; at most 2 per link (2 VCs)."""
    nets = (
        RouteNet("p", (0, 0), ((1, 2),), "vector", 1.0, "dynamic"),
        RouteNet("q", (0, 0), ((0, 2), (1, 1)), "vector", 0.7, "dynamic"),
        RouteNet("r", (1, 0), ((0, 2),), "scalar", 0.4, "dynamic"),
    )
    return RoutingProblem(MESH, nets, {"vector": 1, "scalar": 1}, 2, margin=3, name="dynamic_limited")


def mixed() -> RoutingProblem:
    nets = (
        RouteNet("a", (0, 0), ((0, 2),), "vector", 1.0, "static"),
        RouteNet("b", (0, 1), ((0, 2), (1, 0)), "vector", 0.6, "static"),
        RouteNet("d", (0, 0), ((1, 2),), "vector", 0.2, "dynamic"),
    )
    return RoutingProblem(MESH, nets, {"vector": 1, "scalar": 4}, 1, margin=3, name="mixed")


ROUTING = {"static_congested": static_congested, "dynamic_limited": dynamic_limited, "mixed": mixed}


def hybrid_split(mandatory: str | None = None) -> SplitProblem:
    """Four vector links want the single track out of (0,0) eastward and southward."""
    nets = (
        RouteNet("hot", (0, 0), ((0, 2),), "vector", 1.0, importance=1.0),
        RouteNet("wide", (0, 0), ((0, 1), (1, 1), (1, 2)), "vector", 0.4, importance=1.2),
        RouteNet("cold", (0, 0), ((1, 0),), "vector", 0.1, importance=0.1),
        RouteNet("side", (1, 2), ((0, 0),), "vector", 0.5, importance=0.5),
    )
    routing = RoutingProblem(MESH, nets, {"vector": 1, "scalar": 4}, None, margin=3)
    return SplitProblem(routing, mandatory)


def greedy_trap_split() -> SplitProblem:
    """On a 1×3 line, the most important link blocks two that together carry more (L320's rule loses)."""
    line = Mesh(1, 3)
    nets = (RouteNet("big", (0, 0), ((0, 2),), "vector", 1.0, importance=1.0),
            RouteNet("left", (0, 0), ((0, 1),), "vector", 0.6, importance=0.6),
            RouteNet("right", (0, 1), ((0, 2),), "vector", 0.6, importance=0.6))
    return SplitProblem(RoutingProblem(line, nets, {"vector": 1, "scalar": 4}, None, margin=3))


def static_feasible_split() -> SplitProblem:
    nets = (RouteNet("a", (0, 0), ((0, 2),), "vector", 1.0, importance=1.0),
            RouteNet("b", (1, 2), ((1, 0),), "vector", 1.0, importance=1.0))
    return SplitProblem(RoutingProblem(MESH, nets, {"vector": 1, "scalar": 4}, None, margin=3), "static")


def _row(a, b):
    """Links of the straight path from a to b on one row or column."""
    links = []
    (r, c) = a
    while (r, c) != b:
        nr = r + (b[0] > r) - (b[0] < r)
        nc = c + (b[1] > c) - (b[1] < c) if nr == r else c
        links.append(((r, c), (nr, nc)))
        r, c = nr, nc
    return tuple(links)


def odd_cycle(mode: str = "per_path", vcs: int = 4) -> VcProblem:
    """Three paths that pairwise share one link: the load bound is 2, one VC per path needs 3."""
    p1 = VcPath("p1", (0, 0), ((0, 2),), (_row((0, 0), (0, 2)),))
    p2 = VcPath("p2", (1, 1), ((0, 2), (1, 0)), ((((1, 1), (0, 1)), ((0, 1), (0, 2)), ((1, 1), (1, 0))),))
    p3 = VcPath("p3", (1, 2), ((0, 1),), ((((1, 2), (1, 1)), ((1, 1), (1, 0)), ((1, 0), (0, 0)), ((0, 0), (0, 1))),))
    return VcProblem((p1, p2, p3), vcs, mode, name=f"odd_cycle_{mode}")


def shared_link(vcs: int = 3) -> VcProblem:
    """Three paths cross (0,0)→(0,1), two of them leaving the same PB (their port buffers are their own)."""
    p1 = VcPath("x", (0, 0), ((0, 2),), (_row((0, 0), (0, 2)),))
    p2 = VcPath("y", (0, 0), ((1, 1),), ((((0, 0), (0, 1)), ((0, 1), (1, 1))),))
    p3 = VcPath("z", (1, 0), ((0, 1),), ((((1, 0), (0, 0)), ((0, 0), (0, 1))),))
    return VcProblem((p1, p2, p3), vcs, "per_hop", name="shared_link")


def joint_detour(vcs: int = 3) -> VcProblem:
    """Three paths into (0,2): routed along row 0 they need 3 VCs on (0,1)→(0,2); ``a`` or ``b`` may detour
    through row 1 (two hops longer) so that 2 VCs suffice."""
    straight = _row((0, 1), (0, 2))
    a = VcPath("a", (0, 1), ((0, 2),), (straight, (((0, 1), (1, 1)), ((1, 1), (1, 2)), ((1, 2), (0, 2)))), 1.0)
    b = VcPath("b", (0, 0), ((0, 2),), (_row((0, 0), (0, 2)), (((0, 0), (1, 0)), ((1, 0), (1, 1)), ((1, 1), (1, 2)),
                                                                ((1, 2), (0, 2)))), 1.0)
    c = VcPath("c", (1, 1), ((0, 2),), ((((1, 1), (0, 1)), ((0, 1), (0, 2))),), 1.0)
    return VcProblem((a, b, c), vcs, "per_path", joint=True, name="joint_detour")
