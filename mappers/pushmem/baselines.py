"""The seed's baselines, run beside every solver through ``run_decision``.

* :func:`sequential_schedule` — "a naïve strategy that executes each kernel sequentially and does not
  pipeline any of the loops" (001:L372, Table VI): statement s runs alone, one operation every L_s
  cycles (no loop pipelining), after the previous statement's last result.
* :func:`all_memory` / :func:`sr_chain` — shift-register baselines: no SRs (banking only, 001:L258) and
  the greedy distance-sorted chain of Fig. 8a.
* banking baselines (cyclic, "embarrassing" replication) live in :mod:`.banking_adapter`.
"""

from __future__ import annotations

from solvermap.formulations.problems.scheduling import Schedule, ScheduleProblem
from solvermap.formulations.problems.shift_registers import ROOT, Edge, ShiftRegisterPlan, ShiftRegisterProblem
from solvermap.mappers.pushmem.dependences import dense_rates


def sequential_schedule(problem: ScheduleProblem, pipelined: bool = False) -> Schedule:
    """Each statement to completion before the next; II = L_s (or 1 with ``pipelined``)."""
    program = problem.program
    rates, delays, start = {}, {}, 0
    for stmt in program.statements:
        ii = 1 if pipelined else problem.latency[stmt.name]
        rates[stmt.name] = dense_rates(stmt, ii)
        delays[stmt.name] = start
        start += ii * (stmt.points - 1) + problem.latency[stmt.name]
    return Schedule(rates, delays, start, None, source="sequential" + ("-pipelined" if pipelined else ""))


# ------------------------------------------------------------------ shift registers


def _taps(buffer):
    return sorted(((p.distance, i, p.name) for i, p in enumerate(buffer.ports) if p.distance is not None))


def all_memory(problem: ShiftRegisterProblem) -> ShiftRegisterPlan:
    """No shift registers where a memory can serve: every tap is a delay-line read of the root memory
    (the banking-only implementation of 001:L258); taps too close for the SRAM path get an SR/wire."""
    edges = {}
    for b in problem.buffers:
        chosen = {p.name: Edge(ROOT, "random", 0) for p in b.ports if p.distance is None}
        for d, _, name in _taps(b):
            if d == 0:
                chosen[name] = Edge(ROOT, "wire", 0)
            elif d >= b.min_memory_delay:
                chosen[name] = Edge(ROOT, "mem", d)
            elif d <= problem.max_shift_register:
                chosen[name] = Edge(ROOT, "sr", d)
            else:
                return None
        edges[b.buffer] = chosen
    return ShiftRegisterPlan(edges, source="all-memory")


def sr_chain(problem: ShiftRegisterProblem) -> ShiftRegisterPlan:
    """Greedy chain (Fig. 8a style): taps sorted by distance, each fed from the previous tap by a wire or an
    SR when the gap fits, else by a memory delay line from the previous tap."""
    edges = {}
    for b in problem.buffers:
        chosen = {p.name: Edge(ROOT, "random", 0) for p in b.ports if p.distance is None}
        prev, prev_d = ROOT, 0
        for d, _, name in _taps(b):
            gap = d - prev_d
            if gap == 0:
                chosen[name] = Edge(prev, "wire", 0)
            elif gap <= problem.max_shift_register:
                chosen[name] = Edge(prev, "sr", gap)
            elif gap >= b.min_memory_delay:
                chosen[name] = Edge(prev, "mem", gap)
            else:
                return None
            prev, prev_d = name, d
        edges[b.buffer] = chosen
    return ShiftRegisterPlan(edges, source="sr-chain")
