"""Knob mapping: FP32 / FP16 / PROMISE P1..P7 per op under per-op error budgets (seed 000 L1102–1123).

The seed maps each op to "the least accurate hardware setting that meets the L1e and L2e constraints" (L1123),
assuming FP16 is always cheaper than FP32 (L1260). This MILP minimises the real energy (or time) instead. It
includes the conversions between precisions (L1183) and the PROMISE rules, so it does not repeat the FC2
anomaly of L1258–1260 (FP16 on a tiny layer costs more than FP32 because of the cast).

Sets      O ops, L layers, G GPU fusion groups (from the fusion step), H knobs = {FP32, FP16, P1..P7},
          C = {fp32, fp16, int8} format classes, E edges (including input → first op and last op → output)
Params    feasible(o,h): h allowed, possible on o, L1e(o,h) ≤ b1_o and L2e(o,h) ≤ b2_o;
          g(o,h) GPU cost; P(ℓ,k) PROMISE task cost of layer ℓ at swing k; λ launch; T_e[c,c'] transfer
Vars      x[o,h] ∈ {0,1} only for feasible (o,h); y[ℓ,k] ∈ {0,1} layer ℓ is one PROMISE task at swing k;
          r[e,c,c'] ≥ 0 edge e connects classes c → c'
Minimise  Σ_{o,h∈GPU} g(o,h) x[o,h] + Σ_{ℓ,k} P(ℓ,k) y[ℓ,k] + λ Σ_{g∈G} (1 − Σ_k y[ℓ(g),k])
          + Σ_e Σ_{c,c'} T_e[c,c'] r[e,c,c']
s.t.      assignment     Σ_h x[o,h] = 1                                       one knob per op
          task           x[o,Pk] = y[ℓ(o),k]  ∀ o ∈ ℓ                        one swing per fused layer (L1136)
          dot length     y[ℓ,k] = 0 when ℓ does not match f(X·W+B) with N ≥ 64  (L1133, L1248; no variable)
          group          x[o,h] = x[lead(g),h]  ∀ o ∈ g, h ∈ {FP32, FP16}     one precision per fused kernel
          conversion     r[e,c,c'] ≥ Σ_{h∈c} x[u,h] + Σ_{h∈c'} x[v,h] − 1      (edges between units only;
                         costs ≥ 0, so r is exact at the optimum)
          failed         Σ_o Σ_{h ≤ f(o)} x[o,h] ≤ |O| − 1 for each mapping f that failed the pipeline's end-to-end
                         Monte Carlo test (order P1 < … < P7 < FP16 < FP32): some op must be strictly more
                         accurate, on the assumption that less accuracy on every op never passes where f failed
          loss budget    Σ_{o,h} loss(o,h) x[o,h] ≤ τ                          (joint budget variant only)
          excluded       Σ_o Σ_{h ∈ S_o} x[o,h] ≤ |O| − 1 for each excluded combination S (joint variant only)
Edges inside a PROMISE task or a GPU group have no r variable: the task and group constraints fix both ends to
the same knob, and the transfer becomes a variable assignment (L470).

Joint budget variant (``problem.loss_budget`` set; used by the budget step's hardware-aware cost function
"energy", seed eq. 5.3 with the real cost instead of the C1..C3 proxies). It is the MILP over the discrete error
levels of ``accuracy_budget`` with the knob choice inside it: op o at level k may take knob h when h's measured
errors fit level k's budgets, i.e. k ≥ need(o,h). Because the modelled loss s[o,k] is non-decreasing in k and the
energy depends on the knob only, some optimum puts every op at k = need(o,h), so the level variables z[o,k] are
eliminated exactly: loss(o,h) = s[o, need(o,h)], and the level configuration is read off the chosen knobs. The
budget search's no-good cuts on level configurations become ``excluded`` combinations (S_o = the knobs whose
need(o,·) lies in the cut's level set for o).
"""

from __future__ import annotations

from solvermap.formulations.decision import one_shot, rescaled
from solvermap.formulations.problems.knob_mapping import (
    INPUT,
    OUTPUT,
    PROMISE_KNOBS,
    KnobDecision,
    KnobProblem,
    at_most_as_accurate,
)
from solvermap.formulations.solver import ModelBuilder, SolverConfig, linear_sum

NAME = "knobs"
KIND = "milp"
GPU_KNOBS = ("FP16", "FP32")
CLASSES = {"fp32": ("FP32",), "fp16": ("FP16",), "int8": PROMISE_KNOBS}


def diagnose(problem: KnobProblem) -> str | None:
    for o in problem.ops:
        if not any(problem.feasible(o, h) for h in problem.allowed):
            return (f"op {o!r} meets its budgets (L1 {problem.l1_budget[o]:.4f}, L2 {problem.l2_budget[o]:.4f}) "
                    f"with none of the allowed knobs {', '.join(problem.allowed)}")
    return None


def build(problem: KnobProblem, config: SolverConfig, hint: KnobDecision | None = None) -> ModelBuilder:
    m = ModelBuilder(name="knobs")
    x = {(o, h): m.binary(f"x[{o},{h}]") for o in problem.ops for h in problem.allowed if problem.feasible(o, h)}
    y = {}
    for layer in problem.layers:
        if not problem.promise_eligible.get(layer, False):
            continue
        ops = problem.layer_ops(layer)
        for h in PROMISE_KNOBS:
            if all((o, h) in x for o in ops):
                y[layer, h] = m.binary(f"y[{layer},{h}]")
    # assignment
    for o in problem.ops:
        m.add(linear_sum(x[o, h] for h in problem.allowed if (o, h) in x) == 1, group="assignment", name=o)
    # task: one swing per PROMISE layer, PROMISE only as a whole layer
    for o in problem.ops:
        for h in PROMISE_KNOBS:
            if (o, h) in x:
                var = y.get((problem.layer_of[o], h))
                m.add(x[o, h] == (var if var is not None else 0), group="task", name=f"{o},{h}")
    # group: one precision per fused GPU kernel
    for g in problem.gpu_groups:
        lead = g[0]
        for o in g[1:]:
            for h in GPU_KNOBS:
                a, b = x.get((o, h)), x.get((lead, h))
                if a is None and b is None:
                    continue
                m.add((a if a is not None else 0) - (b if b is not None else 0) == 0, group="group", name=f"{o},{h}")
    # failed-monte-carlo: at least one op strictly more accurate than in each failed mapping
    for i, f in enumerate(problem.failed):
        m.add(linear_sum(var for (o, h), var in x.items() if at_most_as_accurate(h, f[o])) <= len(problem.ops) - 1,
              group="failed-monte-carlo", name=str(i))
    # loss-budget (joint budget variant): the profiled end-to-end loss model
    if problem.loss_budget is not None and problem.loss is not None:
        m.add(linear_sum(problem.loss[o][h] * var for (o, h), var in x.items()) <= problem.loss_budget,
              group="loss-budget")
    # excluded combinations (joint budget variant): not every op may take a knob from its set
    for i, combo in enumerate(problem.excluded):
        m.add(linear_sum(var for (o, h), var in x.items() if h in combo[o]) <= len(problem.ops) - 1,
              group="excluded", name=str(i))
    # conversion on edges between execution units
    group = problem.group_of()

    def cls(node: str, c: str):
        if node in (INPUT, OUTPUT):
            return 1.0 if c == "host" else 0.0
        return linear_sum(x[node, h] for h in CLASSES[c] if (node, h) in x)

    terms = []
    for u, v in problem.edges:
        costs = problem.transfer[(u, v)]
        same_layer = u not in (INPUT, OUTPUT) and v not in (INPUT, OUTPUT) and problem.layer_of[u] == problem.layer_of[v]
        same_group = same_layer and group.get(u) == group.get(v)
        for (cu, cv), cost in costs.items():
            if same_layer and cu == "int8" and cv == "int8":
                continue  # inside one PROMISE task
            if same_group and cu == cv and cu != "int8":
                continue  # inside one GPU kernel
            r = m.continuous(0.0, 1.0, f"r[{u},{v},{cu},{cv}]")
            m.add(r >= cls(u, cu) + cls(v, cv) - 1, group="conversion", name=f"{u},{v},{cu},{cv}")
            terms.append(cost * r)
    for (o, h), var in x.items():
        if h in GPU_KNOBS:
            terms.append(problem.gpu_cost[o][h] * var)
    for (layer, h), var in y.items():
        terms.append(problem.promise_cost[layer][int(h[1:])] * var)
    for g in problem.gpu_groups:
        layer = problem.layer_of[g[0]]
        promise = [var for (l2, _), var in y.items() if l2 == layer]
        terms.append(problem.launch * (1 - linear_sum(promise)) if promise else problem.launch)
    m.minimize(linear_sum(terms) * (1.0 / scale_of(problem)))
    if hint is not None:
        for (o, h), var in x.items():
            m.hint(var, 1.0 if hint.knobs.get(o) == h else 0.0)
        for (layer, h), var in y.items():
            m.hint(var, 1.0 if all(hint.knobs.get(o) == h for o in problem.layer_ops(layer)) else 0.0)
    m.vars = x  # type: ignore[attr-defined]
    return m


def scale_of(problem: KnobProblem) -> float:
    """Costs are ~1e-6..1e-2 (J or s): the model minimises cost / this scale (solver tolerances are absolute)."""
    values = [v for row in problem.gpu_cost.values() for v in row.values()]
    values += [v for row in problem.promise_cost.values() for v in row.values()]
    return max(values + [problem.launch]) or 1.0


def decode(problem: KnobProblem, built: ModelBuilder, solution) -> KnobDecision:
    x = built.vars  # type: ignore[attr-defined]
    return KnobDecision({o: h for (o, h), var in x.items() if solution.is_one(var)})


def solve(problem: KnobProblem, config: SolverConfig, hint: KnobDecision | None = None):
    solved = one_shot(build, decode, problem, config, hint)
    rescaled(solved.result, scale_of(problem))
    return solved
