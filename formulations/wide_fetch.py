"""Wide-fetch SRAM port scheduling: one shift per AGG/TB stream (seed 001 D8, 001:L260-L272).

Sets      streams A (AGG writes and TB reads of every physical buffer), shifts S = 0..σ_max, tiles
Params    per stream a and tile: base event times E_a; occupancy cost c_a(s) (AGG/TB words at shift s,
          −1 when over capacity); per buffer (write w, read r) the slack s_wr
Vars      z[a,s] ∈ {0,1} stream a is shifted by s (σ_a = Σ s·z[a,s])
Minimise  Σ_a Σ_s c_a(s) · z[a,s]
s.t.      one-shift      Σ_s z[a,s] = 1;  z[a,s] = 0 when c_a(s) = −1 (AGG/TB capacity, 001:L160)
          single-port    z[a,s] + z[b,s'] ≤ 1 when a and b share a tile and some event of a shifted by s
                         meets an event of b shifted by s' in the same cycle (exact: every pair of shifts
                         is checked against the events, no periodicity assumption)
          write-before-read  σ_w + σ_r ≤ s_wr  (a visit's SRAM read after the word's SRAM write)

Native CP-SAT (``AddAllowedAssignments`` over shift pairs, backend ``cpsat``) or the MILP above on any
MILP backend. With fw = 4 and one value per cycle, two writes and two reads exactly saturate the port
(001:L164, Fig. 4).
"""

from __future__ import annotations

import itertools

import numpy as np

from solvermap.formulations.decision import Solved
from solvermap.formulations.problems.wide_fetch import WideFetch, WideFetchProblem, event_times, write_read_slack
from solvermap.formulations.solver import ModelBuilder, SolveResult, Status, linear_sum, solve_cpsat, solve_milp

NAME = "wide_fetch"
KIND = "cpsat"


def conflicts(problem: WideFetchProblem) -> dict[tuple[str, str], set[tuple[int, int]]]:
    """(a, b) → forbidden (σ_a, σ_b) pairs: some events meet on a shared tile."""
    out: dict[tuple[str, str], set[tuple[int, int]]] = {}
    shifts = range(problem.max_shift + 1)
    for a, b in itertools.combinations(problem.streams, 2):
        tiles = set(a.events) & set(b.events)
        bad = set()
        for tile in tiles:
            ea, eb = a.events[tile], b.events[tile]
            for sa, sb in itertools.product(shifts, shifts):
                ta = ea + sa if a.write else ea - sa
                tb = eb + sb if b.write else eb - sb
                if len(np.intersect1d(ta, tb, assume_unique=False)):
                    bad.add((sa, sb))
        if bad:
            out[(a.name, b.name)] = bad
    return out


def _allowed(stream, max_shift):
    return [s for s in range(max_shift + 1) if s < len(stream.costs) and stream.costs[s] >= 0]


def solve(problem: WideFetchProblem, config, hint: WideFetch | None = None) -> Solved[WideFetch]:
    bad = conflicts(problem)
    slack = write_read_slack(problem)
    if config.backend == "cpsat":
        return _solve_cpsat(problem, config, bad, slack, hint)
    return _solve_milp(problem, config, bad, slack, hint)


def _solve_cpsat(problem, config, bad, slack, hint):
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    z = {}
    sigma = {}
    for s in problem.streams:
        allowed = _allowed(s, problem.max_shift)
        for v in range(problem.max_shift + 1):
            z[s.name, v] = m.NewBoolVar(f"z{s.name},{v}")
            if v not in allowed:
                m.Add(z[s.name, v] == 0)
        m.AddExactlyOne(z[s.name, v] for v in range(problem.max_shift + 1))
        sigma[s.name] = sum(v * z[s.name, v] for v in range(problem.max_shift + 1))
    for (a, b), pairs in bad.items():
        for sa, sb in pairs:
            m.AddBoolOr([z[a, sa].Not(), z[b, sb].Not()])
    for (w, r), s in slack.items():
        m.Add(sigma[w] + sigma[r] <= s)
    m.Minimize(sum(max(0, s.costs[v]) * z[s.name, v] for s in problem.streams for v in range(min(len(s.costs), problem.max_shift + 1))))
    if hint is not None:
        for s in problem.streams:
            for v in range(problem.max_shift + 1):
                m.AddHint(z[s.name, v], int(hint.shifts.get(s.name, 0) == v))
    result, solver = solve_cpsat(m, config)
    decision = None
    if result.status.has_solution:
        decision = WideFetch({s.name: next(v for v in range(problem.max_shift + 1) if solver.Value(z[s.name, v]))
                              for s in problem.streams}, source="solver")
    return Solved(result, decision, ["single-port", "write-before-read", "one-shift"] if result.status == Status.INFEASIBLE else [],
                  {"conflicting_pairs": len(bad)})


def _solve_milp(problem, config, bad, slack, hint):
    mb = ModelBuilder(name="wide_fetch")
    z = {}
    for s in problem.streams:
        allowed = _allowed(s, problem.max_shift)
        for v in range(problem.max_shift + 1):
            z[s.name, v] = mb.binary(f"z[{s.name},{v}]")
            if v not in allowed:
                mb.add(z[s.name, v] <= 0, group="one-shift")
        mb.add(linear_sum(z[s.name, v] for v in range(problem.max_shift + 1)) == 1, group="one-shift", name=s.name)
    for (a, b), pairs in bad.items():
        for sa, sb in pairs:
            mb.add(z[a, sa] + z[b, sb] <= 1, group="single-port")
    for (w, r), s in slack.items():
        mb.add(linear_sum(v * (z[w, v] + z[r, v]) for v in range(problem.max_shift + 1)) <= s, group="write-before-read")
    mb.minimize(linear_sum(max(0, s.costs[v]) * z[s.name, v] for s in problem.streams
                           for v in range(min(len(s.costs), problem.max_shift + 1))))
    if hint is not None:
        for s in problem.streams:
            for v in range(problem.max_shift + 1):
                mb.hint(z[s.name, v], float(hint.shifts.get(s.name, 0) == v))
    sol = solve_milp(mb, config)
    decision = None
    if sol.result.status.has_solution:
        decision = WideFetch({s.name: next(v for v in range(problem.max_shift + 1) if sol.is_one(z[s.name, v]))
                              for s in problem.streams}, source="solver")
    from solvermap.formulations.solver import explain_infeasible

    expl = explain_infeasible(mb, config) if sol.result.status == Status.INFEASIBLE else []
    return Solved(sol.result, decision, expl, {"model_size": mb.size(), "conflicting_pairs": len(bad)})
