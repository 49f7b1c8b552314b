"""Independent checker for the hybrid static/dynamic split (never imports the split formulation).

Rules (stable names for mutation tests):

``unknown``           the split names a logical link the problem does not have
``mandatory``         a pure static target leaves a logical link off the static network, or a pure dynamic
                      target puts one on it
``missing``           a static logical link has no static tree
``link`` ``tree`` ``connected`` ``leaf``  the static tree is not a tree from the source to every sink
                      (the per-tree rules of :mod:`solvermap.hardware.checks.routing`)
``static_capacity`` ``static_exclusive``  static tracks over capacity, or two logical links on one track
                      (L302)
"""

from __future__ import annotations

from solvermap.formulations.problems.link_split import Split, SplitProblem
from solvermap.formulations.problems.routing import Link
from solvermap.hardware.checks.routing import check_static, check_tree
from solvermap.results import CheckReport


def check(problem: SplitProblem, decision: Split) -> CheckReport:
    report = CheckReport()
    nets = {n.name: n for n in problem.routing.nets if n.sinks}
    for name in decision.static:
        if name not in nets:
            report.add("unknown", f"split puts unknown logical link {name!r} on the static network")
    for name in decision.routes.trees:
        if name not in decision.static:
            report.add("unknown", f"split routes {name!r} statically but does not put it on the static network")
    if problem.mandatory == "static":
        for name in sorted(set(nets) - set(decision.static)):
            report.add("mandatory", f"logical link {name!r} is not static on a pure static network")
    if problem.mandatory == "dynamic" and decision.static:
        report.add("mandatory", f"{len(decision.static)} logical links are static on a pure dynamic network")
    use: dict[tuple[str, Link], list[str]] = {}
    for name in sorted(decision.static):
        net = nets.get(name)
        if net is None:
            continue
        tree = decision.routes.trees.get(name)
        if tree is None:
            report.add("missing", f"static logical link {name!r} has no tree")
            continue
        check_tree(report, problem.routing, net, tuple(tree))
        for link in tree:
            use.setdefault((net.kind, link), []).append(name)
    check_static(report, problem.routing, decision.routes, use)
    return report
