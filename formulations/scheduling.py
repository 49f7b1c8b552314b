"""Cycle-accurate affine schedules and coarse-grained pipelines (seed 001 D3/D4, 001:L222-L232).

Sets      S stages (statements / loop bodies); P precedences; E stage ends; B buffer terms;
          C ⊆ dimensions marked coarse (their rate is the shared initiation interval II)
Params    rates q_s (fixed by rate matching or dense per-stage rates, 001:L232), latencies L_s,
          precedence constants c_p and II-coefficients a_p (from exact dependence offsets b:
          c = max_b(q_p·b) + L_p, 001:L232 "dependence distances as small and uniform as possible"),
          buffer weights ρ_T (values the producer writes per cycle)
Vars      d_s ∈ Z≥0 stage delays;  T ∈ Z≥0 completion;  W_T ≥ 0 buffer-size proxy per tensor;
          II ∈ Z≥1 for a coarse pipeline (fixed per probe of the binary search)
Minimise  lexicographically (1) II (DNN pipelines: binary search, 001:L226), (2) T (completion),
          (3) Σ_T ρ_T · W_T (buffer words; Table VII)
s.t.      dependence     d_after − d_before ≥ c_p + a_p·II          for every dependence offset class
          buffer-slots   d_producer − d_consumer ≥ c − slots·II      (double buffering, 001:L224)
          completion     T ≥ d_s + c_e + a_e·II                      for every stage end
          buffer         W_T ≥ d_c − d_p + c_b + a_b·II              for every producer/consumer read
          (stage 3 only) completion-cap  T ≤ T*

With the rates and II fixed the constraint matrix is a difference-constraint (SDC) system, totally
unimodular, so the LP relaxation is integral (digest D4); we still declare the delays integer so any
MILP backend returns integers. The binary search on II relies on feasibility being monotone in II:
every II-term appears with a non-positive coefficient on the right-hand side of a ≤-type slot
constraint or not at all. ``solve`` returns the combined statistics of every probe and stage.
"""

from __future__ import annotations

from typing import Any

from solvermap.formulations.decision import Solved, combine
from solvermap.formulations.problems.scheduling import (
    Schedule,
    ScheduleProblem,
    buffer_cost,
    completion_of,
    resolve_rates,
)
from solvermap.formulations.solver import ModelBuilder, SolveResult, SolverConfig, Status, explain_infeasible, linear_sum, solve_milp

NAME = "schedule"
KIND = "milp"


def build(problem: ScheduleProblem, ii: int | None, *, stage: str = "completion", t_cap: int | None = None,
          hint: Schedule | None = None) -> tuple[ModelBuilder, dict[str, Any]]:
    """The delay model with II fixed; ``stage`` is 'completion' (min T) or 'buffers' (min Σρ·W, T ≤ t_cap)."""
    m = ModelBuilder(name=f"schedule-{stage}")
    iiv = int(ii or 0)
    d = {s: m.integer(0, problem.horizon, f"d[{s}]") for s in problem.stages}
    T = m.integer(0, problem.horizon * 2, "T")
    _dependences(problem, m, d, iiv)
    _completion(problem, m, d, T, iiv)
    if stage == "buffers":
        words = _buffers(problem, m, d, iiv)
        m.add(T <= int(t_cap), group="completion-cap")
        weight = {b.tensor: b.weight for b in problem.buffers}
        m.minimize(linear_sum(weight[t] * w for t, w in words.items()) if words else T)
    else:
        m.minimize(T)
    if hint is not None and hint.ii == ii and dict(hint.rates) == resolve_rates(problem, ii):
        for s, var in d.items():
            m.hint(var, hint.delays[s])
    return m, {"d": d, "T": T}


def _dependences(problem: ScheduleProblem, m: ModelBuilder, d: dict, ii: int) -> None:
    for p in problem.precedences:
        m.add(d[p.after] - d[p.before] >= p.const + p.ii_coef * ii, group=p.kind, name=p.label or f"{p.before}->{p.after}")


def _completion(problem: ScheduleProblem, m: ModelBuilder, d: dict, T: Any, ii: int) -> None:
    for e in problem.ends:
        m.add(T >= d[e.stage] + e.const + e.ii_coef * ii, group="completion", name=e.stage)


def _buffers(problem: ScheduleProblem, m: ModelBuilder, d: dict, ii: int) -> dict[str, Any]:
    words = {}
    for b in problem.buffers:
        if b.tensor not in words:
            words[b.tensor] = m.continuous(0.0, float(problem.horizon * 4), f"W[{b.tensor}]")
        m.add(words[b.tensor] >= d[b.consumer] - d[b.producer] + b.const + b.ii_coef * ii, group="buffer",
              name=f"{b.tensor}:{b.consumer}")
    return words


def _decode(problem: ScheduleProblem, solution: Any, handles: dict, ii: int | None) -> Schedule:
    delays = {s: solution.rounded(v) for s, v in handles["d"].items()}
    return Schedule(resolve_rates(problem, ii), delays, completion_of(problem, delays, ii), ii, source="solver",
                    slots=problem.slots)


def _solve_fixed(problem: ScheduleProblem, ii: int | None, config: SolverConfig, hint: Schedule | None,
                 results: list[SolveResult]) -> tuple[Schedule | None, SolveResult, list[str]]:
    """Lexicographic (T, then buffers) with II fixed."""
    m, h = build(problem, ii, hint=hint)
    sol = solve_milp(m, config)
    results.append(sol.result)
    if not sol.result.status.has_solution:
        expl = explain_infeasible(m, config) if sol.result.status == Status.INFEASIBLE else []
        return None, sol.result, expl
    first = _decode(problem, sol, h, ii)
    if not problem.buffers:
        return first, sol.result, []
    m2, h2 = build(problem, ii, stage="buffers", t_cap=first.completion, hint=first)
    sol2 = solve_milp(m2, config)
    results.append(sol2.result)
    if not sol2.result.status.has_solution:
        return first, sol.result, []
    second = _decode(problem, sol2, h2, ii)
    if second.completion > first.completion or buffer_cost(problem, second.delays, ii) > buffer_cost(problem, first.delays, ii):
        return first, sol.result, []
    # the record reports the primary objective (completion) with the first stage's bound
    final = SolveResult(sol2.result.status if sol.result.status == Status.OPTIMAL else sol.result.status,
                        float(second.completion), sol.result.bound, None, 0.0, 0.0, sol.result.backend,
                        sol.result.solver_version, sol.result.limit_reached or sol2.result.limit_reached, "",
                        work=sol.result.work + sol2.result.work,
                        backstop_fired=sol.result.backstop_fired or sol2.result.backstop_fired)
    return second, final, []


def solve(problem: ScheduleProblem, config: SolverConfig, hint: Schedule | None = None) -> Solved[Schedule]:
    results: list[SolveResult] = []
    if not problem.coarse:
        schedule, final, expl = _solve_fixed(problem, None, config, hint, results)
        return Solved(combine(results, final), schedule, expl, {"probes": [], "lexicographic": ["completion", "buffers"]})
    lo, hi = problem.ii_bounds
    probes: list[dict[str, Any]] = []

    def feasible(ii: int) -> Schedule | None:
        m, h = build(problem, ii)
        sol = solve_milp(m, config)
        results.append(sol.result)
        probes.append({"ii": ii, "status": str(sol.result.status)})
        return _decode(problem, sol, h, ii) if sol.result.status.has_solution else None

    if feasible(hi) is None:
        m, _ = build(problem, hi)
        return Solved(combine(results), None, explain_infeasible(m, config), {"probes": probes})
    if feasible(lo) is not None:  # the largest stage already runs at 100% utilisation
        hi = lo
    while lo < hi:  # smallest feasible II (001:L226: binary search downward)
        mid = (lo + hi) // 2
        if feasible(mid) is not None:
            hi = mid
        else:
            lo = mid + 1
    schedule, final, expl = _solve_fixed(problem, hi, config, hint, results)
    return Solved(combine(results, final), schedule, expl,
                  {"probes": probes, "ii": hi, "lexicographic": ["ii", "completion", "buffers"]})
