"""Swing selection for PROMISE tasks as a multiple-choice knapsack MILP (seed 000 L780–809, L862–874).

The seed takes the minimum swing per task from eq. 4.2 with one bit precision B_X derived from Sakr's bound
(L784–807). For kernels with a single task it sweeps all swing levels (L809). A network with T tasks has 7^T
combinations ("8^4 = 4096", L862). This model picks the swings of all tasks jointly.

Sets      T tasks, S = {1..7} swing levels (P1..P7)
Params    E(t,s) task energy at swing s; q(t,s) accuracy cost (Sakr term E_A,t·4^(1−b(t,s)), or the
          measured mismatch rate); budget β (p_m − 4^(1−B_W)·E_W, or p_m)
Vars      z[t,s] ∈ {0,1}
Minimise  Σ_{t,s} E(t,s) z[t,s]
s.t.      one swing     Σ_s z[t,s] = 1                  ∀ t
          precision     Σ_{t,s} q(t,s) z[t,s] ≤ β        (Sakr's p_m bound, L794; or the measured mismatches)
          failed        Σ_t Σ_{s ≤ s^f_t} z[t,s] ≤ |T| − 1 for each configuration s^f whose joint functional
                        check (``verify``) exceeded p_m. A lower swing is never more accurate (f falls with the
                        swing, L788), so every configuration at least as low on every task is cut as well.
Runs on cpsat, highs, scip and cbc. ``diagnose`` names the task that cannot meet the budget even at P7.
"""

from __future__ import annotations

from solvermap.formulations.decision import Solved, combine, rescaled
from solvermap.formulations.problems.swing import LEVELS, SwingDecision, SwingProblem, bound
from solvermap.formulations.solver import ModelBuilder, SolveResult, SolverConfig, Status, linear_sum, solve_milp

NAME = "swing"
KIND = "milp"


def diagnose(problem: SwingProblem) -> str | None:
    best = {t: min(problem.q[t].values()) for t in problem.tasks}
    if sum(best.values()) > problem.budget + 1e-12:
        worst = max(best, key=best.get)
        return (f"even the most accurate swings give a bound of {sum(best.values()):.4g} > budget {problem.budget:.4g} "
                f"(task {worst!r} alone contributes {best[worst]:.4g} at P7)")
    return None


def build(problem: SwingProblem, config: SolverConfig, failed=(), hint: SwingDecision | None = None) -> ModelBuilder:
    m = ModelBuilder(name="swing")
    z = {(t, s): m.binary(f"z[{t},{s}]") for t in problem.tasks for s in LEVELS}
    for t in problem.tasks:
        m.add(linear_sum(z[t, s] for s in LEVELS) == 1, group="one-swing", name=t)
    m.add(linear_sum(problem.q[t][s] * z[t, s] for t in problem.tasks for s in LEVELS) <= problem.budget,
          group="precision")
    for i, levels in enumerate(failed):
        m.add(linear_sum(z[t, s] for t in problem.tasks for s in LEVELS if s <= levels[t]) <= len(problem.tasks) - 1,
              group="failed", name=str(i))
    scale = _scale(problem)
    m.minimize(linear_sum(problem.energy[t][s] / scale * z[t, s] for t in problem.tasks for s in LEVELS))
    if hint is not None:
        for (t, s), var in z.items():
            m.hint(var, 1.0 if hint.levels.get(t) == s else 0.0)
    m.vars = z  # type: ignore[attr-defined]
    return m


def _scale(problem: SwingProblem) -> float:
    """Energies are ~1e-10 J: the model minimises energy / max energy (solver tolerances are absolute)."""
    return max(max(v.values()) for v in problem.energy.values()) or 1.0


def decode(problem: SwingProblem, built: ModelBuilder, solution) -> dict[str, int]:
    z = built.vars  # type: ignore[attr-defined]
    return {t: next(s for s in LEVELS if solution.is_one(z[t, s])) for t in problem.tasks}


def solve(problem: SwingProblem, config: SolverConfig, hint: SwingDecision | None = None) -> Solved:
    failed: list[dict[str, int]] = []
    results: list[SolveResult] = []
    details: dict = {"source": problem.source, "candidates": 0}
    for _ in range(problem.max_candidates):
        built = build(problem, config, failed, hint)
        solution = solve_milp(built, config)
        results.append(rescaled(solution.result, _scale(problem)))
        details["model_size"] = built.size()
        if not solution.result.status.has_solution:
            return Solved(combine(results), None, ["precision", "failed"] if failed else ["precision"], details)
        levels = decode(problem, built, solution)
        details["candidates"] += 1
        measured = problem.verify(levels) if problem.verify is not None else None
        if measured is None or measured <= problem.p_m + 1e-12:
            details["failed_candidates"] = len(failed)
            return Solved(combine(results), SwingDecision(levels, bound(problem, levels), measured), [], details)
        failed.append(levels)
        hint = None
    final = SolveResult(Status.TIMEOUT_NO_SOLUTION, backend=results[-1].backend,
                        message=f"{len(failed)} candidates failed the joint functional check")
    return Solved(combine(results, final), None, ["failed"], details)
