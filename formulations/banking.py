"""Banking of parallel accesses by bank functions (seed 001 D7, 001:L248, L258).

Sets      memories; per memory: offsets O (distinct access offsets over all same-cycle patterns),
          groups G ⊆ accesses (one per distinct pattern), read ports P_r, dims D, residues R = 0..N−1,
          copies 0..C−1
Params    N banks per copy, C copies (enumerated: total banks N·C = 1, 2, ... from the lower bound
          ⌈|G|/limit⌉; the first feasible pair is optimal), per-bank port limit (4, 001:L248)
Vars      α_d ∈ 0..N−1 (α_cd a unit mod N on the coprime dimension);  z_o = (α·o) mod N;
          b[o,r] ∈ {0,1} residue of offset o is r;  a[p,c] ∈ {0,1} read port p reads copy c;
          y[p,o,r,c] ≥ b[o,r] + a[p,c] − 1 (read p of offset o lands on bank (c, r))
Minimise  N · C (outer enumeration), then Σ_d α_d (deterministic tie-break)
s.t.      residue        Σ_r b[o,r] = 1,  Σ_r r·b[o,r] = z_o = Σ_d α_d o_d − N·k_o,  0 ≤ z_o ≤ N−1
          copy           Σ_c a[p,c] = 1;  a[p0,0] = 1 (symmetry);  Σ_p a[p,c] ≤ read-port limit ∀c
          port-limit     Σ_{reads (p,o) ∈ G} y[p,o,r,c] + Σ_{writes o ∈ G} b[o,r] ≤ limit   ∀ G, r, c

Backends: the native CP-SAT model (``AddModuloEquality``, boolean channelling) when the backend is
``cpsat``; the MILP above (one ModelBuilder, any MILP backend: highs, scip, cbc) otherwise. The seed's
"simplified version of an optimal banking algorithm [7]" is not described (001:L258); this model is
optimal over linear bank functions with replication.
"""

from __future__ import annotations

import math
from typing import Any

from solvermap.formulations.decision import Solved, combine
from solvermap.formulations.problems.banking import Banking, BankFunction, BankingProblem, MemoryBanking
from solvermap.formulations.solver import ModelBuilder, SolveResult, SolverConfig, Status, linear_sum, solve_cpsat, solve_milp

NAME = "bank"
KIND = "cpsat"


def _units(n: int) -> list[int]:
    return [v for v in range(n) if math.gcd(v, n) == 1] if n > 1 else [0]


def _offsets(memory: MemoryBanking) -> list[tuple[int, ...]]:
    return sorted({a.offset for g in memory.groups for a in g})


def build_cpsat(memory: MemoryBanking, n: int, c: int):
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    alpha = []
    for d in range(memory.rank):
        dom = _units(n) if d == memory.coprime_dim else list(range(n))
        alpha.append(m.NewIntVarFromDomain(cp_model.Domain.FromValues(dom), f"alpha{d}"))
    b = {}
    for o in _offsets(memory):
        hi = sum((n - 1) * v for v in o)
        e = m.NewIntVar(0, max(0, hi), f"e{o}")
        m.Add(e == sum(a * v for a, v in zip(alpha, o)))
        z = m.NewIntVar(0, n - 1, f"z{o}")
        m.AddModuloEquality(z, e, n)
        for r in range(n):
            b[o, r] = m.NewBoolVar(f"b{o},{r}")
            m.Add(z == r).OnlyEnforceIf(b[o, r])
        m.AddExactlyOne(b[o, r] for r in range(n))
    reads = memory.read_ports
    a = {(p, k): m.NewBoolVar(f"a{p},{k}") for p in reads for k in range(c)}
    for p in reads:
        m.AddExactlyOne(a[p, k] for k in range(c))
    if memory.read_port_limit and reads:
        for k in range(c):
            m.Add(sum(a[p, k] for p in reads) <= memory.read_port_limit)
    if reads:
        m.Add(a[reads[0], 0] == 1)
    y: dict = {}
    for g in memory.groups:
        for r in range(n):
            for k in range(c):
                terms = []
                for acc in g:
                    if acc.write:
                        terms.append(b[acc.offset, r])
                    elif c == 1:
                        terms.append(b[acc.offset, r])
                    else:
                        key = (acc.port, acc.offset, r, k)
                        if key not in y:
                            y[key] = m.NewBoolVar(f"y{key}")
                            m.Add(y[key] >= b[acc.offset, r] + a[acc.port, k] - 1)
                        terms.append(y[key])
                m.Add(sum(terms) <= memory.port_limit)
    m.Minimize(sum(alpha))
    return m, alpha, a


def build_milp(memory: MemoryBanking, n: int, c: int) -> tuple[ModelBuilder, Any, Any]:
    mb = ModelBuilder(name=f"bank-{memory.name}-{n}x{c}")
    alpha = []
    for d in range(memory.rank):
        if d == memory.coprime_dim and n > 1:
            units = _units(n)
            sel = [mb.binary(f"s{d},{v}") for v in units]
            mb.add(linear_sum(sel) == 1, group="coprime")
            av = mb.integer(0, n - 1, f"alpha{d}")
            mb.add(av == linear_sum(v * s for v, s in zip(units, sel)), group="coprime")
            alpha.append(av)
        else:
            alpha.append(mb.integer(0, n - 1, f"alpha{d}"))
    b = {}
    for o in _offsets(memory):
        hi = sum((n - 1) * v for v in o)
        k = mb.integer(0, max(0, hi // max(1, n)), f"k{o}")
        bits = [mb.binary(f"b{o},{r}") for r in range(n)]
        mb.add(linear_sum(bits) == 1, group="residue")
        mb.add(linear_sum(a * v for a, v in zip(alpha, o)) - n * k == linear_sum(r * bit for r, bit in enumerate(bits)),
               group="residue")
        for r in range(n):
            b[o, r] = bits[r]
    reads = memory.read_ports
    a = {(p, k): mb.binary(f"a{p},{k}") for p in reads for k in range(c)}
    for p in reads:
        mb.add(linear_sum(a[p, k] for k in range(c)) == 1, group="copy")
    if memory.read_port_limit and reads:
        for k in range(c):
            mb.add(linear_sum(a[p, k] for p in reads) <= memory.read_port_limit, group="copy")
    if reads:
        mb.add(a[reads[0], 0] >= 1, group="copy")
    y: dict = {}
    for gi, g in enumerate(memory.groups):
        for r in range(n):
            for k in range(c):
                terms = []
                for acc in g:
                    if acc.write or c == 1:
                        terms.append(b[acc.offset, r])
                    else:
                        key = (acc.port, acc.offset, r, k)
                        if key not in y:
                            y[key] = mb.continuous(0.0, 1.0, f"y{key}")
                            mb.add(y[key] >= b[acc.offset, r] + a[acc.port, k] - 1, group="port-limit")
                        terms.append(y[key])
                mb.add(linear_sum(terms) <= memory.port_limit, group="port-limit", name=f"g{gi},r{r},c{k}")
    mb.minimize(linear_sum(alpha))
    return mb, alpha, a


def _pairs(memory: MemoryBanking):
    for total in range(memory.lower_bound(), memory.max_banks + 1):
        for c in range(1, total + 1):
            if total % c == 0:
                yield total // c, c


def solve_memory(memory: MemoryBanking, config: SolverConfig) -> tuple[BankFunction | None, list[SolveResult], list[dict]]:
    results, probes = [], []
    if not memory.groups and (not memory.read_port_limit or len(memory.read_ports) <= memory.read_port_limit):
        return BankFunction(1, (0,) * memory.rank, 1, {p: 0 for p in memory.read_ports}), results, probes
    for n, c in _pairs(memory):
        if config.backend == "cpsat":
            model, alpha, a = build_cpsat(memory, n, c)
            result, solver = solve_cpsat(model, config)
            results.append(result)
            probes.append({"N": n, "C": c, "status": str(result.status)})
            if result.status.has_solution:
                al = tuple(int(solver.Value(v)) for v in alpha)
                pc = {p: next(k for k in range(c) if solver.Value(a[p, k])) for p in memory.read_ports}
                return BankFunction(n, al, c, pc), results, probes
        else:
            mb, alpha, a = build_milp(memory, n, c)
            sol = solve_milp(mb, config)
            results.append(sol.result)
            probes.append({"N": n, "C": c, "status": str(sol.result.status)})
            if sol.result.status.has_solution:
                al = tuple(sol.rounded(v) for v in alpha)
                pc = {p: next(k for k in range(c) if sol.is_one(a[p, k])) for p in memory.read_ports}
                return BankFunction(n, al, c, pc), results, probes
        if results[-1].status not in (Status.INFEASIBLE,):
            break  # a timeout: do not claim optimality beyond this point
    return None, results, probes


def solve(problem: BankingProblem, config: SolverConfig, hint: Banking | None = None) -> Solved[Banking]:
    functions, results, details = {}, [], {}
    status, proved = Status.OPTIMAL, True
    for memory in problem.memories:
        fn, res, probes = solve_memory(memory, config)
        results += res
        details[memory.name] = probes
        if fn is None:
            return Solved(combine(results) if results else SolveResult(Status.ERROR, message="no banking"), None,
                          [f"{memory.name}: no bank function with at most {memory.max_banks} banks"], {"probes": details})
        if res and res[-1].status != Status.OPTIMAL:
            status = Status.FEASIBLE
            proved = False
        functions[memory.name] = fn
    banks = float(sum(f.banks for f in functions.values()))
    bound = banks if proved else float(sum(m.lower_bound() for m in problem.memories))
    final = SolveResult(status, banks, bound, 0.0 if proved else None,
                        backend=config.backend if config.backend == "cpsat" else config.milp_backend(),
                        solver_version=results[-1].solver_version if results else "",
                        message="" if results else "no memory has parallel accesses: one bank each, no model solved")
    record = combine(results, final) if results else final
    return Solved(record, Banking(functions, source="solver"), [], {"probes": details})
