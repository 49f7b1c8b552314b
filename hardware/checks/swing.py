"""Independent checker of a swing selection (seed 000 eq. 4.2, L788–807).

Rules (stable names):
  one-swing         every task has exactly one swing; no unknown task
  swing-range       swings are levels 1..7 (P1..P7)
  precision-budget  the accuracy cost of the chosen swings fits the budget. In ``sakr`` mode the checker derives
                    it afresh from eq. 4.2 and Sakr's bound (b, q and the budget from N, f, E_A, E_W, p_m, B_W).
                    In ``measured`` mode it uses the measured per-task mismatches.
  measured-mismatch a joint functional check that was run does not exceed p_m
"""

from __future__ import annotations

import math

from solvermap.formulations.problems.swing import SwingDecision, SwingProblem
from solvermap.results import CheckReport


def _bits(n: int, f: float) -> int:
    # largest integer B with 2.6 f / sqrt(N) < 2^-(B+1)
    b = -64
    while 2.6 * f / math.sqrt(n) < 2.0 ** (-(b + 2)):
        b += 1
    return b


def check(problem: SwingProblem, decision: SwingDecision) -> CheckReport:
    report = CheckReport()
    for t in problem.tasks:
        if t not in decision.levels:
            report.add("one-swing", f"task {t!r} has no swing")
    for t, s in decision.levels.items():
        if t not in problem.tasks:
            report.add("one-swing", f"unknown task {t!r}")
        if not isinstance(s, int) or not 1 <= s <= 7:
            report.add("swing-range", f"task {t!r} has swing {s!r}, outside P1..P7")
    if not report.ok:
        return report
    if problem.source == "sakr":
        total = sum(problem.e_a[t] * 4.0 ** (1 - _bits(problem.dot_length[t], problem.f[decision.levels[t] - 1]))
                    for t in problem.tasks)
        budget = problem.p_m - 4.0 ** (1 - problem.weight_bits) * problem.e_w
    else:
        total = sum(problem.q[t][decision.levels[t]] for t in problem.tasks)
        budget = problem.p_m
    if total > budget * (1 + 1e-9) + 1e-15:
        report.add("precision-budget", f"accuracy bound {total:.5g} exceeds budget {budget:.5g}")
    if decision.measured_mismatch is not None and decision.measured_mismatch > problem.p_m + 1e-12:
        report.add("measured-mismatch", f"measured mismatch {decision.measured_mismatch:.4f} > p_m {problem.p_m}")
    return report
