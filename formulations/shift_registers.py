"""Shift-register introduction as a min-cost arborescence ILP (seed 001 D6, 001:L256).

Sets      per buffer: taps K (output ports with constant distance D_k), sources J = {root} ∪ K;
          candidate edges (j, k, kind) with D_j ≤ D_k (ties broken by port order, so no cycles):
          wire if δ = D_k − D_j = 0; sr if 0 < δ ≤ θ (max_shift_register); mem if δ ≥ δ_min (SRAM path)
Params    c_reg register stage area, c_port memory read-port (TB) area, c_mem memory (tile) area,
          c_word SRAM area per word,
          words(δ) = most input values in any δ-cycle window, R root words for random ports
Vars      x[j,k,kind] ∈ {0,1} edge chosen;  u_j ∈ {0,1} a memory is fed from source j;
          W_j ≥ 0 words of that memory
Minimise  c_reg · Σ δ·x[·,·,sr] + c_port · Σ x[·,·,mem] + Σ_j (c_mem · u_j + c_word · W_j)
          (+ c_port per random port, a constant)
s.t.      one-parent    Σ_{j,kind} x[j,k,kind] = 1                 ∀ tap k
          memory-used   u_j ≥ x[j,k,mem]                           ∀ mem edges
          memory-words  W_j ≥ words(δ_jk) · x[j,k,mem]             ∀ mem edges
          random-ports  u_root = 1, W_root ≥ R                     when the buffer has random ports

Every edge goes from a smaller to a larger (distance, index) pair, so any choice is an arborescence
rooted at the input port (the seed's "exhaustive shift register analysis", 001:L256). For the seed's
example (distances 0, 1, 64, 65) the optimum is in→o0 wire, o0→o1 SR(1), in→o2 memory(64),
o2→o3 SR(1): two shift registers and one 64-cycle memory.
"""

from __future__ import annotations

from solvermap.formulations.decision import one_shot
from solvermap.formulations.problems.shift_registers import ROOT, Edge, ShiftRegisterPlan, ShiftRegisterProblem
from solvermap.formulations.solver import ModelBuilder, linear_sum

NAME = "shift_registers"
KIND = "milp"


def candidate_edges(problem: ShiftRegisterProblem, buffer) -> list[tuple[str, str, str, int]]:
    taps = [(i, p) for i, p in enumerate(buffer.ports) if p.distance is not None]
    out = []
    for i, k in taps:
        sources = [(-1, ROOT, 0)] + [(j, p.name, p.distance) for j, p in taps if (p.distance, j) < (k.distance, i)]
        for _, src, dist in sources:
            delta = k.distance - dist
            if delta < 0:
                continue
            if delta == 0:
                out.append((src, k.name, "wire", 0))
                continue
            if delta <= problem.max_shift_register:
                out.append((src, k.name, "sr", delta))
            if delta >= buffer.min_memory_delay:
                out.append((src, k.name, "mem", delta))
    return out


def build(problem: ShiftRegisterProblem, config, hint=None):
    m = ModelBuilder(name="shift_registers")
    handles = {}
    objective = []
    for b in problem.buffers:
        edges = candidate_edges(problem, b)
        x = {e: m.binary(f"x[{b.buffer}:{e[0] or 'in'}->{e[1]}:{e[2]}]") for e in edges}
        sources = {e[0] for e in edges if e[2] == "mem"} | ({ROOT} if b.random_words or any(p.distance is None for p in b.ports) else set())
        u = {j: m.binary(f"u[{b.buffer}:{j or 'in'}]") for j in sources}
        W = {j: m.continuous(0.0, float(max(1, len(b.write_times))), f"W[{b.buffer}:{j or 'in'}]") for j in sources}
        for p in b.ports:
            if p.distance is None:
                continue
            m.add(linear_sum(v for e, v in x.items() if e[1] == p.name) == 1, group="one-parent", name=f"{b.buffer}:{p.name}")
        for e, v in x.items():
            if e[2] == "mem":
                m.add(u[e[0]] >= v, group="memory-used")
                m.add(W[e[0]] >= b.words(e[3]) * v, group="memory-words")
        if any(p.distance is None for p in b.ports):
            m.add(u[ROOT] >= 1, group="random-ports")
            m.add(W[ROOT] >= b.random_words, group="random-ports")
        objective += [problem.register_area * e[3] * v for e, v in x.items() if e[2] == "sr"]
        objective += [problem.port_area * v for e, v in x.items() if e[2] == "mem"]
        objective += [problem.port_area * sum(1 for p in b.ports if p.distance is None)]
        objective += [problem.memory_area * v for v in u.values()] + [problem.word_area * v for v in W.values()]
        handles[b.buffer] = x
        if hint is not None:
            chosen = hint.edges.get(b.buffer, {})
            for e, v in x.items():
                h = chosen.get(e[1])
                m.hint(v, 1.0 if h is not None and (h.source, h.kind, h.delay) == (e[0], e[2], e[3]) else 0.0)
    m.minimize(linear_sum(objective) if objective else 0)
    m.handles = handles  # type: ignore[attr-defined]
    return m


def decode(problem: ShiftRegisterProblem, built, solution) -> ShiftRegisterPlan:
    edges = {}
    for b in problem.buffers:
        chosen = {p.name: Edge(ROOT, "random", 0) for p in b.ports if p.distance is None}
        for (src, dst, kind, delta), v in built.handles[b.buffer].items():
            if solution.is_one(v):
                chosen[dst] = Edge(src, kind, delta)
        edges[b.buffer] = chosen
    return ShiftRegisterPlan(edges, source="solver")


def solve(problem: ShiftRegisterProblem, config, hint=None):
    return one_shot(build, decode, problem, config, hint)
