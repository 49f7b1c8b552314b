"""Independent checker of accuracy budgets (seed 000 L1066–1100).

Rules (stable names):
  coverage      every approximable op has a level; no unknown op
  level-range   every level is an integer in 1..L (L1066)
  budget-values the L1/L2 budgets are the relative errors of the op's level (eq. 5.1–5.2, L1068)
  monte-carlo   the decision and every shipped configuration report pass rate ≥ 95 % over ≥ mc_runs runs, and a
                fresh Monte Carlo run with another seed confirms the decision (L1082)
"""

from __future__ import annotations

from solvermap.formulations.problems.accuracy_budget import BudgetDecision, BudgetProblem
from solvermap.results import CheckReport

RECHECK_SEED = 104729


def check(problem: BudgetProblem, decision: BudgetDecision, *, recheck: bool = True) -> CheckReport:
    report = CheckReport()
    top = len(problem.sigma)
    for op in problem.ops:
        if op not in decision.levels:
            report.add("coverage", f"op {op!r} has no error level")
    for op, level in decision.levels.items():
        if op not in problem.ops:
            report.add("coverage", f"unknown op {op!r}")
        if not isinstance(level, int) or not 1 <= level <= top:
            report.add("level-range", f"op {op!r} has level {level!r}, outside 1..{top}")
    if not report.ok:
        return report
    for op in problem.ops:
        level = decision.levels[op]
        if abs(decision.l1_budget.get(op, -1.0) - problem.l1[level - 1]) > 1e-12:
            report.add("budget-values", f"op {op!r}: L1 budget {decision.l1_budget.get(op)} != {problem.l1[level - 1]} of level {level}")
        if abs(decision.l2_budget.get(op, -1.0) - problem.sigma[level - 1]) > 1e-12:
            report.add("budget-values", f"op {op!r}: L2 budget {decision.l2_budget.get(op)} != {problem.sigma[level - 1]} of level {level}")
    if problem.verify is None:
        return report
    needed = problem.mc_runs
    if decision.pass_rate < problem.pass_rate or decision.runs < needed:
        report.add("monte-carlo", f"reported pass rate {decision.pass_rate:.2f} over {decision.runs} runs "
                                  f"(need ≥ {problem.pass_rate:.2f} over ≥ {needed})")
    for i, c in enumerate(decision.configurations):
        if c.pass_rate < problem.pass_rate or c.runs < needed:
            report.add("monte-carlo", f"shipped configuration {i} reports pass rate {c.pass_rate:.2f} over {c.runs} runs")
    if recheck and report.ok:
        mc = problem.verify(dict(decision.levels), RECHECK_SEED)
        if mc["pass_rate"] < problem.pass_rate:
            report.add("monte-carlo", f"re-run with seed {RECHECK_SEED}: pass rate {mc['pass_rate']:.2f} < {problem.pass_rate:.2f}")
    return report
