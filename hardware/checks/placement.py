"""Independent checker for placement on a grid of typed sites (never imports the formulation).

Rules (stable names for mutation tests):

``placed``      every item has exactly one site (missing items are reported)
``unknown``     the decision names an item or a site the problem does not have
``type``        the item's type is accepted by its site
``fixed``       a fixed item sits on its fixed site
``capacity``    per site and resource, Σ demand ≤ capacity
"""

from __future__ import annotations

from solvermap.formulations.problems.placement import Placement, PlacementProblem
from solvermap.results import CheckReport


def check(problem: PlacementProblem, decision: Placement) -> CheckReport:
    report = CheckReport()
    sites = {s.name: s for s in problem.sites}
    items = {it.name: it for it in problem.items}
    for name in decision.assignment:
        if name not in items:
            report.add("unknown", f"decision places unknown item {name!r}")
    used: dict[str, dict[str, float]] = {s: {} for s in sites}
    for it in problem.items:
        site_name = decision.assignment.get(it.name)
        if site_name is None:
            report.add("placed", f"item {it.name!r} has no site")
            continue
        site = sites.get(site_name)
        if site is None:
            report.add("unknown", f"item {it.name!r} is on unknown site {site_name!r}")
            continue
        accepted = (it.type in site.types) if site.types else it.type == ""
        if not accepted:
            report.add("type", f"item {it.name!r} of type {it.type!r} on site {site_name!r} accepting {list(site.types) or ['']}")
        if it.name in problem.fixed and problem.fixed[it.name] != site_name:
            report.add("fixed", f"item {it.name!r} is fixed to {problem.fixed[it.name]!r} but sits on {site_name!r}")
        for r, amount in it.demand.items():
            used[site_name][r] = used[site_name].get(r, 0.0) + amount
    for site_name, demand in used.items():
        for r, amount in demand.items():
            cap = sites[site_name].capacity.get(r, 0.0)
            if amount > cap + 1e-9:
                report.add("capacity", f"site {site_name!r} holds {amount:g} {r}, capacity {cap:g}")
    return report
