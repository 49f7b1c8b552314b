"""Node fusion jointly with the device choice (seed 000 L464–472 HPVM fusion, L1131–1136 PROMISE patterns).

The seed fuses nodes by hand (L466) and fuses a PROMISE layer only after mapping (L1136). Here one MILP
chooses the device of every layer and the fusion groups together. It runs on cpsat, highs and scip.

Sets      L layers (HPVM internal nodes, the parents of the leaves); O_ℓ ops of layer ℓ in topological order;
          slots g ∈ O_ℓ: a group is named after its first op (representative formulation, x[o,g] only for g ≤ o);
          E_in edges inside a layer, E_x edges between layers, B boundary (network input/output) edges
Params    C^G_o GPU cost of op o; C^P_ℓ cost of layer ℓ as one PROMISE task; λ launch cost per GPU kernel;
          T_e GPU→GPU transfer of an unfused edge; X_e[d,d'] cross-layer transfer by device pair; B_o[d];
          K max ops per GPU kernel (register/scratchpad cap, L466); elig_ℓ (pattern + dot length ≥ 64)
Vars      p_ℓ ∈ {0,1} layer ℓ on PROMISE; x[o,g] ∈ {0,1} op o in group g; s_e ∈ [0,1] edge e internalized;
          c[e,g] ∈ [0,1] both ends of e in g; a_g ≥ 0 GPU launch of g; t_e ≥ 0 unfused GPU transfer;
          q[e,d,d'] ≥ 0 device pair of a cross-layer edge
Minimise  Σ_ℓ (C^P_ℓ p_ℓ + Σ_{o∈ℓ} C^G_o (1 − p_ℓ)) + λ Σ_g a_g + Σ_{e∈E_in} T_e t_e
          + Σ_{e∈E_x} Σ_{d,d'} X_e[d,d'] q[e,d,d'] + Σ_{o∈B} (B_o[gpu] (1 − p_ℓ(o)) + B_o[promise] p_ℓ(o))
s.t.      assignment    Σ_{g ≤ o} x[o,g] = 1                       each op in one group of its own parent (L468 (2))
          leader        x[o,g] ≤ x[g,g]                            a group exists only with its first op
          dimensions    x[o,g] + x[m,g] ≤ 1 when o and m differ in replication grid (L468 (2))
          one-to-one    x[o,g] + x[m,g] ≤ 1 for an all-to-all edge o→m (L468 (3))
          convexity     x[o,g] + x[m,g] − x[k,g] ≤ 1 for every path o → k → m (no path leaves and re-enters,
                        so the fused node has no cycle; L468 (3), L470)
          internalized  s_e ≤ Σ_g c[e,g],  c[e,g] ≤ x[u,g],  c[e,g] ≤ x[v,g]
          launch        a_g ≥ x[g,g] − p_ℓ                           a GPU group is one kernel
          transfer      t_e ≥ 1 − s_e − p_ℓ                          GPU edge not fused goes through DRAM
          pattern       p_ℓ ≤ x[o, first(ℓ)] ∀ o ∈ ℓ                a PROMISE layer is one task (L1136)
          eligibility   p_ℓ = 0 unless elig_ℓ                        (L1133, L1248)
          capacity      Σ_o x[o,g] ≤ K + |O_ℓ| p_ℓ                   GPU kernels hold at most K ops (L466)
          device pair   q[e,P,P] ≥ p_u + p_v − 1, q[e,P,G] ≥ p_u − p_v, q[e,G,P] ≥ p_v − p_u,
                        q[e,G,G] ≥ 1 − p_u − p_v                    (exact at the optimum: costs are ≥ 0)
"""

from __future__ import annotations

from solvermap.formulations.decision import one_shot, rescaled
from solvermap.formulations.problems.fusion import GPU, PROMISE, FusionDecision, FusionProblem
from solvermap.formulations.solver import ModelBuilder, SolverConfig, linear_sum

NAME = "fuse"
KIND = "milp"


def _paths(problem: FusionProblem, parent: str) -> list[tuple[str, str, str]]:
    """Triples (o, k, m) of one layer with a path o → k → m (for convexity)."""
    names = [op.name for op in problem.members(parent)]
    succ: dict[str, set[str]] = {n: set() for n in names}
    for e in problem.edges:
        if e.src in succ and e.dst in succ:
            succ[e.src].add(e.dst)
    reach: dict[str, set[str]] = {}
    for n in reversed(names):
        reach[n] = set(succ[n])
        for m in succ[n]:
            reach[n] |= reach[m]
    return [(o, k, m) for o in names for k in reach[o] for m in reach[k]]


def build(problem: FusionProblem, config: SolverConfig, hint: FusionDecision | None = None) -> ModelBuilder:
    m = ModelBuilder(name="fuse")
    parent_of = {op.name: op.parent for op in problem.ops}
    slots = {layer: [op.name for op in problem.members(layer)] for layer in problem.parents}
    p = {layer: m.binary(f"p[{layer}]") for layer in problem.parents}
    x = {}
    for layer, names in slots.items():
        for i, o in enumerate(names):
            for g in names[: i + 1]:
                x[o, g] = m.binary(f"x[{o},{g}]")

    def xs(o: str, g: str):
        return x.get((o, g))

    # assignment and leader
    for layer, names in slots.items():
        for i, o in enumerate(names):
            m.add(linear_sum(x[o, g] for g in names[: i + 1]) == 1, group="assignment", name=o)
            for g in names[:i]:
                m.add(x[o, g] <= x[g, g], group="leader", name=f"{o},{g}")
    # dimensions: different replication grids never share a group
    for layer, names in slots.items():
        reps = {o: problem.op(o).replication for o in names}
        for i, o in enumerate(names):
            for mm in names[i + 1:]:
                if reps[o] != reps[mm]:
                    for g in names[: i + 1]:
                        m.add(x[o, g] + x[mm, g] <= 1, group="dimensions", name=f"{o},{mm},{g}")
    # one-to-one edges only inside a group
    for e in problem.edges:
        if parent_of[e.src] == parent_of[e.dst] and e.pattern != "one_to_one":
            for g in slots[parent_of[e.src]]:
                if xs(e.src, g) is not None and xs(e.dst, g) is not None:
                    m.add(x[e.src, g] + x[e.dst, g] <= 1, group="one-to-one", name=f"{e.src},{e.dst},{g}")
    # convexity
    for layer in problem.parents:
        for o, k, mm in _paths(problem, layer):
            for g in slots[layer]:
                if xs(o, g) is not None and xs(mm, g) is not None:
                    kg = xs(k, g)
                    m.add(x[o, g] + x[mm, g] - (kg if kg is not None else 0) <= 1, group="convexity",
                          name=f"{o},{k},{mm},{g}")
    # pattern, eligibility, capacity, launches
    launch_vars = []
    for layer, names in slots.items():
        if not problem.promise_eligible.get(layer, False):
            m.add(p[layer] <= 0, group="eligibility", name=layer)
        for o in names:
            m.add(p[layer] <= x[o, names[0]], group="pattern", name=o)
        for g in names:
            members = [x[o, g] for o in names if (o, g) in x]
            m.add(linear_sum(members) <= problem.max_group_ops + len(names) * p[layer], group="capacity", name=g)
            a = m.continuous(0.0, 1.0, f"a[{g}]")
            m.add(a >= x[g, g] - p[layer], group="launch", name=g)
            launch_vars.append(a)
    # edges
    terms = []
    for e in problem.edges:
        lu, lv = parent_of[e.src], parent_of[e.dst]
        if lu == lv:
            s = m.continuous(0.0, 1.0, f"s[{e.src},{e.dst}]")
            both = []
            for g in slots[lu]:
                if (e.src, g) in x and (e.dst, g) in x:
                    c = m.continuous(0.0, 1.0, f"c[{e.src},{e.dst},{g}]")
                    m.add(c <= x[e.src, g], group="internalized", name=f"{e.src},{e.dst},{g}:u")
                    m.add(c <= x[e.dst, g], group="internalized", name=f"{e.src},{e.dst},{g}:v")
                    both.append(c)
            m.add(s <= linear_sum(both), group="internalized", name=f"{e.src},{e.dst}")
            t = m.continuous(0.0, 1.0, f"t[{e.src},{e.dst}]")
            m.add(t >= 1 - s - p[lu], group="transfer", name=f"{e.src},{e.dst}")
            terms.append(problem.gpu_transfer[(e.src, e.dst)] * t)
        else:
            costs = problem.cross[(e.src, e.dst)]
            pu, pv = p[lu], p[lv]
            lower = {(PROMISE, PROMISE): pu + pv - 1, (PROMISE, GPU): pu - pv, (GPU, PROMISE): pv - pu,
                     (GPU, GPU): 1 - pu - pv}
            for pair, bound in lower.items():
                q = m.continuous(0.0, 1.0, f"q[{e.src},{e.dst},{pair[0]},{pair[1]}]")
                m.add(q >= bound, group="device-pair", name=f"{e.src},{e.dst},{pair}")
                terms.append(costs[pair] * q)
    for name, costs in problem.boundary.items():
        pl = p[parent_of[name]]
        terms.append(costs[GPU] * (1 - pl) + costs[PROMISE] * pl)
    for layer, names in slots.items():
        gpu_total = sum(problem.gpu_cost[o] for o in names)
        terms.append(problem.promise_cost.get(layer, 0.0) * p[layer] + gpu_total * (1 - p[layer]))
    terms += [problem.launch * a for a in launch_vars]
    m.minimize(linear_sum(terms) * (1.0 / scale_of(problem)))
    if hint is not None:
        _hint(m, problem, hint, p, x)
    m.vars = (p, x)  # type: ignore[attr-defined]
    return m


def scale_of(problem: FusionProblem) -> float:
    """Costs are ~1e-6..1e-3 s: the model minimises cost / this scale (solver tolerances are absolute)."""
    values = list(problem.gpu_cost.values()) + list(problem.promise_cost.values()) + [problem.launch]
    return max(values) or 1.0


def _hint(m: ModelBuilder, problem: FusionProblem, hint: FusionDecision, p, x) -> None:
    for layer, var in p.items():
        m.hint(var, 1.0 if hint.device.get(layer) == PROMISE else 0.0)
    for group in hint.groups:
        lead = group[0]
        for o in group:
            if (o, lead) in x:
                m.hint(x[o, lead], 1.0)


def decode(problem: FusionProblem, built: ModelBuilder, solution) -> FusionDecision:
    p, x = built.vars  # type: ignore[attr-defined]
    device = {layer: PROMISE if solution.is_one(var) else GPU for layer, var in p.items()}
    groups: dict[str, list[str]] = {}
    for (o, g), var in x.items():
        if solution.is_one(var):
            groups.setdefault(g, []).append(o)
    order = {op.name: i for i, op in enumerate(problem.ops)}
    ordered = sorted((tuple(sorted(v, key=order.get)) for v in groups.values()), key=lambda t: order[t[0]])
    return FusionDecision(device, tuple(ordered))


def solve(problem: FusionProblem, config: SolverConfig, hint: FusionDecision | None = None):
    solved = one_shot(build, decode, problem, config, hint)
    rescaled(solved.result, scale_of(problem))
    return solved
