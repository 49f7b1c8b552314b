"""Independent checker for VC allocation (never imports the VC formulation).

Rules (stable names for mutation tests):

``missing``     a dynamic path has no tree or no VC on one of its links, or an unknown path is named
``route``       the tree is not one of the path's candidates, or not a tree from the source to every sink
``vc_range``    a VC index outside [0, v#)
``vc_conflict`` two logical paths on the same (link, VC) — the seed's rule that "no two logical paths
                may be allowed to conflict at any point in the network" (L316)
``deadlock``    the channel dependency graph is cyclic. Channels: (link, VC) of the dynamic network,
                the exclusive static track of each static tree link, each path's own injection buffer at
                its source and its own ejection buffer at each sink (NT10). Edges: along every tree (the
                injection buffer feeds the source's outgoing links; a link feeds the links leaving its
                head node and, at a sink, that sink's ejection buffer), and the PB backpressure of L314:
                the ejection buffer of net a at a PB context → the injection buffer of every net b that
                context's firing waits on.
"""

from __future__ import annotations

import networkx as nx

from solvermap.formulations.problems.vc_allocation import VcAssignment, VcPath, VcProblem
from solvermap.results import CheckReport


def _is_tree(path: VcPath, tree: tuple) -> bool:
    entered: dict = {}
    for a, b in tree:
        if abs(a[0] - b[0]) + abs(a[1] - b[1]) != 1:
            return False
        entered[b] = entered.get(b, 0) + 1
    if any(v > 1 for v in entered.values()) or path.source in entered:
        return False
    graph = nx.DiGraph(list(tree))
    seen = {path.source} | (nx.descendants(graph, path.source) if path.source in graph else set())
    return all(s in seen for s in path.sinks) and all(a in seen for a, _ in tree)


def check(problem: VcProblem, decision: VcAssignment) -> CheckReport:
    report = CheckReport()
    paths = {p.name: p for p in problem.paths}
    for name in set(decision.routes) | set(decision.vcs):
        if name not in paths:
            report.add("missing", f"decision names unknown path {name!r}")
    owner: dict[tuple, str] = {}
    trees: dict[str, tuple] = {}
    for p in problem.paths:
        tree = decision.routes.get(p.name)
        if tree is None:
            report.add("missing", f"path {p.name!r} has no tree")
            continue
        tree = tuple(tree)
        trees[p.name] = tree
        allowed = p.candidates if problem.joint else p.candidates[:1]
        if tuple(sorted(tree)) not in {tuple(sorted(t)) for t in allowed}:
            report.add("route", f"path {p.name!r} uses a tree that is not one of its candidates")
        if not _is_tree(p, tree):
            report.add("route", f"path {p.name!r}: its links are not a tree from {p.source} to every sink")
        vcs = decision.vcs.get(p.name, {})
        for link in tree:
            if link not in vcs:
                report.add("missing", f"path {p.name!r} has no VC on {link}")
                continue
            k = vcs[link]
            if not 0 <= k < problem.max_vcs:
                report.add("vc_range", f"path {p.name!r} uses VC {k} on {link}; the routers have {problem.max_vcs}")
            if problem.mode == "per_path" and len(set(vcs.values())) > 1:
                report.add("vc_range", f"path {p.name!r} changes VC in per_path mode")
            other = owner.get((link, k))
            if other is not None and other != p.name:
                report.add("vc_conflict", f"paths {other!r} and {p.name!r} share VC {k} on {link}")
            owner[(link, k)] = p.name
    cycle = _cdg_cycle(problem, decision, trees)
    if cycle:
        shown = " -> ".join(str(c) for c in cycle[:6])
        report.add("deadlock", f"channel dependency cycle of {len(cycle)} channels: {shown} ...")
    return report


def _cdg_cycle(problem: VcProblem, decision: VcAssignment, trees: dict[str, tuple]) -> list | None:
    g = nx.DiGraph()
    first: dict[str, list] = {}
    eject: dict[tuple[str, tuple], tuple] = {}

    def add_tree(name: str, source, sinks, tree, channel) -> None:
        kids: dict = {}
        for a, b in tree:
            kids.setdefault(a, []).append((a, b))
        start = ("inject", name, source)  # the path's own output buffer at its source PB (NT10)
        first[name] = [start]
        g.add_node(start)
        for e in kids.get(source, []):
            g.add_edge(start, channel(e))
        for a, b in tree:
            for e in kids.get(b, []):
                g.add_edge(channel((a, b)), channel(e))
            if b in sinks:
                buf = ("eject", name, b)
                eject[(name, b)] = buf
                g.add_edge(channel((a, b)), buf)

    for p in problem.paths:
        tree = trees.get(p.name)
        if tree is None:
            continue
        vcs = decision.vcs.get(p.name, {})
        add_tree(p.name, p.source, set(p.sinks), tree,
                 lambda link, vcs=vcs: ("dyn", link, vcs.get(link, -1)))
    for p in problem.static_paths:
        add_tree(p.name, p.source, set(p.sinks), tuple(p.candidates[0]),
                 lambda link, name=p.name: ("static", link, name))
    for a, b, node in problem.backpressure:
        buf = eject.get((a, node))
        if buf is None:
            continue
        for ch in first.get(b, []):
            g.add_edge(buf, ch)
    try:
        return [u for u, _ in nx.find_cycle(g)]
    except nx.NetworkXNoCycle:
        return None
