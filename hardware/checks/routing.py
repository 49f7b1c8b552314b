"""Independent checker for routes on the Plasticine mesh (never imports the routing formulation).

Rules (stable names for mutation tests):

``missing``           a net with sinks has no tree; or the decision routes a net the problem does not have
``link``              a tree uses a pair of nodes that is not a link of the mesh
``tree``              a tree is not an arborescence rooted at the source (a node entered twice, a link into
                      the source, or a link not reachable from the source)
``connected``         a sink is not reached from the source through the tree
``leaf``              a leaf of the tree is not a sink (a wasted branch)
``region``            a tree leaves its net's region (the terminals' bounding box grown by ``margin``, part of
                      the problem's definition)
``static_capacity``   a link carries more static logical links of one class than it has tracks, or a track
                      index is outside [0, tracks)
``static_exclusive``  two logical links on the same static (link, track) (a switch output carries one
                      logical link for the whole program, seed 004 L302), or a static link without a track
``dynamic_capacity``  a link carries more dynamic logical paths than the router has VCs (L316)
"""

from __future__ import annotations

import networkx as nx

from solvermap.formulations.problems.routing import Link, Node, RouteNet, Routes, RoutingProblem
from solvermap.results import CheckReport


def check_tree(report: CheckReport, problem: RoutingProblem, net: RouteNet, tree: tuple[Link, ...]) -> None:
    """The per-tree rules (``link``, ``tree``, ``connected``, ``leaf``) of one net."""
    mesh = problem.mesh
    entered: dict[Node, int] = {}
    kids: dict[Node, list[Node]] = {}
    for link in tree:
        a, b = link
        if not (mesh.contains(a) and mesh.contains(b) and abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1):
            report.add("link", f"net {net.name!r}: {a}->{b} is not a mesh link")
            continue
        entered[b] = entered.get(b, 0) + 1
        kids.setdefault(a, []).append(b)
    rows = [t[0] for t in net.terminals()]
    cols = [t[1] for t in net.terminals()]
    m = problem.margin
    for link in tree:
        for r, c in link:
            if not (min(rows) - m <= r <= max(rows) + m and min(cols) - m <= c <= max(cols) + m):
                report.add("region", f"net {net.name!r}: node {(r, c)} is outside its region (margin {m})")
                break
    for node, count in entered.items():
        if node == net.source:
            report.add("tree", f"net {net.name!r}: a link enters the source {node}")
        elif count > 1:
            report.add("tree", f"net {net.name!r}: node {node} is entered by {count} links")
    graph = nx.DiGraph([(a, b) for a, bs in kids.items() for b in bs])
    reached = {net.source} | (nx.descendants(graph, net.source) if net.source in graph else set())
    for a, b in tree:
        if a not in reached:
            report.add("tree", f"net {net.name!r}: link {a}->{b} is not reachable from the source {net.source}")
    for s in net.sinks:
        if s not in reached:
            report.add("connected", f"net {net.name!r}: sink {s} is not reached from the source {net.source}")
    sinks = set(net.sinks)
    for node in reached:
        if node != net.source and not kids.get(node) and node not in sinks:
            report.add("leaf", f"net {net.name!r}: leaf {node} is not a sink")


def check(problem: RoutingProblem, decision: Routes) -> CheckReport:
    report = CheckReport()
    names = {n.name for n in problem.nets}
    for name in decision.trees:
        if name not in names:
            report.add("missing", f"decision routes unknown net {name!r}")
    static_use: dict[tuple[str, Link], list[str]] = {}
    dynamic_use: dict[Link, list[str]] = {}
    for net in problem.nets:
        tree = tuple(decision.trees.get(net.name, ()))
        if net.sinks and net.name not in decision.trees:
            report.add("missing", f"net {net.name!r} has no route")
            continue
        check_tree(report, problem, net, tree)
        for link in tree:
            if net.network == "static":
                static_use.setdefault((net.kind, link), []).append(net.name)
            else:
                dynamic_use.setdefault(link, []).append(net.name)
    check_static(report, problem, decision, static_use)
    if problem.dynamic_capacity is not None:
        for link, users in dynamic_use.items():
            if len(users) > problem.dynamic_capacity:
                report.add("dynamic_capacity", f"link {link[0]}->{link[1]} carries {len(users)} dynamic paths "
                           f"({', '.join(sorted(users)[:4])}...), {problem.dynamic_capacity} VCs")
    return report


def check_static(report: CheckReport, problem: RoutingProblem, decision: Routes,
                 static_use: dict[tuple[str, Link], list[str]]) -> None:
    """Track rules of the static nets: capacity per (class, link) and one net per (link, track)."""
    for (cls, link), users in static_use.items():
        cap = problem.static_capacity.get(cls, 0)
        if len(users) > cap:
            report.add("static_capacity", f"static {cls} link {link[0]}->{link[1]} carries {len(users)} logical "
                       f"links, {cap} tracks")
        owner: dict[int, str] = {}
        for name in users:
            track = decision.tracks.get((name, link))
            if track is None:
                report.add("static_exclusive", f"net {name!r} uses static link {link[0]}->{link[1]} without a track")
                continue
            if not 0 <= track < cap:
                report.add("static_capacity", f"net {name!r} on track {track} of {link[0]}->{link[1]}, {cap} tracks")
            if track in owner:
                report.add("static_exclusive", f"nets {owner[track]!r} and {name!r} share track {track} of "
                           f"static link {link[0]}->{link[1]}")
            owner[track] = name
