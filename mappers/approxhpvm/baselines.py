"""The seed's own rules, run beside every solver as baselines (seed 000).

fuse    ``seed-promise-patterns``: every layer matching f(X·W+B) with N ≥ 64 becomes one PROMISE task (L1136);
        the GPU runs one tensor op per kernel (L1187). ``gpu-unfused``: everything on the GPU, no fusion (HPVM's
        default; the seed fuses only the node pairs it is given by hand, L466).
budget  ``uniform-level``: one error level E for every op, the largest that passes the Monte Carlo test. It is
        the simplest configuration the seed's tuner can return (L1072).
knobs   ``seed-least-accurate``: for each layer, the least accurate setting in the order P1 < … < P7 < FP16 < FP32
        (L1119) that meets every op's L1e and L2e budgets (L1123). A fused GPU kernel takes its most demanding
        member's precision. This ignores conversion costs and assumes FP16 is always cheaper than FP32 (L1260).
swing   ``seed-uniform-bits`` (L784–807): the smallest uniform precision B that Sakr's bound allows, then for
        each task the minimum swing whose eq. 4.2 precision reaches B. ``brute-force``: the sweep over all 7^T
        swing combinations (L809, L871), exhaustive when 7^T ≤ 200 000.
"""

from __future__ import annotations

import itertools

from solvermap.formulations.problems.accuracy_budget import (
    BudgetConfiguration,
    BudgetProblem,
    accept_twice,
    decision_for,
    modelled_loss,
    total_cost,
)
from solvermap.formulations.problems.fusion import GPU, PROMISE, FusionDecision, FusionProblem
from solvermap.formulations.problems.knob_mapping import ALL_KNOBS, PROMISE_KNOBS, KnobDecision, KnobProblem
from solvermap.formulations.problems.swing import LEVELS, SwingDecision, SwingProblem, bound, objective as swing_objective, precision_bits


# ---------------------------------------------------------------------- fuse


def seed_promise_patterns(problem: FusionProblem) -> FusionDecision:
    device = {layer: PROMISE if problem.promise_eligible.get(layer) else GPU for layer in problem.parents}
    groups: list[tuple[str, ...]] = []
    for layer in problem.parents:
        names = tuple(op.name for op in problem.members(layer))
        groups += [names] if device[layer] == PROMISE else [(n,) for n in names]
    return FusionDecision(device, tuple(groups))


def gpu_unfused(problem: FusionProblem) -> FusionDecision:
    return FusionDecision({layer: GPU for layer in problem.parents}, tuple((op.name,) for op in problem.ops))


# ---------------------------------------------------------------------- budget


def uniform_level(problem: BudgetProblem):
    if problem.verify is None:
        return None
    for level in reversed(problem.levels):
        if sum(problem.loss[op][level - 1] for op in problem.ops) > 3 * problem.loss_limit:
            continue  # the profile already shows this level loses far more than the limit
        levels = {op: level for op in problem.ops}
        mc = accept_twice(problem, levels)  # the acceptance test the searches use
        if mc["accepted"]:
            c = BudgetConfiguration(levels, problem.cost_function, total_cost(problem, levels),
                                    modelled_loss(problem, levels), mc["pass_rate"], mc["runs"],
                                    mc.get("accuracy_mean", float("nan")), mc.get("accuracy_std", float("nan")))
            return decision_for(problem, c, evaluations=len(problem.levels) - level + 1)
    return None


# ---------------------------------------------------------------------- knobs


def seed_least_accurate(problem: KnobProblem) -> KnobDecision | None:
    knobs: dict[str, str] = {}
    for layer in problem.layers:
        ops = problem.layer_ops(layer)
        for knob in ALL_KNOBS:
            if knob in PROMISE_KNOBS and not problem.promise_eligible.get(layer, False):
                continue
            if knob in PROMISE_KNOBS:
                if all(problem.feasible(o, knob) for o in ops):
                    knobs.update({o: knob for o in ops})
                    break
            else:
                fitting = [o for o in ops if o not in knobs and problem.feasible(o, knob)]
                knobs.update({o: knob for o in fitting})
                if all(o in knobs for o in ops):
                    break
        if not all(o in knobs for o in ops):
            return None
    for group in problem.gpu_groups:
        gpu = [knobs[o] for o in group if knobs[o] not in PROMISE_KNOBS]
        if gpu:
            most = max(gpu, key=ALL_KNOBS.index)
            knobs.update({o: most for o in group if knobs[o] not in PROMISE_KNOBS})
    return KnobDecision(knobs)


# ---------------------------------------------------------------------- swing


def seed_uniform_bits(problem: SwingProblem) -> SwingDecision | None:
    if problem.source != "sakr":
        return brute_force(problem)
    e_w_term = 4.0 ** (1 - problem.weight_bits) * problem.e_w
    for bits in range(1, 17):
        if sum(problem.e_a[t] * 4.0 ** (1 - bits) for t in problem.tasks) + e_w_term <= problem.p_m:
            levels = {}
            for t in problem.tasks:
                ok = [s for s in LEVELS if precision_bits(problem.dot_length[t], problem.f[s - 1]) >= bits]
                if not ok:
                    return None
                levels[t] = min(ok)
            return SwingDecision(levels, bound(problem, levels))
    return None


def brute_force(problem: SwingProblem, limit: int = 200_000) -> SwingDecision | None:
    if 7 ** len(problem.tasks) > limit:
        return None
    best, best_levels = None, None
    for combo in itertools.product(LEVELS, repeat=len(problem.tasks)):
        levels = dict(zip(problem.tasks, combo))
        if bound(problem, levels) > problem.budget + 1e-12:
            continue
        value = swing_objective(problem, SwingDecision(levels))
        if best is None or value < best - 1e-18:
            best, best_levels = value, levels
    if best_levels is None:
        return None
    measured = problem.verify(best_levels) if problem.verify is not None else None
    return SwingDecision(best_levels, bound(problem, best_levels), measured)
