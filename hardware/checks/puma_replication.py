"""Independent checker of replication degrees. Rules: ``layer`` (every layer has a degree, no unknown
layer), ``degree`` (an integer in 1..max_degree), ``budget`` (Σ degree × crossbars ≤ budget)."""

from __future__ import annotations

from solvermap.formulations.problems.replication import Replication, ReplicationProblem
from solvermap.results import CheckReport


def check(problem: ReplicationProblem, decision: Replication) -> CheckReport:
    report = CheckReport()
    for name in decision.degrees:
        if name not in problem.layers:
            report.add("layer", f"degree given for unknown layer {name!r}")
    used = 0
    for layer in problem.layers:
        if layer not in decision.degrees:
            report.add("layer", f"layer {layer!r} has no replication degree")
            continue
        r = decision.degrees[layer]
        if int(r) != r or not 1 <= r <= problem.max_degree:
            report.add("degree", f"layer {layer!r} has degree {r}; allowed 1..{problem.max_degree}")
        used += problem.crossbars[layer] * r
    if used > problem.budget:
        report.add("budget", f"replicas use {used} MVMUs; budget {problem.budget}")
    return report
