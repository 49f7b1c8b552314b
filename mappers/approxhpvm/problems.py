"""Lowering an ApproxHPVM workload and the promise-soc target to the four decision problems.

Each builder reads the trained network (IR), the target spec and the cost models in ``hardware/approxhpvm``,
and fills the numeric tables of a problem in ``formulations/problems``. The formulations see only those
tables; they never see the network or a simulator.
"""

from __future__ import annotations


import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from solvermap.formulations import knob_mapping
from solvermap.formulations.problems.accuracy_budget import BudgetProblem, HardwareCost
from solvermap.formulations.solver import SolverConfig, SolveResult, Status
from solvermap.formulations.problems.fusion import GPU, PROMISE, FusionEdge, FusionOp, FusionProblem
from solvermap.formulations.problems.knob_mapping import INPUT, OUTPUT, KnobProblem
from solvermap.formulations.problems.swing import LEVELS, SwingProblem, precision_bits, sakr_cost
from solvermap.hardware.approxhpvm import KNOBS
from solvermap.hardware.approxhpvm.gpu_cost import Cost, launch_cost
from solvermap.hardware.approxhpvm.promise_sim import kernel_decisions, kernel_energy
from solvermap.hardware.approxhpvm.soc_sim import (
    edge_cost,
    layer_promise_cost,
    monte_carlo,
    op_gpu_cost,
    promise_eligible,
)
from solvermap.ir.workloads.approxhpvm_tensor_ops import TensorNetwork

NOMINAL = {GPU: "FP32", PROMISE: "P7"}  # fusion decides devices at the most accurate setting of each


def _value(cost: Cost, objective: str) -> float:
    return cost.value(objective)


# ---------------------------------------------------------------------- fusion


def fusion_problem(net: TensorNetwork, spec, objective: str = "time") -> FusionProblem:
    ops = {op.name: op for op in net.ops}
    fops = tuple(FusionOp(op.name, op.layer, op.op, ()) for op in net.ops)
    edges, gpu_transfer, cross, boundary = [], {}, {}, {}
    for op in net.ops:
        for src in op.inputs:
            if src == "input":
                boundary.setdefault(op.name, {GPU: 0.0, PROMISE: 0.0})
                for dev in (GPU, PROMISE):
                    boundary[op.name][dev] += _value(edge_cost(net, spec, None, None, NOMINAL[dev], op), objective)
                continue
            edges.append(FusionEdge(src, op.name, "one_to_one"))
            if ops[src].layer == op.layer:
                gpu_transfer[(src, op.name)] = _value(edge_cost(net, spec, ops[src], "FP32", "FP32", op), objective)
            else:
                cross[(src, op.name)] = {(du, dv): _value(edge_cost(net, spec, ops[src], NOMINAL[du], NOMINAL[dv], op),
                                                            objective)
                                         for du in (GPU, PROMISE) for dv in (GPU, PROMISE)}
    last = net.ops[-1]
    boundary.setdefault(last.name, {GPU: 0.0, PROMISE: 0.0})
    for dev in (GPU, PROMISE):
        boundary[last.name][dev] += _value(edge_cost(net, spec, last, NOMINAL[dev], None), objective)
    return FusionProblem(
        ops=fops, edges=tuple(edges),
        promise_eligible={layer: promise_eligible(net, spec, layer) for layer in net.layers},
        gpu_cost={op.name: _value(op_gpu_cost(net, spec, op, "FP32"), objective) for op in net.ops},
        promise_cost={layer: _value(layer_promise_cost(net, spec, layer, 7), objective) for layer in net.layers
                      if promise_eligible(net, spec, layer)},
        launch=_value(launch_cost(spec), objective), gpu_transfer=gpu_transfer, cross=cross, boundary=boundary,
        max_group_ops=spec.gpu.max_fused_ops, unit="s" if objective == "time" else "J")


def gpu_groups_for(net: TensorNetwork, spec, groups: Sequence[Sequence[str]], device: Mapping[str, str]) -> tuple:
    """GPU kernels of every layer: the fusion groups of GPU layers; for a PROMISE layer (which the knob step may
    still move to the GPU) its chain cut into runs of at most ``max_fused_ops`` ops (legal HPVM fusions)."""
    out = []
    for layer in net.layers:
        names = [op.name for op in net.layer_ops(layer)]
        if device.get(layer) == PROMISE:
            k = spec.gpu.max_fused_ops
            out += [tuple(names[i:i + k]) for i in range(0, len(names), k)]
        else:
            out += [tuple(g) for g in groups if g and g[0] in names]
    return tuple(out)


# ---------------------------------------------------------------------- budgets


def budget_problem(net: TensorNetwork, spec, profile, *, loss_limit: float, cost_function: str = "C2", top: int = 2,
                   mc_runs: int | None = None, method: str = "milp", seed: int = 0, verify=None,
                   hardware: HardwareCost | None = None, explore: int = 6) -> BudgetProblem:
    return BudgetProblem(
        ops=profile.ops, n_c={op.name: max(op.n_c, 1.0) for op in net.ops}, loss=profile.loss,
        sensitivity=profile.sensitivity, sigma=profile.sigma, l1=profile.l1, loss_limit=loss_limit,
        cost_function=cost_function, top=top, mc_runs=mc_runs or spec.mc_runs, pass_rate=spec.pass_rate,
        method=method, verify=verify, seed=seed, hardware=hardware, explore=explore)


def knob_levels(profile, errors) -> dict[str, dict[str, int]]:
    """need(op, knob): the tightest error level whose L1/L2 budgets admit the knob's measured errors (knobs no
    level admits are left out)."""
    out: dict[str, dict[str, int]] = {}
    for op in profile.ops:
        row = {}
        for knob, (e1, e2) in errors[op].items():
            k = next((k for k in range(1, len(profile.sigma) + 1)
                      if e1 <= profile.l1[k - 1] + 1e-12 and e2 <= profile.sigma[k - 1] + 1e-12), None)
            if k is not None:
                row[knob] = k
        out[op] = row
    return out


def joint_knob_problem(net: TensorNetwork, spec, profile, *, errors, gpu_groups, target: float, failed=(),
                       shipped=(), allowed=KNOBS, objective: str = "energy", need=None) -> KnobProblem:
    """The knob formulation's joint budget variant for the level search: per-op budgets at the loosest level,
    loss[op][h] = profiled loss at need(op, h), Σ loss ≤ ``target``, and the level no-good cuts as knob sets
    (failed F: the knobs with need ≥ F[op]; shipped S: the knobs with need = S[op])."""
    need = need if need is not None else knob_levels(profile, errors)
    top = len(profile.sigma)
    base = knob_problem(net, spec, errors=errors, l1_budget={o: profile.l1[top - 1] for o in profile.ops},
                        l2_budget={o: profile.sigma[top - 1] for o in profile.ops}, gpu_groups=gpu_groups,
                        allowed=allowed, objective=objective)
    excluded = tuple({o: frozenset(h for h, k in need[o].items() if k >= f[o]) for o in profile.ops} for f in failed)
    excluded += tuple({o: frozenset(h for h, k in need[o].items() if k == s_[o]) for o in profile.ops}
                      for s_ in shipped)
    return replace(base, loss={o: {h: profile.loss[o][k - 1] for h, k in need[o].items()} for o in profile.ops},
                   loss_budget=float(target), excluded=excluded)


def hardware_cost(net: TensorNetwork, spec, profile, *, errors, gpu_groups, allowed=KNOBS, objective: str = "energy",
                  config: SolverConfig | None = None) -> HardwareCost:
    """The budget step's cost function "energy": the knob MILP (energy or time) inside the level search.

    ``propose`` solves :func:`joint_knob_problem`; the proposed levels are need(op, h) of the chosen knobs.
    ``cost(levels)`` is the knob MILP under the levels' budgets (cached; solved with ``config``)."""
    need = knob_levels(profile, errors)
    cache: dict = {}

    def propose(target, failed, shipped, config):
        problem = joint_knob_problem(net, spec, profile, errors=errors, gpu_groups=gpu_groups, target=target,
                                     failed=failed, shipped=shipped, allowed=allowed, objective=objective, need=need)
        if knob_mapping.diagnose(problem):
            return SolveResult(Status.INFEASIBLE, backend=config.milp_backend(), message="no knob fits"), None
        solved = knob_mapping.solve(problem, config)
        if solved.decision is None:
            return solved.result, None
        return solved.result, {o: need[o][solved.decision.knobs[o]] for o in profile.ops}

    def cost(levels) -> float:
        key = tuple(sorted(levels.items()))
        if key not in cache:
            problem = knob_problem(net, spec, errors=errors,
                                   l1_budget={o: profile.l1[levels[o] - 1] for o in profile.ops},
                                   l2_budget={o: profile.sigma[levels[o] - 1] for o in profile.ops},
                                   gpu_groups=gpu_groups, allowed=allowed, objective=objective)
            if knob_mapping.diagnose(problem):
                cache[key] = math.inf
            else:
                solved = knob_mapping.solve(problem, config or SolverConfig(time_limit_s=10.0))
                cache[key] = solved.result.objective if solved.decision is not None else math.inf
        return cache[key]

    return HardwareCost(propose=propose, cost=cost, unit="J" if objective == "energy" else "s")


# ---------------------------------------------------------------------- knobs


def knob_problem(net: TensorNetwork, spec, *, errors, l1_budget, l2_budget, gpu_groups, allowed=KNOBS,
                 objective: str = "energy", failed=()) -> KnobProblem:
    ops = {op.name: op for op in net.ops}
    classes = {"fp32": "FP32", "fp16": "FP16", "int8": "P7", "host": None}
    edges, transfer = [], {}

    def table(src, dst):
        out = {}
        for cu, ku in classes.items():
            if (src is None) != (cu == "host"):
                continue
            for cv, kv in classes.items():
                if (dst is None) != (cv == "host"):
                    continue
                out[(cu, cv)] = _value(edge_cost(net, spec, src, ku, kv, dst), objective)
        return out

    for op in net.ops:
        for src in op.inputs:
            if src == "input":
                edges.append((INPUT, op.name))
                transfer[(INPUT, op.name)] = table(None, op)
            else:
                edges.append((src, op.name))
                transfer[(src, op.name)] = table(ops[src], op)
    edges.append((net.output_op, OUTPUT))
    transfer[(net.output_op, OUTPUT)] = table(ops[net.output_op], None)
    eligible = {layer: promise_eligible(net, spec, layer) for layer in net.layers}
    return KnobProblem(
        ops=tuple(ops), layer_of={o.name: o.layer for o in net.ops}, layers=net.layers, allowed=tuple(allowed),
        errors=errors, l1_budget=dict(l1_budget), l2_budget=dict(l2_budget), promise_eligible=eligible,
        gpu_groups=tuple(gpu_groups),
        gpu_cost={o.name: {k: _value(op_gpu_cost(net, spec, o, k), objective) for k in ("FP32", "FP16")} for o in net.ops},
        launch=_value(launch_cost(spec), objective),
        promise_cost={layer: {lv: _value(layer_promise_cost(net, spec, layer, lv), objective) for lv in LEVELS}
                      for layer in net.layers if eligible[layer]},
        edges=tuple(edges), transfer=transfer, objective_name=objective, failed=tuple(dict(f) for f in failed))


# ---------------------------------------------------------------------- swing


def network_tasks(net: TensorNetwork, spec) -> list[str]:
    return [layer for layer in net.layers if promise_eligible(net, spec, layer)]


def _task_knobs(net: TensorNetwork, levels: Mapping[str, int]) -> dict[str, str]:
    return {op.name: f"P{levels[op.layer]}" if op.layer in levels else "FP32" for op in net.ops}


def network_task_energy(net: TensorNetwork, spec, layer: str, level: int) -> float:
    """Compute-only energy per decision (one image) of a layer task at a swing (Ch. 4 eq. 4.4)."""
    main = net.layer_ops(layer)[0]
    outputs = main.out_elements
    return kernel_energy(spec, kind="dot", dot_length=main.dot_length, rows=outputs, level=level).energy_j


def swing_problem_network(net: TensorNetwork, spec, *, p_m: float, source: str = "measured", runs: int = 5,
                          seed: int = 0, e_stats=None) -> SwingProblem:
    tasks = tuple(network_tasks(net, spec))
    energy = {t: {s: network_task_energy(net, spec, t, s) for s in LEVELS} for t in tasks}
    dot = {t: net.layer_ops(t)[0].dot_length for t in tasks}
    f = tuple(spec.promise.swing_f)
    if source == "sakr":
        from solvermap.mappers.approxhpvm.sakr import gradient_statistics

        e_a, e_w = e_stats if e_stats is not None else gradient_statistics(net)
        q = {t: {s: sakr_cost(e_a[t], precision_bits(dot[t], f[s - 1])) for s in LEVELS} for t in tasks}
        budget = p_m - 4.0 ** (1 - spec.promise.weight_bits) * e_w
        return SwingProblem(tasks, energy, q, budget, "sakr", p_m, dot, f, {t: e_a[t] for t in tasks}, e_w,
                            spec.promise.weight_bits)

    def loss(levels: Mapping[str, int]) -> float:
        mc = monte_carlo(net, spec, _task_knobs(net, levels), runs=runs, loss_limit=1.0, seed=seed)
        return float(np.mean(mc.losses))

    q = {t: {s: max(0.0, loss({t: s})) for s in LEVELS} for t in tasks}
    return SwingProblem(tasks, energy, q, p_m, "measured", p_m, dot, f, verify=loss)


def swing_problem_kernel(kernel, spec, *, p_m: float, runs: int = 3, seed: int = 0) -> SwingProblem:
    """Single-task kernels (and linreg's 4 tasks): q(t,s) measured by the functional model (L809)."""
    p = spec.promise
    tasks = tuple(t.name for t in kernel.tasks)
    energy = {t.name: {s: kernel_energy(spec, kind=t.kind, dot_length=t.dot_length, rows=t.rows, level=s).energy_j
                       for s in LEVELS} for t in kernel.tasks}

    def mismatch(levels: Mapping[str, int]) -> float:
        values = []
        for r in range(runs):
            rng = np.random.default_rng([seed, r, 31])
            if kernel.kind == "linreg":
                values.append(_linreg_mismatch(kernel, spec, levels, rng))
            else:
                level = levels[tasks[0]]
                values.append(kernel.mismatch(kernel_decisions(kernel, p.f(level), rng, data_bits=p.data_bits,
                                                              weight_bits=p.weight_bits)))
        return float(np.mean(values))

    if len(tasks) == 1:
        q = {tasks[0]: {s: max(0.0, mismatch({tasks[0]: s})) for s in LEVELS}}
    else:
        q = {t: {s: max(0.0, mismatch({**{u: 7 for u in tasks}, t: s}) - mismatch({u: 7 for u in tasks}))
                 for s in LEVELS} for t in tasks}
    return SwingProblem(tasks, energy, q, p_m, "measured", p_m, {t.name: t.dot_length for t in kernel.tasks},
                        tuple(p.swing_f), verify=mismatch)


def _linreg_mismatch(kernel, spec, levels: Mapping[str, int], rng) -> float:
    from solvermap.hardware.approxhpvm.promise_sim import noisy_dot

    p = spec.promise
    x, y = kernel.x[:, 0], kernel.y
    n = len(x)

    def agg(a, b, task):
        f = p.f(levels[task])
        return float(noisy_dot(a[None, :], b[:, None], f, rng, data_bits=p.data_bits, weight_bits=p.weight_bits)[0, 0])

    ones = np.ones(n)
    mx, my = agg(x, ones, "mean_x") / n, agg(y, ones, "mean_y") / n
    dx, dy = x - mx, y - my
    slope = agg(dx, dy, "sign_mult") / agg(dx, dx, "square")
    exact = kernel.exact()[0]
    return abs(slope - exact) / abs(exact)


def max_swing_energy(problem: SwingProblem) -> float:
    return sum(problem.energy[t][7] for t in problem.tasks)
