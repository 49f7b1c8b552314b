"""Replication degrees per layer under a crossbar budget (seed 003 L152–L160; digest §4.2 suggestion).

Sets      L layers; K_l = {1, …, k_max(l)} candidate degrees, k_max(l) = min(max_degree,
          ⌊(B − Σ_{m≠l} c_m) / c_l⌋)
Params    t_l work per inference of one replica (MVM steps), c_l MVMUs per replica, B budget
Vars      y[l,k] ∈ {0,1} layer l gets k replicas;  T ≥ 0 initiation interval
Phase 1   minimise T
Phase 2   minimise Σ_l Σ_k k·c_l·y[l,k]  subject to T ≤ T*  (fewest crossbars at the best interval)
s.t.      degree     Σ_k y[l,k] = 1                              ∀ l
          interval   T ≥ Σ_k (t_l / k) · y[l,k]                  ∀ l   (linear: the degree is a choice)
          budget     Σ_l Σ_k k·c_l·y[l,k] ≤ B

One MILP (``ModelBuilder``) on every backend, solved twice (lexicographic). Whole-model replication
(L158) is outside the model: copies = ⌊free tiles / tiles per copy⌋, reported by the PUMA validation.
Note: for this pure min-max objective the greedy "replicate the bottleneck" heuristic (ISAAC) reaches
the optimal interval too; the model adds the crossbar-minimal degrees at that interval and a bound.
"""

from __future__ import annotations

from typing import Any

from solvermap.formulations.decision import Solved, combine
from solvermap.formulations.problems.replication import Replication, ReplicationProblem, interval
from solvermap.formulations.solver import ModelBuilder, SolverConfig, Status, explain_infeasible, linear_sum, solve_milp

NAME = "replication"
KIND = "milp"


def degrees(problem: ReplicationProblem) -> dict[str, list[int]]:
    base = sum(problem.crossbars[l] for l in problem.layers)
    out = {}
    for l in problem.layers:
        spare = problem.budget - (base - problem.crossbars[l])
        out[l] = list(range(1, max(1, min(problem.max_degree, spare // max(1, problem.crossbars[l]))) + 1))
    return out


def build(problem: ReplicationProblem, config: SolverConfig, hint: Replication | None = None, cap: float | None = None):
    m = ModelBuilder(name=problem.name)
    ks = degrees(problem)
    y = {(l, k): m.binary(f"y[{l},{k}]") for l in problem.layers for k in ks[l]}
    t = m.continuous(0.0, name="T")
    for l in problem.layers:
        m.add(linear_sum(y[l, k] for k in ks[l]) == 1, group="degree", name=l)
        m.add(t >= linear_sum((problem.work[l] / k) * y[l, k] for k in ks[l]), group="interval", name=l)
    used = linear_sum(k * problem.crossbars[l] * y[l, k] for l in problem.layers for k in ks[l])
    m.add(used <= problem.budget, group="budget")
    if cap is None:
        m.minimize(t)
    else:
        m.add(t <= cap, group="interval-cap")
        m.minimize(used)
    if hint is not None and all(hint.degrees.get(l) in ks[l] for l in problem.layers):
        for (l, k), var in y.items():
            m.hint(var, 1.0 if hint.degrees[l] == k else 0.0)
        m.hint(t, interval(problem, hint))
    return m, y


def _decode(problem: ReplicationProblem, y: dict, solution: Any) -> Replication:
    return Replication({l: k for (l, k), var in y.items() if solution.is_one(var)})


def diagnose(problem: ReplicationProblem) -> str | None:
    need = sum(problem.crossbars[l] for l in problem.layers)
    if need > problem.budget:
        return f"one replica of every layer needs {need} MVMUs; the budget is {problem.budget} (constraint group: budget)"
    return None


def solve(problem: ReplicationProblem, config: SolverConfig, hint: Replication | None = None) -> Solved[Replication]:
    m1, y1 = build(problem, config, hint)
    first = solve_milp(m1, config)
    if not first.result.status.has_solution:
        explanation = explain_infeasible(m1, config) if first.result.status == Status.INFEASIBLE else []
        return Solved(first.result, None, explanation)
    best = _decode(problem, y1, first)
    target = interval(problem, best)
    m2, y2 = build(problem, config, best, cap=target * (1 + 1e-9) + 1e-12)
    second = solve_milp(m2, config)
    decision = _decode(problem, y2, second) if second.result.status.has_solution else best
    result = combine([first.result, second.result], first.result)
    result.objective = interval(problem, decision)
    return Solved(result, decision, [], {"phase2_crossbars": second.result.objective, "model_size": m1.size()})
